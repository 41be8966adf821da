// The Redis backend against the shared Redis (REDIS_URL): the backend contract, then what is
// specific to Redis: key layout and hash tags, the server's clock, fence counters that
// outlive locks, reclaim, the script cache, and failures that never leak the password.
// Every key lives under a per-run prefix, removed in afterAll.
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { MutexAcquireRequest } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { KeyLayout, RedisBackend, hashTag } from "../plugins/backends/redis/index.js";
import { slotOf } from "../plugins/backends/redis/keys.js";
import { backendContract } from "./support/backend-contract.js";
import { captureLogger, silent } from "./support/log.js";
import { freePort, redisUrl } from "./support/servers.js";
import { watchCounting } from "./support/counter.js";
import type { RedisConfig } from "../plugins/backends/redis/config.js";
import { FLAG_TTL_MS } from "../plugins/backends/redis/watch.js";
import { V1_ACQUIRE, V1_FORCE_RELEASE, V1_RELEASE, V1_RENEW, V1_STATUS } from "./support/redis-v1-scripts.js";
import { sleep } from "./support/until.js";

/** ioredis's own slot function (what its Cluster client routes by), a dependency of ioredis without types. */
const keySlot = createRequire(import.meta.url)("cluster-key-slot") as (key: string) => number;

const url = redisUrl();
const prefix = `lockhost-test:${randomUUID().slice(0, 8)}:`;
const config = (over: Partial<RedisConfig> = {}): RedisConfig => ({
  url,
  keyPrefix: prefix,
  commandTimeoutMs: 2_000,
  reclaimOwnLocks: false,
  ...over,
});
let n = 0;
const name = (): string => `redis-${++n}`;
const req = (key: string, over: Partial<MutexAcquireRequest> = {}): MutexAcquireRequest => ({
  name: key,
  owner: randomUUID(),
  ttlMs: 10_000,
  holder: { plugin: "p", node: "node-a" },
  ...over,
});

/** The server's clock in ms, read the way the scripts read it. */
async function serverNowMs(redis: Redis): Promise<number> {
  const [s, us] = await redis.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

const backends: RedisBackend[] = [];
/** A backend closed in afterAll. */
function open(over: Partial<RedisConfig> = {}, log = silent): RedisBackend {
  const backend = new RedisBackend(config(over), log);
  backends.push(backend);
  return backend;
}

let admin: Redis;
let layout: KeyLayout;
beforeAll(() => {
  admin = new Redis(url, { maxRetriesPerRequest: 1 });
  layout = new KeyLayout(prefix);
});
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  let cursor = "0";
  do {
    const [next, keys] = await admin.scan(cursor, "MATCH", `${prefix}*`, "COUNT", 1000);
    if (keys.length > 0) await admin.del(...keys);
    cursor = next;
  } while (cursor !== "0");
  await admin.quit();
});

backendContract("redis", { create: () => new RedisBackend(config(), silent), fences: "clock" });

describe("redis backend: key layout", () => {
  const tricky = ["a", "global:orders", "}", "}x", "{", "{}", "{a}", "a}b{c", "x{y}z", "%", "%7D", "%257D", "%25", "ключ/🔒 *?[x]", "}}}", "{{{"];

  it("puts the lock and its fence counter under the prefix, with the name as hash tag", () => {
    expect(layout.lock("billing:nightly")).toBe(`${prefix}lock:{billing:nightly}`);
    expect(layout.fence("billing:nightly")).toBe(`${prefix}fence:{billing:nightly}`);
  });

  it("keeps both keys of a name in one cluster slot, whatever braces the name has", () => {
    for (const n of tricky) {
      const lock = layout.lock(n);
      const fence = layout.fence(n);
      expect(keySlot(lock), n).toBe(keySlot(fence));
      // The tag Redis hashes is exactly the (escaped) name: never empty, never cut short.
      expect(keySlot(lock), n).toBe(keySlot(hashTag(n)));
      expect(hashTag(n)).not.toBe("");
      expect(hashTag(n)).not.toContain("}");
    }
  });

  it("computes each name's cluster slot as Redis does (renewMany groups a cluster's batch by it)", () => {
    for (const n of [...tricky, "billing:nightly", "k0", "k9999"]) expect(slotOf(n), n).toBe(keySlot(layout.lock(n)));
  });

  it("puts the release channel under the prefix, with the same hash tag", () => {
    expect(layout.released("billing:nightly")).toBe(`${prefix}released:{billing:nightly}`);
    expect(layout.released("}x")).toBe(`${prefix}released:{%7Dx}`);
  });

  it("maps different names to different keys (the escaping is one-to-one)", () => {
    expect(new Set(tricky.map((n) => layout.lock(n))).size).toBe(tricky.length);
    expect(hashTag("plain:name")).toBe("plain:name");
  });

  it("refuses a key prefix with braces (it would take the hash tag)", () => {
    expect(() => new KeyLayout("a{b:")).toThrow(LockhostError);
    expect(() => new RedisBackend(config({ keyPrefix: "x}" }), silent)).toThrow(/must not contain/);
  });

  it("writes exactly the lock and fence keys, also for names with braces", async () => {
    const backend = open();
    for (const n of ["}x{", `${name()}{a}`]) {
      const a = req(n);
      expect((await backend.acquire(a)).acquired).toBe(true);
      expect(await admin.exists(layout.lock(n), layout.fence(n))).toBe(2);
      expect(await admin.hget(layout.lock(n), "owner")).toBe(a.owner);
      expect(await backend.release(n, a.owner)).toBe("released");
    }
  });

  it("namespaces by prefix: two prefixes on one server share nothing", async () => {
    const other = `${prefix}other:`;
    const a = open();
    const b = open({ keyPrefix: other });
    const k = name();
    const first = await a.acquire(req(k));
    const second = await b.acquire(req(k));
    expect(first.acquired && second.acquired).toBe(true);
    if (!first.acquired || !second.acquired) return;
    // Each prefix has its own fence counter, holding its own last fence.
    expect(await admin.exists(`${other}lock:{${k}}`, `${other}fence:{${k}}`)).toBe(2);
    expect(await admin.get(`${other}fence:{${k}}`)).toBe(String(second.fence));
    expect(await admin.get(`${prefix}fence:{${k}}`)).toBe(String(first.fence));
    expect((await a.status(k))?.owner).not.toBe((await b.status(k))?.owner);
  });
});

describe("redis backend: records and clocks", () => {
  it("stores holder metadata: owner, fence, plugin, node, this machine's hostname, instance id, times, TTL", async () => {
    const backend = open();
    const k = name();
    const a = req(k, { holder: { plugin: "billing", node: "node-7" }, ttlMs: 30_000 });
    const r = await backend.acquire(a);
    if (!r.acquired) throw new Error("not acquired");
    expect(await admin.hgetall(layout.lock(k))).toEqual({
      owner: a.owner,
      fence: String(r.fence),
      plugin: "billing",
      node: "node-7",
      hostname: hostname(),
      instance: backend.instanceId,
      acquired_at: String(r.acquiredAtMs),
      expires_at: String(r.expiresAtMs),
      ttl_ms: "30000",
    });
    const ttl = await admin.pttl(layout.lock(k));
    expect(ttl).toBeGreaterThan(29_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
    expect((await backend.status(k))?.holder).toEqual({ plugin: "billing", node: "node-7", hostname: hostname() });
  });

  it("takes acquire and renew times from the server's TIME, in whole ms, expiry exactly ttl later", async () => {
    const backend = open();
    const k = name();
    const a = req(k, { ttlMs: 7_777 });
    const before = await serverNowMs(admin);
    const r = await backend.acquire(a);
    const after = await serverNowMs(admin);
    if (!r.acquired) throw new Error("not acquired");
    expect(r.acquiredAtMs).toBeGreaterThanOrEqual(before);
    expect(r.acquiredAtMs).toBeLessThanOrEqual(after);
    expect(r.expiresAtMs - r.acquiredAtMs).toBe(7_777);
    const renewBefore = await serverNowMs(admin);
    const renewed = await backend.renew(k, a.owner, 3_333);
    const renewAfter = await serverNowMs(admin);
    if (!renewed.ok) throw new Error("not renewed");
    expect(Number.isInteger(renewed.expiresAtMs)).toBe(true);
    expect(renewed.expiresAtMs).toBeGreaterThanOrEqual(renewBefore + 3_333);
    expect(renewed.expiresAtMs).toBeLessThanOrEqual(renewAfter + 3_333);
    const s = await backend.status(k);
    expect(s?.expiresAtMs).toBe(renewed.expiresAtMs);
    expect(s?.acquiredAtMs).toBe(r.acquiredAtMs);
    expect(s!.ttlRemainingMs).toBeLessThanOrEqual(3_333);
    expect(s?.ttlMs).toBe(3_333);
    expect(await admin.hget(layout.lock(k), "ttl_ms")).toBe("3333");
  });

  it("reports a possible TTL for locks an older version wrote without ttl_ms: the PTTL, within what the record allows", async () => {
    const backend = open();
    const k = name();
    const a = req(k, { ttlMs: 20_000 });
    expect((await backend.acquire(a)).acquired).toBe(true);
    // An older version's record: no ttl_ms field.
    await admin.hdel(layout.lock(k), "ttl_ms");
    const legacy = await backend.status(k);
    expect(legacy!.ttlMs).toBeGreaterThan(0);
    expect(legacy!.ttlMs).toBeLessThanOrEqual(20_000);
    expect(legacy!.ttlMs).toBeGreaterThanOrEqual(legacy!.ttlRemainingMs);
    // An older version's renew on a record of this one leaves a ttl_ms the lease no longer has:
    // never reported above expires_at - acquired_at, nor below what is left.
    await admin.hset(layout.lock(k), "ttl_ms", "900000");
    expect((await backend.status(k))!.ttlMs).toBe(20_000);
    await admin.hset(layout.lock(k), "ttl_ms", "1");
    const low = await backend.status(k);
    expect(low!.ttlMs).toBeGreaterThanOrEqual(low!.ttlRemainingMs);
    expect(low!.ttlMs).toBeGreaterThan(1_000);
    // This version's next renew records it again.
    expect((await backend.renew(k, a.owner, 7_000)).ok).toBe(true);
    expect((await backend.status(k))!.ttlMs).toBe(7_000);
  });

  it("never deletes the fence counter: fences keep rising after expiry and force-release", async () => {
    const backend = open();
    const k = name();
    const first = await backend.acquire(req(k, { ttlMs: 50 }));
    if (!first.acquired) throw new Error("not acquired");
    await sleep(120);
    expect(await admin.exists(layout.lock(k))).toBe(0);
    expect(await admin.get(layout.fence(k))).toBe(String(first.fence));
    expect(await admin.pttl(layout.fence(k))).toBe(-1); // no TTL
    const second = await backend.acquire(req(k));
    if (!second.acquired) throw new Error("not acquired");
    expect(second.fence).toBeGreaterThan(first.fence);
    expect(await backend.forceRelease(k)).toBe(true);
    expect(await admin.get(layout.fence(k))).toBe(String(second.fence));
    const third = await backend.acquire(req(k));
    if (!third.acquired) throw new Error("not acquired");
    expect(third.fence).toBeGreaterThan(second.fence);
  });

  it("rejects a TTL Redis cannot take with INVALID_ARGUMENT, before writing anything", async () => {
    const backend = open();
    const k = name();
    await expect(backend.acquire(req(k, { ttlMs: 1.5 }))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(backend.acquire(req(k, { ttlMs: 0 }))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(backend.renew(k, "o", -1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(await admin.exists(layout.lock(k), layout.fence(k))).toBe(0);
  });

  it("leaves no lock behind when the fence counter cannot be read (another type, not a number)", async () => {
    const backend = open();
    for (const spoil of [(k: string) => admin.hset(layout.fence(k), "x", "1"), (k: string) => admin.set(layout.fence(k), "not a number")]) {
      const k = name();
      await spoil(k);
      // Alone in its tick (ACQUIRE), then with another in one batch (ACQUIRE_MANY).
      await expect(backend.acquire(req(k))).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      const [bad, good] = await Promise.all([backend.acquire(req(k)).catch((err: unknown) => err), backend.acquire(req(name()))]);
      expect(bad).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect(good.acquired).toBe(true);
      // The claim was undone: no lock without a TTL blocks the name.
      expect(await admin.exists(layout.lock(k))).toBe(0);
      await admin.del(layout.fence(k));
      expect((await backend.acquire(req(k))).acquired).toBe(true);
    }
  });

  it("waits for the first connection instead of failing a call made right after start", async () => {
    const backend = open();
    const r = await backend.acquire(req(name()));
    expect(r.acquired).toBe(true);
  });
});

describe("redis backend: reclaiming a restarted node's own locks", () => {
  it("with reclaimOwnLocks, a new process of the same node takes its stale lock at once, with a higher fence", async () => {
    const k = name();
    const holder = { plugin: "p", node: "node-r" };
    const earlier = open({ reclaimOwnLocks: true });
    const stale = req(k, { holder, ttlMs: 60_000 });
    const old = await earlier.acquire(stale);
    if (!old.acquired) throw new Error("not acquired");

    const capture = captureLogger();
    const restarted = open({ reclaimOwnLocks: true }, capture.logger);
    const fresh = req(k, { holder });
    const got = await restarted.acquire(fresh);
    if (!got.acquired) throw new Error("not reclaimed");
    expect(got.fence).toBeGreaterThan(old.fence);
    expect(await admin.hget(layout.lock(k), "instance")).toBe(restarted.instanceId);
    const line = capture.lines.find((l) => /reclaimed/.test(l.msg));
    expect(line).toMatchObject({ level: 40, redisKey: layout.lock(k), oldFence: old.fence, fence: got.fence, node: "node-r" });

    // The stale holder is fenced off: it can neither renew nor release the lock now.
    expect(await earlier.renew(k, stale.owner, 1_000)).toEqual({ ok: false, reason: "mismatch" });
    expect(await earlier.release(k, stale.owner)).toBe("mismatch");
  });

  it("reclaims neither another node's lock nor one this same process holds", async () => {
    const k = name();
    const a = open({ reclaimOwnLocks: true });
    const b = open({ reclaimOwnLocks: true });
    expect((await a.acquire(req(k, { holder: { plugin: "p", node: "node-x" } }))).acquired).toBe(true);
    const other = await b.acquire(req(k, { holder: { plugin: "p", node: "node-y" } }));
    expect(other).toEqual({ acquired: false, retryAfterMs: expect.any(Number) });
    const same = await a.acquire(req(k, { holder: { plugin: "p", node: "node-x" } }));
    expect(same).toEqual({ acquired: false, retryAfterMs: expect.any(Number) });
  });

  it("without reclaimOwnLocks (the default), the same node's stale lock is contended until its TTL", async () => {
    const k = name();
    const holder = { plugin: "p", node: "node-s" };
    expect((await open().acquire(req(k, { holder, ttlMs: 150 }))).acquired).toBe(true);
    const restarted = open();
    const contended = await restarted.acquire(req(k, { holder }));
    expect(contended).toEqual({ acquired: false, retryAfterMs: expect.any(Number) });
    if (!contended.acquired) expect(contended.retryAfterMs).toBeLessThanOrEqual(150);
    await sleep(250);
    expect((await restarted.acquire(req(k, { holder }))).acquired).toBe(true);
  });
});

describe("redis backend: failures", () => {
  it("fails fast with BACKEND_UNAVAILABLE when nothing listens, never showing the password", async () => {
    const port = await freePort();
    const capture = captureLogger();
    const backend = new RedisBackend(config({ url: `redis://:s3cret@127.0.0.1:${port}`, commandTimeoutMs: 500 }), capture.logger);
    try {
      for (let i = 0; i < 3; i++) {
        const started = performance.now();
        const err = await backend.acquire(req(name())).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(performance.now() - started).toBeLessThan(1_500);
        expect(err).toBeInstanceOf(LockhostError);
        expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
        expect((err as Error).message).toContain(`127.0.0.1:${port}`);
        expect((err as Error).message).not.toContain("s3cret");
        expect((err as Error).cause).toBeUndefined();
        await sleep(100);
      }
      await expect(backend.status("k")).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      await expect(backend.release("k", "o")).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    } finally {
      const closing = performance.now();
      await backend.close();
      expect(performance.now() - closing).toBeLessThan(1_000);
    }
    const logged = JSON.stringify(capture.lines);
    expect(logged).toContain("cannot connect to redis");
    expect(logged).not.toContain("s3cret");
    // Repeated reconnect errors are not logged one line per attempt.
    expect(capture.lines.filter((l) => l.level >= 40).length).toBeLessThanOrEqual(2);
  });

  it("rejects calls after close() with BACKEND_UNAVAILABLE", async () => {
    const backend = new RedisBackend(config(), silent);
    expect((await backend.acquire(req(name()))).acquired).toBe(true);
    await backend.close();
    await expect(backend.acquire(req(name()))).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE", message: expect.stringMatching(/closed/) });
    await backend.close(); // idempotent
  });

  it("under a LockService: locks work, and an unreachable Redis is BACKEND_UNAVAILABLE, not a crash", async () => {
    const service = new LockService(open(), { node: "node-svc" });
    const k = name();
    const lease = await service.tryLock(k, { ttlMs: 5_000 });
    expect(lease).not.toBeNull();
    expect(await service.tryLock(k, { ttlMs: 5_000 })).toBeNull();
    await service.renew(lease!);
    expect(await service.status({ name: lease!.name }, { owners: true })).toMatchObject({
      held: true,
      holders: [{ owner: lease!.owner, fence: lease!.fence }],
    });
    await service.release(lease!);
    await service.close({ closeBackend: false });

    const port = await freePort();
    const down = new LockService(new RedisBackend(config({ url: `redis://user:s3cret@127.0.0.1:${port}`, commandTimeoutMs: 300 }), silent), { node: "n" });
    const err = await down.tryLock("x", { ttlMs: 1_000 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((err as Error).message).not.toContain("s3cret");
    await expect(down.status({ name: "global:x" })).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    await down.close();
  });
});

describe("redis backend: contended acquire", () => {
  it("tells how long the holder's lease has left (retryAfterMs, the server's PTTL)", async () => {
    const backend = open();
    const k = name();
    expect((await backend.acquire(req(k, { ttlMs: 5_000 }))).acquired).toBe(true);
    await sleep(100);
    const got = await open().acquire(req(k));
    const pttl = await admin.pttl(layout.lock(k));
    if (got.acquired) throw new Error("acquired a held lock");
    expect(got.retryAfterMs).toBeDefined();
    expect(got.retryAfterMs!).toBeLessThanOrEqual(4_900);
    expect(got.retryAfterMs!).toBeGreaterThanOrEqual(pttl);
    expect(got.retryAfterMs! - pttl).toBeLessThan(1_000);
  });

  it("leaves retryAfterMs out for a lock someone stripped of its TTL", async () => {
    const backend = open();
    const k = name();
    expect((await backend.acquire(req(k))).acquired).toBe(true);
    await admin.persist(layout.lock(k));
    expect(await backend.acquire(req(k))).toEqual({ acquired: false });
    await admin.del(layout.lock(k));
  });
});

describe("redis backend: batched renewals (renewMany)", () => {
  it("renews a batch in order, each as renew would: ok, mismatch, not_found, on the server's clock", async () => {
    const backend = open();
    const [k1, k2, k3] = [name(), name(), name()];
    const a = req(k1, { ttlMs: 1_000 });
    const b = req(k2, { ttlMs: 1_000 });
    expect((await backend.acquire(a)).acquired).toBe(true);
    expect((await backend.acquire(b)).acquired).toBe(true);
    const before = await serverNowMs(admin);
    const trips = backend.renewRoundTrips;
    const results = await backend.renewMany([
      { name: k1, owner: a.owner, ttlMs: 20_000 },
      { name: k2, owner: randomUUID(), ttlMs: 20_000 },
      { name: k3, owner: randomUUID(), ttlMs: 20_000 },
      { name: k2, owner: b.owner, ttlMs: 30_000 },
    ]);
    const after = await serverNowMs(admin);
    expect(backend.renewRoundTrips - trips).toBe(1);
    expect(results.map((r) => (r.ok ? "ok" : r.reason))).toEqual(["ok", "mismatch", "not_found", "ok"]);
    const [r1, , , r4] = results;
    if (!r1!.ok || !r4!.ok) throw new Error("not renewed");
    expect(r1!.expiresAtMs).toBeGreaterThanOrEqual(before + 20_000);
    expect(r1!.expiresAtMs).toBeLessThanOrEqual(after + 20_000);
    expect(r4!.expiresAtMs - r1!.expiresAtMs).toBe(10_000); // one reading of the clock per script
    expect(await admin.pttl(layout.lock(k1))).toBeGreaterThan(19_000);
    expect(await admin.pttl(layout.lock(k2))).toBeGreaterThan(29_000);
    expect((await backend.status(k2))?.expiresAtMs).toBe(r4!.expiresAtMs);
    expect(await admin.exists(layout.lock(k3))).toBe(0);
  });

  it("renews 2,000 locks in at most 2 round trips, and 2,500 in 3 calls of at most 1,000", async () => {
    const backend = open();
    const reqs = Array.from({ length: 2_500 }, () => req(name(), { ttlMs: 5_000 }));
    for (let i = 0; i < reqs.length; i += 250) {
      const got = await Promise.all(reqs.slice(i, i + 250).map((r) => backend.acquire(r)));
      expect(got.every((g) => g.acquired)).toBe(true);
    }
    const renewals = reqs.map((r) => ({ name: r.name, owner: r.owner, ttlMs: 60_000 }));
    let trips = backend.renewRoundTrips;
    const results = await backend.renewMany(renewals.slice(0, 2_000));
    expect(backend.renewRoundTrips - trips).toBeLessThanOrEqual(2);
    expect(results).toHaveLength(2_000);
    expect(results.every((r) => r.ok)).toBe(true);
    for (const i of [0, 999, 1_000, 1_999]) expect(await admin.pttl(layout.lock(reqs[i]!.name)), String(i)).toBeGreaterThan(59_000);

    // The last one stolen: its result stays in its place.
    await admin.hset(layout.lock(reqs[2_499]!.name), "owner", "someone-else");
    trips = backend.renewRoundTrips;
    const all = await backend.renewMany(renewals);
    expect(backend.renewRoundTrips - trips).toBe(3);
    expect(all.slice(0, 2_499).every((r) => r.ok)).toBe(true);
    expect(all[2_499]).toEqual({ ok: false, reason: "mismatch" });
  });

  it("costs no round trip for an empty batch, and refuses a bad TTL before renewing anything", async () => {
    const backend = open();
    const trips = backend.renewRoundTrips;
    expect(await backend.renewMany([])).toEqual([]);
    expect(backend.renewRoundTrips).toBe(trips);
    const k = name();
    const a = req(k, { ttlMs: 5_000 });
    expect((await backend.acquire(a)).acquired).toBe(true);
    await expect(
      backend.renewMany([
        { name: k, owner: a.owner, ttlMs: 60_000 },
        { name: k, owner: a.owner, ttlMs: 0 },
      ]),
    ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(backend.renewRoundTrips).toBe(trips);
    expect(await admin.pttl(layout.lock(k))).toBeLessThanOrEqual(5_000);
  });
});

/** Subscribers of `channel` on the shared server. */
async function numsub(channel: string): Promise<number> {
  const reply = (await admin.call("PUBSUB", "NUMSUB", channel)) as [string, number];
  return Number(reply[1]);
}

/** Waits (at most 5 s) until `channel` has no subscriber on the shared server. */
async function unsubscribed(channel: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while ((await numsub(channel)) !== 0 && Date.now() < deadline) await sleep(20);
}

/** A raw subscriber of `channel`: counts every message published there, flag or not. */
async function rawSubscriber(channel: string): Promise<{ count: () => number; close: () => void }> {
  const sub = admin.duplicate();
  let messages = 0;
  sub.on("message", (ch: string) => void (ch === channel && messages++));
  await sub.subscribe(channel);
  return { count: () => messages, close: () => sub.disconnect() };
}

/** Waits (at most 5 s) until `ok()`. */
async function until(ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ok() && Date.now() < deadline) await sleep(10);
  expect(ok()).toBe(true);
}

describe("redis backend: release notifications only for watched names", () => {
  it("flags a watched name before the watch is ready, with a TTL, one flag for every watch of it here", async () => {
    const backend = open();
    const k = name();
    const calls = backend.flagCalls;
    const first = backend.watch(k, () => undefined);
    await first.ready;
    // Ready means flagged: a release from now on publishes.
    expect(await admin.exists(layout.watched(k))).toBe(1);
    const ttl = await admin.pttl(layout.watched(k));
    expect(ttl).toBeGreaterThan(FLAG_TTL_MS - 5_000);
    expect(ttl).toBeLessThanOrEqual(FLAG_TTL_MS);
    expect(await admin.get(layout.watched(k))).toBe("1");
    // The flag shares the name's slot: one script can check it with the lock.
    expect(keySlot(layout.watched(k))).toBe(keySlot(layout.lock(k)));
    const second = backend.watch(k, () => undefined);
    await second.ready;
    expect(backend.flagCalls - calls).toBe(1);
    first.close();
    second.close();
    second.close(); // idempotent
    // Closed: not deleted (another host may watch it), it lapses by itself.
    expect(await admin.exists(layout.watched(k))).toBe(1);
  });

  it("publishes release, force-release and proclaim only while someone watches the name", async () => {
    const backend = open();
    const k = name();
    const raw = await rawSubscriber(layout.released(k));
    try {
      // Nobody watches: nothing is published (the raw subscriber does not flag).
      const a = req(k);
      expect((await backend.acquire(a)).acquired).toBe(true);
      expect(await backend.proclaim(k, a.owner, "v1")).toBe(true);
      expect(await backend.release(k, a.owner)).toBe("released");
      expect((await backend.acquire(req(k))).acquired).toBe(true);
      expect(await backend.forceRelease(k)).toBe(true);
      expect(await admin.exists(layout.watched(k))).toBe(0);

      // Watched: each of the three publishes. Messages on one channel arrive in order, so had
      // the unwatched ones published, the raw count would be ahead of the watcher's.
      const seen = await watchCounting(open(), k);
      const b = req(k);
      expect((await backend.acquire(b)).acquired).toBe(true);
      expect(await seen.calledBy(() => backend.proclaim(k, b.owner, "v2"))).toBe(true);
      expect(await seen.calledBy(() => backend.release(k, b.owner))).toBe("released");
      expect((await backend.acquire(req(k))).acquired).toBe(true);
      expect(await seen.calledBy(() => backend.forceRelease(k))).toBe(true);
      await until(() => raw.count() >= 3);
      expect(seen.count()).toBe(3);
      expect(raw.count()).toBe(3);
      seen.watch.close();
    } finally {
      raw.close();
    }
  });

  it("publishes a batch's releases of watched names only (RELEASE_MANY checks each name's flag)", async () => {
    const backend = open();
    const [watched, unwatched] = [name(), name()];
    const rawWatched = await rawSubscriber(layout.released(watched));
    const rawUnwatched = await rawSubscriber(layout.released(unwatched));
    try {
      const seen = await watchCounting(open(), watched);
      const a = req(watched);
      const b = req(unwatched);
      expect((await Promise.all([backend.acquire(a), backend.acquire(b)])).every((r) => r.acquired)).toBe(true);
      // Released in one tick: one RELEASE_MANY run.
      const released = await seen.calledBy(() => Promise.all([backend.release(watched, a.owner), backend.release(unwatched, b.owner)]));
      expect(released).toEqual(["released", "released"]);
      await until(() => rawWatched.count() === 1);
      // The unwatched name's channel: a later watched release there is the first message it gets.
      const late = await watchCounting(open(), unwatched);
      const c = req(unwatched);
      expect((await backend.acquire(c)).acquired).toBe(true);
      await late.calledBy(() => backend.release(unwatched, c.owner));
      await until(() => rawUnwatched.count() >= 1);
      expect(rawUnwatched.count()).toBe(1);
      seen.watch.close();
      late.watch.close();
    } finally {
      rawWatched.close();
      rawUnwatched.close();
    }
  });
});

/**
 * An earlier version's acquire (test/support/redis-v1-scripts.ts, the script text as it was),
 * as a host of that version calls it: [fence, acquiredAt, expiresAt(, oldFence, key, node)] when
 * it took the name, else the holder's PTTL.
 */
function v1Acquire(k: string, owner: string, ttlMs: number, node = "node-v1", instance = "v1-instance", reclaim: "0" | "1" = "0"): Promise<number | number[]> {
  return admin.eval(V1_ACQUIRE, 2, layout.lock(k), layout.fence(k), owner, ttlMs, "v1-plugin", node, "v1-host", instance, reclaim) as Promise<
    number | number[]
  >;
}

describe("redis backend: handoff (a release and the next owner's acquisition in one script)", () => {
  it("hands a held lock to the next owner with a higher fence and its own TTL, publishing nothing: the key was never free", async () => {
    const backend = open();
    const k = name();
    const raw = await rawSubscriber(layout.released(k));
    const seen = await watchCounting(open(), k);
    try {
      const held = req(k);
      const first = await backend.acquire(held);
      const next = req(k, { ttlMs: 7_000, holder: { plugin: "q", node: "node-b" } });
      const result = await backend.handoff(k, held.owner, next);
      expect(result.released).toBe("released");
      const taken = result.released === "released" ? result.next : undefined;
      expect(taken?.acquired).toBe(true);
      if (!taken?.acquired || !first.acquired) return;
      expect(taken.fence).toBeGreaterThan(first.fence);
      expect(taken.expiresAtMs - taken.acquiredAtMs).toBe(7_000);
      const status = await backend.status(k);
      expect(status).toMatchObject({ owner: next.owner, fence: taken.fence, holder: { plugin: "q", node: "node-b", hostname: hostname() }, ttlMs: 7_000 });
      expect(await admin.pttl(layout.lock(k))).toBeGreaterThan(6_000);
      // The old owner holds nothing now; the new one releases as any holder does.
      expect(await backend.release(k, held.owner)).toBe("mismatch");
      // Messages on one channel arrive in order: had the handoff published, the release's would be the second.
      expect(await seen.calledBy(() => backend.release(k, next.owner))).toBe("released");
      await until(() => raw.count() >= 1);
      expect(seen.count()).toBe(1);
      expect(raw.count()).toBe(1);
    } finally {
      seen.watch.close();
      raw.close();
    }
  });

  it("changes nothing for an owner that does not hold the key, or a key nobody holds", async () => {
    const backend = open();
    const k = name();
    const held = req(k);
    const first = await backend.acquire(held);
    expect(await backend.handoff(k, "someone-else", req(k))).toEqual({ released: "mismatch" });
    expect((await backend.status(k))?.owner).toBe(held.owner);
    expect((await backend.status(k))?.fence).toBe(first.acquired ? first.fence : -1);
    const free = name();
    const next = req(free);
    expect(await backend.handoff(free, held.owner, next)).toEqual({ released: "not_found" });
    expect(await admin.exists(layout.lock(free))).toBe(0);
    expect(await backend.release(k, held.owner)).toBe("released");
  });

  it("leaves the holder's lock as it was when the fence counter cannot be read", async () => {
    const backend = open();
    const k = name();
    const held = req(k);
    expect((await backend.acquire(held)).acquired).toBe(true);
    await admin.set(layout.fence(k), "not a number");
    await expect(backend.handoff(k, held.owner, req(k))).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((await backend.status(k))?.owner).toBe(held.owner);
    await admin.del(layout.fence(k));
    expect(await backend.release(k, held.owner)).toBe("released");
  });

  it("hands over through the LockService: a handoff per release to a waiting caller, no waiter left to find the key held", async () => {
    const locks = new LockService(open(), { node: "handoff", waiting: { pollIntervalMs: 10_000 } });
    try {
      const k = name();
      const held = (await locks.tryLock(k, { ttlMs: 10_000 }))!;
      const waiters = [0, 1, 2].map(() => locks.acquire(k, { ttlMs: 10_000, waitMs: 10_000 }));
      while (locks.stats().waiters < 3) await sleep(2);
      await sleep(200);
      const before = locks.stats();
      await locks.release(held);
      for (const waiting of waiters) await locks.release(await waiting);
      const after = locks.stats();
      expect(after.handoffs - before.handoffs).toBe(3);
      // Every handoff was made by the script: no attempt of a waiter found the key held.
      expect(after.contended - before.contended).toBe(0);
      expect(after.acquisitions - before.acquisitions).toBe(3);
    } finally {
      await locks.close();
    }
  });
});

describe("redis backend: rolling upgrade, against the scripts of the version before (one record format)", () => {
  it("refuses a name an earlier version holds, shows and lists its holder, and takes it with a higher fence once it expires", async () => {
    const backend = open();
    const k = name();
    const old = await v1Acquire(k, "v1-owner", 400);
    if (!Array.isArray(old)) throw new Error("the earlier version did not acquire");
    const [oldFence, oldAt, oldExpires] = old as [number, number, number];
    const refused = await backend.acquire(req(k));
    expect(refused).toEqual({ acquired: false, retryAfterMs: expect.any(Number) });
    if (!refused.acquired) expect(refused.retryAfterMs).toBeLessThanOrEqual(400);
    // Batched as well: two acquires in one tick (ACQUIRE_MANY).
    const [batched, other] = await Promise.all([backend.acquire(req(k)), backend.acquire(req(name()))]);
    expect(batched.acquired).toBe(false);
    expect(other.acquired).toBe(true);
    const shown = {
      name: k,
      owner: "v1-owner",
      fence: oldFence,
      holder: { plugin: "v1-plugin", node: "node-v1", hostname: "v1-host" },
      acquiredAtMs: oldAt,
      expiresAtMs: oldExpires,
      ttlMs: 400,
    };
    expect(await backend.status(k)).toMatchObject(shown);
    expect((await backend.list({ prefix: k, limit: 10 })).locks.find((l) => l.name === k)).toMatchObject(shown);
    expect(await backend.release(k, "someone-else")).toBe("mismatch");
    expect(await backend.renew(k, "someone-else", 1_000)).toEqual({ ok: false, reason: "mismatch" });
    await sleep(500);
    const taken = await backend.acquire(req(k));
    if (!taken.acquired) throw new Error("not acquired after the earlier version's lease ended");
    expect(taken.fence).toBeGreaterThan(oldFence);
  });

  it("serves an earlier version's lock to its owner (a lease restored across the upgrade): renew, proclaim, release", async () => {
    const backend = open();
    const k = name();
    const old = await v1Acquire(k, "v1-restored", 10_000);
    if (!Array.isArray(old)) throw new Error("the earlier version did not acquire");
    const renewed = await backend.renew(k, "v1-restored", 20_000);
    expect(renewed.ok).toBe(true);
    expect(await backend.proclaim(k, "v1-restored", "mine")).toBe(true);
    expect(await backend.status(k)).toMatchObject({ owner: "v1-restored", fence: old[0], ttlMs: 20_000, value: "mine" });
    const seen = await watchCounting(open(), k);
    expect(await seen.calledBy(() => backend.release(k, "v1-restored"))).toBe("released");
    seen.watch.close();
  });

  it("reclaims an earlier process's lock of its node (reclaimOwnLocks) whichever version took it", async () => {
    const k = name();
    const old = await v1Acquire(k, "v1-stale", 60_000, "node-up", "v1-instance");
    if (!Array.isArray(old)) throw new Error("the earlier version did not acquire");
    const upgraded = open({ reclaimOwnLocks: true });
    const got = await upgraded.acquire(req(k, { holder: { plugin: "p", node: "node-up" } }));
    if (!got.acquired) throw new Error("not reclaimed");
    expect(got.fence).toBeGreaterThan(old[0]!);
    expect(await admin.hget(layout.lock(k), "instance")).toBe(upgraded.instanceId);
  });

  it("is held for an earlier version's acquire, with and without reclaim, which takes it only once it expires", async () => {
    const backend = open();
    const k = name();
    const mine = req(k, { ttlMs: 400, holder: { plugin: "p", node: "node-new" } });
    const got = await backend.acquire(mine);
    if (!got.acquired) throw new Error("not acquired");
    // Refused as held (its PTTL), never a WRONGTYPE error: the record is the hash it reads.
    for (const [node, reclaim] of [
      ["node-v1", "0"],
      ["node-v1", "1"],
    ] as const) {
      const pttl = await v1Acquire(k, "v1-owner", 10_000, node, "v1-instance", reclaim);
      expect(typeof pttl, `${node} reclaim ${reclaim}`).toBe("number");
      expect(pttl).toBeGreaterThanOrEqual(0);
      expect(pttl).toBeLessThanOrEqual(400);
    }
    // Its status shows this version's record, field for field; its release and renew see another owner.
    expect(await admin.eval(V1_STATUS, 1, layout.lock(k))).toEqual([
      mine.owner,
      String(got.fence),
      "p",
      "node-new",
      hostname(),
      String(got.acquiredAtMs),
      String(got.expiresAtMs),
      "400",
      expect.any(Number),
      [],
    ]);
    expect(await admin.eval(V1_RELEASE, 1, layout.lock(k), "v1-owner", layout.released(k), "v1-instance", layout.holderHead)).toBe(-2);
    expect(await admin.eval(V1_RENEW, 1, layout.lock(k), "v1-owner", 1_000)).toBe(-2);
    await sleep(500);
    const taken = await v1Acquire(k, "v1-owner", 10_000);
    if (!Array.isArray(taken)) throw new Error("the earlier version did not acquire after expiry");
    expect(taken[0]).toBeGreaterThan(got.fence);
    // And this version is refused in turn, then fences above it.
    expect((await backend.acquire(req(k))).acquired).toBe(false);
    expect(await admin.eval(V1_FORCE_RELEASE, 1, layout.lock(k), layout.released(k), layout.holderHead)).toBe(1);
    const again = await backend.acquire(req(k));
    if (!again.acquired) throw new Error("not acquired");
    expect(again.fence).toBeGreaterThan(taken[0]!);
  });

  it("an earlier process of the same node reclaims this version's lock, which is then fenced off here", async () => {
    const backend = open({ reclaimOwnLocks: true });
    const k = name();
    const mine = req(k, { holder: { plugin: "p", node: "node-down" }, ttlMs: 60_000 });
    const got = await backend.acquire(mine);
    if (!got.acquired) throw new Error("not acquired");
    const reclaimed = await v1Acquire(k, "v1-owner", 60_000, "node-down", "v1-instance", "1");
    if (!Array.isArray(reclaimed)) throw new Error("the earlier version did not reclaim");
    expect(reclaimed[3]).toBe(got.fence);
    expect(reclaimed[0]).toBeGreaterThan(got.fence);
    expect(await backend.renew(k, mine.owner, 1_000)).toEqual({ ok: false, reason: "mismatch" });
    expect(await backend.release(k, mine.owner)).toBe("mismatch");
    expect((await backend.status(k))?.fence).toBe(reclaimed[0]);
  });

  it("wakes this version's watchers on an earlier version's release (it always publishes)", async () => {
    const k = name();
    const old = await v1Acquire(k, "v1-owner", 10_000);
    if (!Array.isArray(old)) throw new Error("the earlier version did not acquire");
    const seen = await watchCounting(open(), k);
    expect(await seen.calledBy(() => admin.eval(V1_RELEASE, 1, layout.lock(k), "v1-owner", layout.released(k), "v1-instance", layout.holderHead))).toBe(1);
    seen.watch.close();
  });
});

describe("redis backend: release notifications (watch)", () => {
  it("calls the listener when another connection releases or force-releases the key", async () => {
    const other = open();
    const k = name();
    const seen = await watchCounting(open(), k);
    expect(await numsub(layout.released(k))).toBe(1);

    const a = req(k);
    expect((await other.acquire(a)).acquired).toBe(true);
    expect(await seen.calledBy(() => other.release(k, a.owner))).toBe("released");
    expect(seen.count()).toBe(1);

    expect((await other.acquire(req(k))).acquired).toBe(true);
    expect(await seen.calledBy(() => other.forceRelease(k))).toBe(true);
    expect(seen.count()).toBe(2);
    seen.watch.close();
  });

  it("is not called for a release that deleted nothing (wrong owner, no lock)", async () => {
    const other = open();
    const k = name();
    const seen = await watchCounting(open(), k);
    const a = req(k);
    expect((await other.acquire(a)).acquired).toBe(true);
    expect(await other.release(k, randomUUID())).toBe("mismatch");
    expect(await other.release(`${k}-free`, a.owner)).toBe("not_found");
    expect(await other.forceRelease(`${k}-free`)).toBe(false);
    // Messages on one channel arrive in order: had the failed release published, the count would be 2 here.
    expect(await seen.calledBy(() => other.release(k, a.owner))).toBe("released");
    expect(seen.count()).toBe(1);
    seen.watch.close();
  });

  it("shares one subscription per key, unsubscribes with the last watcher, and calls no closed watcher", async () => {
    const backend = open();
    const k = name();
    const channel = layout.released(k);
    const [first, second] = await Promise.all([watchCounting(backend, k), watchCounting(backend, k)]);
    expect(await numsub(channel)).toBe(1);

    first.watch.close();
    first.watch.close(); // idempotent
    const a = req(k);
    expect((await backend.acquire(a)).acquired).toBe(true);
    expect(await second.calledBy(() => backend.release(k, a.owner))).toBe("released");
    expect(first.count()).toBe(0);
    expect(await numsub(channel)).toBe(1);

    second.watch.close();
    await unsubscribed(channel);
    expect(await numsub(channel)).toBe(0);

    // Watching again after the unsubscribe subscribes again.
    const third = await watchCounting(backend, k);
    expect(await numsub(channel)).toBe(1);
    third.watch.close();
  });

  it("unsubscribes everything when the backend closes", async () => {
    const backend = new RedisBackend(config(), silent);
    const keys = [name(), name(), name()];
    const watches = keys.map((k) => backend.watch(k, () => undefined));
    await Promise.all(watches.map((w) => w.ready));
    for (const k of keys) expect(await numsub(layout.released(k))).toBe(1);
    await backend.close();
    await unsubscribed(layout.released(keys[0]!));
    for (const k of keys) expect(await numsub(layout.released(k))).toBe(0);
    // A watch of a closed backend is ready at once and never called.
    const late = backend.watch(keys[0]!, () => {
      throw new Error("called");
    });
    await late.ready;
    late.close();
  });

  it("is ready within commandTimeoutMs when Redis is unreachable, and never shows the password", async () => {
    const port = await freePort();
    const capture = captureLogger();
    const backend = new RedisBackend(config({ url: `redis://:s3cret@127.0.0.1:${port}`, commandTimeoutMs: 300 }), capture.logger);
    try {
      const started = performance.now();
      const watch = backend.watch("k", () => undefined);
      await watch.ready;
      expect(performance.now() - started).toBeLessThan(1_500);
      watch.close();
    } finally {
      await backend.close();
    }
    expect(JSON.stringify(capture.lines)).not.toContain("s3cret");
  });

  it("wakes a LockService waiter on release from another backend instance", async () => {
    const holder = new LockService(open(), { node: "holder" });
    const waiter = new LockService(open(), { node: "waiter", waiting: { pollIntervalMs: 30_000 } });
    try {
      const k = name();
      const held = (await holder.tryLock(k, { ttlMs: 30_000 }))!;
      const waiting = waiter.acquire(k, { ttlMs: 5_000, waitMs: 20_000 });
      await sleep(200);
      const released = performance.now();
      await holder.release(held);
      const lease = await waiting;
      // Woken by the release, not by the next poll (30 s): 10 s is margin a loaded machine keeps.
      expect(performance.now() - released).toBeLessThan(10_000);
      await waiter.release(lease);
    } finally {
      await holder.close({ closeBackend: false });
      await waiter.close({ closeBackend: false });
    }
  });
});
