// Lock delegation (host/locking/delegation.ts) on every backend with its steps: two hosts (two
// LockServices, each with its own backend instance) on one server. Exclusion across the hosts and
// fences strictly increasing in the order of the critical sections, also across a host that stops
// without a word; a waiter of another host is not starved; a force-release tells the current
// local holder `lost`; status shows the current local holder; the per-acquisition option.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { LockService, type LockServiceOptions } from "../host/locking/service.js";
import type { Lease } from "../host/locking/lease.js";
import { isCode } from "../kit/errors.js";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { gateway } from "./support/etcd-gateway.js";
import { etcdEndpoints } from "./support/etcd-servers.js";
import { databaseUrl, redisUrl } from "./support/servers.js";
import { sleep, until } from "./support/until.js";

const RUN = randomUUID().slice(0, 8);
const PREFIX = `lockhost-test:deleg-${RUN}:`;
const TABLE = `lockhost_test_deleg_${RUN}`;
const ETCD_PREFIX = `lockhost-test/deleg-${RUN}/`;
const etcdConfig = (over: Partial<EtcdConfig> = {}): EtcdConfig => ({
  ...etcdDefaults,
  endpoints: etcdEndpoints(),
  keyPrefix: ETCD_PREFIX,
  fenceScale: 1_024,
  ...over,
});

const stores: Record<string, () => LockBackend> = {
  redis: () => new RedisBackend({ ...redisDefaults, url: redisUrl(), keyPrefix: PREFIX }, captureLogger().logger),
  pg: () => new PgBackend({ ...pgDefaults, url: databaseUrl(), table: TABLE }, captureLogger().logger),
  etcd: () => new EtcdBackend(etcdConfig(), captureLogger().logger),
};

afterAll(async () => {
  await dropRedisPrefix(redisUrl(), PREFIX);
  await dropPgTable(databaseUrl(), TABLE);
});

const ON: LockServiceOptions["delegation"] = { enabled: true, maxHoldMs: 0 };

/** A critical section log shared by the hosts of one test (they run in this process). */
class Sections {
  inside = 0;
  overlaps = 0;
  readonly fences: number[] = [];
  enter(lease: Lease): void {
    if (this.inside++ > 0) this.overlaps++;
    this.fences.push(lease.fence);
  }
  exit(): void {
    this.inside--;
  }
  regressions(): number {
    let n = 0;
    for (let i = 1; i < this.fences.length; i++) if (this.fences[i]! <= this.fences[i - 1]!) n++;
    return n;
  }
}

/** `callers` loops on `key` until `until` (performance.now()), each section `holdMs` long (0: a microtask). */
async function hammer(service: LockService, key: string, callers: number, stopAt: number, log: Sections, holdMs = 0): Promise<number> {
  let done = 0;
  await Promise.all(
    Array.from({ length: callers }, async () => {
      while (performance.now() < stopAt) {
        const lease = await service.acquire(key, { ttlMs: 10_000, waitMs: 20_000 });
        log.enter(lease);
        if (holdMs > 0) await sleep(holdMs);
        else await Promise.resolve();
        log.exit();
        await service.release(lease);
        done++;
      }
    }),
  );
  return done;
}

describe("lock delegation's options", () => {
  it("refuses bad settings and a bad per-acquisition option, naming them", async () => {
    const backend = stores.redis!();
    expect(() => new LockService(backend, { node: "a", delegation: { fenceBlock: 1 } })).toThrow(
      /delegation\.fenceBlock must be an integer from 2 to 1000000, got 1/,
    );
    expect(() => new LockService(backend, { node: "a", delegation: { enabled: "yes" as unknown as boolean } })).toThrow(
      /delegation\.enabled must be true or false/,
    );
    const locks = new LockService(backend, { node: "a" });
    try {
      await expect(locks.acquire("x", { ttlMs: 1_000, waitMs: 0, delegate: 1 as unknown as boolean })).rejects.toThrow(/delegate must be true or false/);
    } finally {
      await locks.close();
    }
  });
});

describe.each(Object.keys(stores))("%s: lock delegation", (store) => {
  const open: LockService[] = [];
  const host = (node: string, delegation = ON): LockService => {
    const s = new LockService(stores[store]!(), { node, delegation });
    open.push(s);
    return s;
  };
  afterAll(async () => {
    await Promise.all(open.map((s) => s.close().catch(() => undefined)));
  });

  it("keeps two hosts apart, with fences strictly increasing, and hands off locally", async () => {
    const a = host("a");
    const b = host("b");
    const log = new Sections();
    const stopAt = performance.now() + 1_500;
    const [na, nb] = await Promise.all([hammer(a, "both", 8, stopAt, log), hammer(b, "both", 8, stopAt, log)]);
    expect(log.overlaps).toBe(0);
    expect(log.regressions()).toBe(0);
    expect(na).toBeGreaterThan(0);
    expect(nb).toBeGreaterThan(0);
    // Handed on without a round trip: far more sections than grants.
    const grants = a.stats().delegatedGrants + b.stats().delegatedGrants;
    expect(grants).toBeGreaterThan(0);
    expect(na + nb).toBeGreaterThan(2 * grants);
  });

  it("fences stay above every local fence after a host stops without a word (its lease runs out)", async () => {
    const a = host("a");
    const key = "crash";
    const first = (await a.acquire(key, { ttlMs: 800, waitMs: 0, keepalive: false }))!;
    // Local waiters get the next fences of the block.
    const waiting = Array.from({ length: 3 }, () => a.acquire(key, { ttlMs: 800, waitMs: 5_000, keepalive: false }));
    await sleep(20);
    const fences = [first.fence];
    await a.release(first);
    for (const w of waiting) {
      const lease = await w;
      fences.push(lease.fence);
      if (w !== waiting.at(-1)) await a.release(lease);
    }
    expect(fences).toEqual([fences[0], fences[0]! + 1, fences[0]! + 2, fences[0]! + 3]);
    // Host a now stops without releasing (as a crashed process): its last holder's lease runs out on the server.
    const b = host("b");
    const next = await b.acquire(key, { ttlMs: 5_000, waitMs: 10_000 });
    expect(next.fence).toBeGreaterThanOrEqual(fences[0]! + 1_024);
    await b.release(next);
  });

  it("gives the key to a waiter of another host after the current hold", async () => {
    const a = host("a");
    const b = host("b");
    const log = new Sections();
    const stopAt = performance.now() + 4_000;
    const busy = hammer(a, "hot", 4, stopAt, log);
    await sleep(200);
    const started = performance.now();
    const lease = await b.acquire("hot", { ttlMs: 10_000, waitMs: 3_000 });
    const waited = performance.now() - started;
    log.enter(lease);
    log.exit();
    await b.release(lease);
    await busy;
    expect(log.overlaps).toBe(0);
    expect(log.regressions()).toBe(0);
    expect(waited).toBeLessThan(3_000);
    expect(a.stats().delegationsYielded).toBeGreaterThan(0);
  });

  it("a try of another host does not take the key from the delegating host (only a waiter marks it wanted)", async () => {
    const a = host("a");
    const b = host("b");
    const key = "tried";
    const first = await a.acquire(key, { ttlMs: 10_000, waitMs: 0 });
    const second = a.acquire(key, { ttlMs: 10_000, waitMs: 5_000 });
    expect(await b.tryLock(key, { ttlMs: 10_000 })).toBeNull();
    await sleep(100);
    await a.release(first);
    const next = await second;
    expect(next.fence).toBe(first.fence + 1);
    expect(a.stats().delegationsYielded).toBe(0);
    await a.release(next);
  });

  it("force-release: the current local holder hears lost, and the next grant fences it", async () => {
    const a = host("a");
    const b = host("b");
    const key = "forced";
    const first = await a.acquire(key, { ttlMs: 30_000, waitMs: 0 });
    const second = a.acquire(key, { ttlMs: 30_000, waitMs: 5_000 });
    await sleep(20);
    await a.release(first);
    const holder = await second;
    expect(holder.fence).toBe(first.fence + 1);
    // Status from this host: its current local holder and fence; from the other: the delegating host.
    const here = await a.status(key, { owners: true });
    expect(here.holders[0]).toMatchObject({ node: "a", fence: holder.fence, owner: holder.owner });
    const there = await b.status(key);
    expect(there.holders[0]).toMatchObject({ node: "a" });
    expect(await b.forceRelease(key)).toBe(1);
    await until("the local holder hears lost", 3_000, () => holder.state === "lost");
    const next = await b.acquire(key, { ttlMs: 5_000, waitMs: 0 });
    expect(next.fence).toBeGreaterThan(holder.fence);
    await b.release(next);
  });

  it("follows the acquisition's own option when the config leaves it off", async () => {
    const a = host("a", { enabled: false });
    const key = "optin";
    const plain = await a.acquire(key, { ttlMs: 5_000, waitMs: 0 });
    await a.release(plain);
    expect(a.stats().delegatedGrants).toBe(0);
    const first = await a.acquire(key, { ttlMs: 5_000, waitMs: 0, delegate: true });
    const second = a.acquire(key, { ttlMs: 5_000, waitMs: 5_000, delegate: true });
    await sleep(20);
    await a.release(first);
    const next = await second;
    expect(next.fence).toBe(first.fence + 1);
    await a.release(next);
    expect(a.stats()).toMatchObject({ delegatedGrants: 1, delegatedHandoffs: 1 });
  });
});

describe("etcd: the fence scale", () => {
  const open: { close(): Promise<unknown> }[] = [];
  afterAll(async () => {
    for (const o of open.splice(0).reverse()) await o.close().catch(() => undefined);
  });
  const backend = (over: Partial<EtcdConfig>): EtcdBackend => {
    const b = new EtcdBackend(etcdConfig(over), captureLogger().logger);
    open.push(b);
    return b;
  };
  const host = (node: string, over: Partial<EtcdConfig>, delegation?: LockServiceOptions["delegation"]): LockService => {
    const s = new LockService(new EtcdBackend(etcdConfig(over), captureLogger().logger), { node, ...(delegation && { delegation }) });
    open.push(s);
    return s;
  };

  it("has no delegation steps without a scale, and a block of at most the scale with one", () => {
    expect(backend({ keyPrefix: `${ETCD_PREFIX}none/`, fenceScale: 1 }).delegation).toBeUndefined();
    expect(backend({ keyPrefix: `${ETCD_PREFIX}none/`, fenceScale: 16 }).delegation?.maxBlock).toBe(16);
  });

  it("a host whose scale differs from the prefix's refuses to start and to lock, naming the option", async () => {
    const keyPrefix = `${ETCD_PREFIX}mixed/`;
    await backend({ keyPrefix, fenceScale: 1_024 }).ping();
    for (const fenceScale of [1, 512]) {
      const other = backend({ keyPrefix, fenceScale });
      const err = await other.ping().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isCode(err, "CONFIG_INVALID")).toBe(true);
      expect((err as Error).message).toMatch(
        new RegExp(`\\[locking\\.etcd\\] fence_scale is ${fenceScale}, but the hosts of key prefix ${keyPrefix} use 1024`),
      );
      const locks = new LockService(other, { node: "x" });
      await expect(locks.tryLock("k", { ttlMs: 5_000 })).rejects.toThrow(/fence_scale/);
      await expect(locks.try("k", { ttlMs: 5_000, kind: "rw", mode: "shared" })).rejects.toThrow(/fence_scale/);
    }
    // The same scale starts.
    await backend({ keyPrefix, fenceScale: 1_024 }).ping();
  });

  it("fences of plain and delegated grants, interleaved, strictly increase; re-grants and status report scaled fences", async () => {
    // A scale of 4: blocks of 4 fences (fence_block 1024 is capped), so a local line re-grants in place.
    const over = { keyPrefix: `${ETCD_PREFIX}mix/`, fenceScale: 4 };
    const a = host("a", over, ON);
    const b = host("b", over);
    const key = "mix";
    const fences: number[] = [];
    for (let round = 0; round < 3; round++) {
      // Host a: a local line of 10 holders, its grant renewed in place (`from`) after each 4.
      const first = await a.acquire(key, { ttlMs: 10_000, waitMs: 0 });
      const line = Array.from({ length: 9 }, () => a.acquire(key, { ttlMs: 10_000, waitMs: 10_000 }));
      await sleep(20);
      let lease = first;
      for (let i = 0; i < 10; i++) {
        fences.push(lease.fence);
        if (i > 0 && lease.fence % 4 === 0) {
          // A re-grant's base: what another host's status shows.
          const there = await b.status(key);
          expect(there.holders[0]).toMatchObject({ node: "a", fence: lease.fence });
        }
        await a.release(lease);
        if (i < 9) lease = await line[i]!;
      }
      // Host b: a plain acquisition, its fence a revision times the scale.
      const plain = await b.acquire(key, { ttlMs: 10_000, waitMs: 10_000 });
      expect(plain.fence % 4).toBe(0);
      expect((await a.status(key)).holders[0]).toMatchObject({ node: "b", fence: plain.fence });
      fences.push(plain.fence);
      await b.release(plain);
    }
    for (let i = 1; i < fences.length; i++) expect(fences[i]!, `fence ${i} of ${fences.join(",")}`).toBeGreaterThan(fences[i - 1]!);
    expect(a.stats().delegatedGrants).toBeGreaterThanOrEqual(9);
  });

  it("a re-granted key deleted while its value names the previous grant (a renewal of it that landed late) tells the current holder lost", async () => {
    const over = { keyPrefix: `${ETCD_PREFIX}late/`, fenceScale: 2 };
    const a = host("a", over, ON);
    const b = host("b", over);
    const key = "late";
    // Blocks of 2: the third holder's grant is the first's rewritten in place.
    const first = await a.acquire(key, { ttlMs: 30_000, waitMs: 0 });
    const line = [a.acquire(key, { ttlMs: 30_000, waitMs: 5_000 }), a.acquire(key, { ttlMs: 30_000, waitMs: 5_000 })];
    await sleep(20);
    await a.release(first);
    const second = await line[0]!;
    await a.release(second);
    const third = await line[1]!;
    expect(third.fence % 2).toBe(0);
    expect(a.stats().delegatedGrants).toBe(2);
    // The value names the grant before (as a renewal of it sent before the re-grant would write it back).
    const etcdKey = Buffer.from(`${ETCD_PREFIX}late/m/global:${key}`).toString("base64");
    const kv = (await gateway<{ kvs: { value: string; lease?: string }[] }>(etcdEndpoints()[0]!, "/v3/kv/range", { key: etcdKey })).kvs[0]!;
    const stored = JSON.parse(Buffer.from(kv.value, "base64").toString("utf8")) as Record<string, unknown>;
    expect(stored.o).toBe(third.owner);
    const back = Buffer.from(JSON.stringify({ ...stored, o: first.owner })).toString("base64");
    await gateway(etcdEndpoints()[0]!, "/v3/kv/put", { key: etcdKey, value: back, ...(kv.lease !== undefined && { lease: kv.lease }) });
    expect(await b.forceRelease(key)).toBe(1);
    await until("the current holder hears lost", 3_000, () => third.state === "lost");
  });

  it("scales the fences of every kind, in acquisitions, status and list", async () => {
    const over = { keyPrefix: `${ETCD_PREFIX}kinds/`, fenceScale: 8 };
    const locks = host("k", over);
    const mutex = await locks.acquire("m", { ttlMs: 5_000, waitMs: 0 });
    const shared = await locks.acquire("rw", { ttlMs: 5_000, waitMs: 0, kind: "rw", mode: "shared" });
    const permit = await locks.acquire("s", { ttlMs: 5_000, waitMs: 0, kind: "semaphore", permits: 2 });
    expect([mutex.fence % 8, shared.fence % 8, permit.fence % 8]).toEqual([0, 0, 0]);
    expect(shared.fence).toBeGreaterThan(mutex.fence);
    expect(permit.fence).toBeGreaterThan(shared.fence);
    expect((await locks.status("m")).holders[0]?.fence).toBe(mutex.fence);
    expect((await locks.status("rw", { kind: "rw" })).holders[0]?.fence).toBe(shared.fence);
    expect((await locks.status("s", { kind: "semaphore" })).holders[0]?.fence).toBe(permit.fence);
    const listed = (await locks.list()).locks;
    expect(listed.map((l) => [l.name, l.fence])).toEqual(
      expect.arrayContaining([
        ["global:m", mutex.fence],
        ["global:rw", shared.fence],
        ["global:s", permit.fence],
      ]),
    );
    for (const lease of [mutex, shared, permit]) await locks.release(lease);
  });
});
