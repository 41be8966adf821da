// The Redis backend on a real Redis Cluster (cluster = true): a private three-primary cluster
// started by this file. The backend contract, then what only a cluster shows: locks spread
// over the nodes, each lock and its fence counter in one slot whatever the name, credentials
// applied to every node, and failures (a dead node, a dead cluster) that stay fast and never
// show the password. The cluster is this file's alone, so nothing is cleaned up key by key.
import { randomUUID } from "node:crypto";
import { Cluster, type Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { MutexAcquireRequest } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { KeyLayout, RedisBackend } from "../plugins/backends/redis/index.js";
import { clusterSeed } from "../plugins/backends/redis/config.js";
import { QueueKeyLayout, slotOf } from "../plugins/backends/redis/keys.js";
import { RedisConnection } from "../plugins/backends/redis/client.js";
import { WatchFlags } from "../plugins/backends/redis/watch.js";
import type { AcquireRequest, LockMode } from "../kit/backend.js";
import { backendContract } from "./support/backend-contract.js";
import { captureLogger, silent } from "./support/log.js";
import { freePort, startRedisCluster, type RedisClusterServer } from "./support/servers.js";
import type { RedisConfig } from "../plugins/backends/redis/config.js";

const COMMAND_TIMEOUT_MS = 1_000;
/** Generous: "promptly" means bounded by the command timeout, not a race against the scheduler. */
const PROMPT_MS = COMMAND_TIMEOUT_MS + 1_000;
const prefix = `lockhost-cluster:${randomUUID().slice(0, 8)}:`;
const layout = new KeyLayout(prefix);

let cluster: RedisClusterServer;
/** An ordinary ioredis Cluster client, to look at what the backend wrote. */
let admin: Cluster;
const backends: RedisBackend[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  admin = new Cluster([{ host: "127.0.0.1", port: cluster.ports[0]! }]);
  await admin.ping();
});
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  admin?.disconnect();
  await cluster?.stop();
});

const config = (over: Partial<RedisConfig> = {}): RedisConfig => ({
  url: cluster.url,
  keyPrefix: prefix,
  commandTimeoutMs: COMMAND_TIMEOUT_MS,
  reclaimOwnLocks: false,
  cluster: true,
  ...over,
});
/** A backend closed in afterAll. */
function open(over: Partial<RedisConfig> = {}, log = silent): RedisBackend {
  const backend = new RedisBackend(config(over), log);
  backends.push(backend);
  return backend;
}
let n = 0;
const name = (): string => `cluster-${++n}`;
const req = (key: string, over: Partial<MutexAcquireRequest> = {}): MutexAcquireRequest => ({
  name: key,
  owner: randomUUID(),
  ttlMs: 30_000,
  holder: { plugin: "p", node: "node-a" },
  ...over,
});

/** The primaries, as direct connections (no redirects: each answers for itself only). */
async function primaries(): Promise<Redis[]> {
  // The client learns the layout on its own schedule; asking once makes it current.
  await admin.cluster("SLOTS");
  return admin.nodes("master");
}

/** The keys under this file's prefix that the node behind `node` holds itself. */
async function keysOn(node: Redis): Promise<string[]> {
  const keys: string[] = [];
  let cursor = "0";
  do {
    const [next, batch] = await node.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    keys.push(...batch);
    cursor = next;
  } while (cursor !== "0");
  return keys;
}

/** The slot the server (not the client library) computes for `key`. */
const serverSlot = (key: string): Promise<number> => admin.cluster("KEYSLOT", key) as Promise<number>;

/** Runs `call`, expecting BACKEND_UNAVAILABLE within PROMPT_MS; returns the error. */
async function failsPromptly(call: () => Promise<unknown>): Promise<LockhostError> {
  const started = performance.now();
  const err = await call().then(
    (value) => new Error(`expected a failure, got ${JSON.stringify(value)}`),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(LockhostError);
  expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
  expect(performance.now() - started).toBeLessThan(PROMPT_MS);
  return err as LockhostError;
}

backendContract("redis cluster", { create: () => new RedisBackend(config(), silent), fences: "clock" });

describe("redis cluster backend: keys across nodes", () => {
  it("spreads the locks of many names over the nodes, each lock next to its fence counter", async () => {
    const backend = open();
    const names = Array.from({ length: 40 }, name);
    for (const k of names) expect((await backend.acquire(req(k))).acquired, k).toBe(true);

    const nodes = await primaries();
    expect(nodes.length).toBe(cluster.ports.length);
    const held = await Promise.all(nodes.map(keysOn));
    // Every lock lives on exactly one node, and its fence counter on the same one.
    for (const k of names) {
      const owners = held.filter((keys) => keys.includes(layout.lock(k)));
      expect(owners, k).toHaveLength(1);
      expect(owners[0], k).toContain(layout.fence(k));
    }
    const nodesWithLocks = held.filter((keys) => names.some((k) => keys.includes(layout.lock(k))));
    expect(nodesWithLocks.length).toBeGreaterThanOrEqual(2);
  });

  it("keeps the lock and fence of a name with braces in one slot (the server's own KEYSLOT agrees)", async () => {
    const backend = open();
    const base = name();
    for (const k of ["}", "}x{", "{", "{}", "a{b}c", `${base}{a}`, `{${base}}`, `}${base}`, "%7D", "ключ/🔒"]) {
      const a = req(k);
      const got = await backend.acquire(a);
      // A script whose keys were in two slots would have failed with CROSSSLOT.
      expect(got.acquired, k).toBe(true);
      expect(await serverSlot(layout.lock(k)), k).toBe(await serverSlot(layout.fence(k)));
      expect((await backend.status(k))?.owner, k).toBe(a.owner);
      expect(await backend.release(k, a.owner), k).toBe("released");
      const again = await backend.acquire(req(k));
      if (!got.acquired || !again.acquired) throw new Error(`not acquired: ${k}`);
      expect(again.fence, k).toBeGreaterThan(got.fence);
    }
  });

  it("under a LockService: takes, renews, reports and releases locks whichever node holds them", async () => {
    const service = new LockService(open(), { node: "node-svc" });
    try {
      const leases = [];
      for (let i = 0; i < 12; i++) {
        const k = name();
        const lease = await service.tryLock(k, { ttlMs: 5_000 });
        expect(lease, k).not.toBeNull();
        expect(await service.tryLock(k, { ttlMs: 5_000 })).toBeNull();
        leases.push(lease!);
      }
      for (const lease of leases) {
        await service.renew(lease);
        expect(await service.status({ name: lease.name }, { owners: true })).toMatchObject({
          held: true,
          holders: [{ owner: lease.owner, fence: lease.fence }],
        });
        await service.release(lease);
        expect(await service.status({ name: lease.name })).toMatchObject({ held: false, holders: [] });
      }
    } finally {
      await service.close({ closeBackend: false });
    }
  });
});

describe("redis cluster backend: batched renewals and release notifications", () => {
  it("renews a batch whose locks are spread over slots and nodes, one call per slot, results in order", async () => {
    const backend = open();
    const reqs = Array.from({ length: 60 }, () => req(name(), { ttlMs: 5_000 }));
    for (const r of reqs) expect((await backend.acquire(r)).acquired, r.name).toBe(true);
    const nodes = await primaries();
    const held = await Promise.all(nodes.map(keysOn));
    expect(held.filter((keys) => reqs.some((r) => keys.includes(layout.lock(r.name)))).length).toBeGreaterThanOrEqual(2);

    const free = name();
    const renewals = [
      ...reqs.map((r) => ({ name: r.name, owner: r.owner, ttlMs: 60_000 })),
      { name: reqs[0]!.name, owner: randomUUID(), ttlMs: 60_000 },
      { name: free, owner: randomUUID(), ttlMs: 60_000 },
    ];
    const slots = new Set(await Promise.all(renewals.map((r) => serverSlot(layout.lock(r.name)))));
    const trips = backend.renewRoundTrips;
    const results = await backend.renewMany(renewals);
    expect(backend.renewRoundTrips - trips).toBe(slots.size);
    expect(results.slice(0, reqs.length).every((r) => r.ok)).toBe(true);
    expect(results.slice(reqs.length)).toEqual([
      { ok: false, reason: "mismatch" },
      { ok: false, reason: "not_found" },
    ]);
    for (const r of reqs.slice(0, 10)) expect(await admin.pttl(layout.lock(r.name)), r.name).toBeGreaterThan(59_000);
  });

  it("calls a watcher when another client releases a lock, whichever node holds it", async () => {
    const watcher = open();
    const other = open();
    const names = Array.from({ length: 12 }, name);
    const slots = new Set(await Promise.all(names.map((k) => serverSlot(layout.lock(k)))));
    expect(slots.size).toBeGreaterThan(1);
    const heard = new Map<string, number>();
    const watches = names.map((k) => watcher.watch(k, () => heard.set(k, (heard.get(k) ?? 0) + 1)));
    await Promise.all(watches.map((w) => w.ready));
    for (const [i, k] of names.entries()) {
      const a = req(k);
      expect((await other.acquire(a)).acquired, k).toBe(true);
      expect(await other.release(k, randomUUID()), k).toBe("mismatch");
      if (i % 2 === 0) expect(await other.release(k, a.owner), k).toBe("released");
      else expect(await other.forceRelease(k), k).toBe(true);
    }
    const deadline = Date.now() + 5_000;
    while (heard.size < names.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // Exactly once each: the failed (mismatch) releases published nothing.
    for (const k of names) expect(heard.get(k), k).toBe(1);
    for (const w of watches) w.close();
  });

  it("flags watched names in their own slots, and sets them all again with one script call per slot", async () => {
    const watcher = open();
    const other = open();
    const names = Array.from({ length: 12 }, name);
    for (const k of names) expect(await serverSlot(layout.watched(k)), k).toBe(await serverSlot(layout.lock(k)));
    const watches = names.map((k) => watcher.watch(k, () => undefined));
    await Promise.all(watches.map((w) => w.ready));
    for (const k of names) expect(await admin.exists(layout.watched(k)), k).toBe(1);
    for (const w of watches) w.close();

    // The refresh (every FLAG_REFRESH_MS, and after a reconnect) of flags lost on the way (as on a
    // failover to a replica that had not caught up), through the same flag keeper on its own connection.
    const conn = new RedisConnection(config(), silent);
    const flags = new WatchFlags(conn, layout, silent);
    try {
      const holds = names.map((k) => flags.hold(k));
      await Promise.all(holds.map((h) => h.ready));
      for (const k of names) await admin.del(layout.watched(k));
      const calls = flags.setCalls;
      await flags.refresh();
      expect(flags.setCalls - calls).toBe(new Set(names.map(slotOf)).size);
      for (const k of names) expect(await admin.exists(layout.watched(k)), k).toBe(1);
      for (const h of holds) h.close();
      expect(flags.size).toBe(0);
    } finally {
      flags.close();
      await conn.close();
    }
    // A release of a flagged name publishes, whichever node holds it.
    const heard = new Map<string, number>();
    const again = names.map((k) => watcher.watch(k, () => heard.set(k, (heard.get(k) ?? 0) + 1)));
    await Promise.all(again.map((w) => w.ready));
    for (const k of names) {
      const a = req(k);
      expect((await other.acquire(a)).acquired, k).toBe(true);
      expect(await other.release(k, a.owner), k).toBe("released");
    }
    const deadline = Date.now() + 5_000;
    while (heard.size < names.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    for (const k of names) expect(heard.get(k), k).toBe(1);
    for (const w of again) w.close();
  });
});

describe("redis cluster backend: read/write locks and semaphores", () => {
  const rwLayout = new QueueKeyLayout(prefix, "rw");
  const shared = (key: string, mode: LockMode, over: Partial<AcquireRequest> = {}): AcquireRequest => ({
    name: key,
    owner: randomUUID(),
    ttlMs: 5_000,
    holder: { plugin: "p", node: "node-a" },
    mode,
    limit: 0,
    queueMs: 0,
    ...over,
  });

  it("keeps every key of a name on one node, whatever braces it has, spread over the nodes by name", async () => {
    const rw = open().steps("rw");
    const names = [...Array.from({ length: 30 }, name), "}", "}x{", "{a}", "%7D"];
    for (const k of names) {
      // A script whose keys were in two slots would fail with CROSSSLOT: queue a writer too, so all five keys exist.
      expect((await rw.acquire(shared(k, "shared"))).acquired, k).toBe(true);
      expect((await rw.acquire(shared(k, "exclusive", { queueMs: 5_000 }))).acquired, k).toBe(false);
    }
    const held = await Promise.all((await primaries()).map(keysOn));
    for (const k of names) {
      const keys = [rwLayout.holders(k), rwLayout.info(k), rwLayout.queue(k), rwLayout.places(k), rwLayout.fence(k)];
      const owners = held.filter((onNode) => keys.some((key) => onNode.includes(key)));
      expect(owners, k).toHaveLength(1);
      for (const key of keys) expect(owners[0], key).toContain(key);
    }
    expect(held.filter((onNode) => names.some((k) => onNode.includes(rwLayout.holders(k)))).length).toBeGreaterThanOrEqual(2);
  });

  it("renews shared holds spread over slots with one call per slot, and lists them from every master", async () => {
    const backend = open();
    const sem = backend.steps("semaphore");
    const base = `${name()}/`;
    const reqs = Array.from({ length: 30 }, (_, i) => shared(`${base}${i}`, "shared", { limit: 2 }));
    for (const r of reqs) expect((await sem.acquire(r)).acquired, r.name).toBe(true);
    const slots = new Set(reqs.map((r) => slotOf(r.name)));
    expect(slots.size).toBeGreaterThan(1);
    const trips = backend.renewRoundTrips;
    const results = await sem.renewMany([
      ...reqs.map((r) => ({ name: r.name, owner: r.owner, ttlMs: 60_000 })),
      { name: reqs[0]!.name, owner: "nobody", ttlMs: 1_000 },
    ]);
    expect(backend.renewRoundTrips - trips).toBe(slots.size);
    expect(results.slice(0, reqs.length).every((r) => r.ok)).toBe(true);
    expect(results[reqs.length]).toEqual({ ok: false, reason: "not_found" });

    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages < 100; pages++) {
      const page = await sem.list({ prefix: base, limit: 7, ...(cursor !== undefined && { cursor }) });
      seen.push(...page.records.map((r) => r.name));
      cursor = page.cursor;
      if (cursor === undefined) break;
    }
    expect(seen.sort()).toEqual(reqs.map((r) => r.name).sort());
  });
});

describe("redis cluster backend: configuration", () => {
  it("reads the seed node, and the credentials and TLS every node gets, from the URL", () => {
    const seed = (url: string): ReturnType<typeof clusterSeed> => clusterSeed(url, "shown");
    expect(seed("redis://cache:7000")).toEqual({ host: "cache", port: 7000, tls: false });
    expect(seed("rediss://app:p%40ss@cache.internal")).toEqual({ host: "cache.internal", port: 6379, username: "app", password: "p@ss", tls: true });
    expect(seed("redis://:pw@[::1]:7001/0")).toEqual({ host: "::1", port: 7001, password: "pw", tls: false });
    expect(seed("redis://cache:7000?username=u&password=pw")).toEqual({ host: "cache", port: 7000, username: "u", password: "pw", tls: false });
    expect(() => seed("redis://cache:7000?db=3")).toThrow(/shown cannot seed a Redis Cluster.*database 3/);
    expect(() => seed("redis://:a%zz@cache")).toThrow(/malformed %-escape/);
  });

  it("refuses a URL a cluster cannot use, without showing its password", () => {
    const port = cluster.ports[0]!;
    expect(() => new RedisBackend(config({ url: `redis://:s3cret@127.0.0.1:${port}/2` }), silent)).toThrow(/only database 0/);
    expect(() => new RedisBackend(config({ url: `redis://127.0.0.1:${port}?family=6` }), silent)).toThrow(/"family"/);
    try {
      new RedisBackend(config({ url: `redis://:s3cret@127.0.0.1:${port}/2` }), silent);
    } catch (err) {
      expect(err).toMatchObject({ code: "CONFIG_INVALID" });
      expect((err as Error).message).not.toContain("s3cret");
    }
  });

  it("applies the URL's password to every node, and never shows it when it is wrong", async () => {
    const nodes = await primaries();
    await Promise.all(nodes.map((node) => node.config("SET", "requirepass", "s3cret")));
    const opened: RedisBackend[] = [];
    try {
      const backend = new RedisBackend(config({ url: `redis://:s3cret@127.0.0.1:${cluster.ports[1]}` }), silent);
      opened.push(backend);
      const names = Array.from({ length: 20 }, name);
      for (const k of names) expect((await backend.acquire(req(k))).acquired, k).toBe(true);
      const slots = new Set(await Promise.all(names.map((k) => serverSlot(layout.lock(k)))));
      expect(slots.size).toBeGreaterThan(1);

      const capture = captureLogger();
      const wrong = new RedisBackend(config({ url: `redis://:wr0ng-s3cret@127.0.0.1:${cluster.ports[0]}` }), capture.logger);
      opened.push(wrong);
      const err = await failsPromptly(() => wrong.acquire(req(name())));
      expect(err.message).toContain("redis cluster at");
      expect(err.message).not.toContain("wr0ng");
      expect(JSON.stringify(capture.lines)).not.toContain("wr0ng");
    } finally {
      // Closed first: once the password is gone they would reconnect with one the server does not ask for.
      await Promise.all(opened.map((b) => b.close()));
      await Promise.all(nodes.map((node) => node.config("SET", "requirepass", "")));
    }
  });
});

describe("redis cluster backend: failures", () => {
  it("fails fast with BACKEND_UNAVAILABLE when no seed answers, and closes without hanging", async () => {
    const port = await freePort();
    const capture = captureLogger();
    const backend = new RedisBackend(config({ url: `redis://user:s3cret@127.0.0.1:${port}`, commandTimeoutMs: 500 }), capture.logger);
    try {
      for (let i = 0; i < 3; i++) {
        const err = await failsPromptly(() => backend.acquire(req(name())));
        expect(err.message).toContain(`127.0.0.1:${port}`);
        expect(err.message).not.toContain("s3cret");
        expect(err.cause).toBeUndefined();
        await new Promise((r) => setTimeout(r, 150));
      }
    } finally {
      const closing = performance.now();
      await backend.close();
      expect(performance.now() - closing).toBeLessThan(1_000);
    }
    const logged = JSON.stringify(capture.lines);
    expect(logged).toContain("cannot connect to redis cluster");
    expect(logged).not.toContain("s3cret");
    // Repeated reconnect errors are not logged one line per attempt.
    expect(capture.lines.filter((l) => l.level >= 40).length).toBeLessThanOrEqual(2);
  });

  it("never resends a command whose connection dropped (it may have run): the call fails, nothing is written later", async () => {
    const backend = open();
    const k = name();
    expect(await backend.status(k)).toBeNull(); // the node's connection is open
    const nodes = await primaries();
    // Writes wait on every node, so the acquire below sits in the server, not yet run...
    await Promise.all(nodes.map((node) => node.call("CLIENT", "PAUSE", "5000", "WRITE")));
    try {
      const pending = backend.acquire(req(k)).then(
        () => undefined,
        (e: unknown) => e,
      );
      await new Promise((r) => setTimeout(r, 100));
      // ...when its connection is cut: the server drops the command unrun.
      for (const node of nodes) {
        const list = String(await node.call("CLIENT", "LIST"));
        for (const id of list
          .split("\n")
          .filter((l) => / name=lockhost /.test(l))
          .map((l) => /\bid=(\d+)/.exec(l)?.[1])) {
          if (id) await node.call("CLIENT", "KILL", "ID", id);
        }
      }
      const err = await pending;
      expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", message: expect.stringMatching(/may or may not have been applied/) });
    } finally {
      await Promise.all(nodes.map((node) => node.call("CLIENT", "UNPAUSE")));
    }
    // A resent acquire would have been queued behind the pause and run now.
    await new Promise((r) => setTimeout(r, 300));
    expect(await admin.exists(layout.lock(k))).toBe(0);
    expect((await backend.acquire(req(k))).acquired).toBe(true);
  });

  // Runs last: it stops nodes of the shared cluster.
  it("when a node dies, fails the calls for its slots fast while the other nodes keep serving; then the whole cluster", async () => {
    const backend = open();
    const names = Array.from({ length: 30 }, name);
    for (const k of names) expect((await backend.acquire(req(k))).acquired, k).toBe(true);
    const nodes = await primaries();
    const victim = nodes[0]!;
    const victimKeys = new Set(await keysOn(victim));
    const onVictim = names.filter((k) => victimKeys.has(layout.lock(k)));
    const elsewhere = names.filter((k) => !victimKeys.has(layout.lock(k)));
    expect(onVictim.length).toBeGreaterThan(0);
    expect(elsewhere.length).toBeGreaterThan(0);

    await victim.call("SHUTDOWN", "NOSAVE").catch(() => undefined); // the reply is the connection closing
    for (const k of onVictim.slice(0, 3)) await failsPromptly(() => backend.status(k));
    for (const k of elsewhere.slice(0, 3)) expect(await backend.status(k), k).not.toBeNull();

    for (const node of nodes.slice(1)) await node.call("SHUTDOWN", "NOSAVE").catch(() => undefined);
    for (const k of names.slice(0, 5)) await failsPromptly(() => backend.acquire(req(k)));
    const closing = performance.now();
    await backend.close();
    expect(performance.now() - closing).toBeLessThan(PROMPT_MS);
  });
});
