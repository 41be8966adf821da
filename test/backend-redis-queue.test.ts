// The queue kinds (read/write locks, semaphores, fair mutexes) on the Redis backend, beyond the
// contract (testing/queue-contract.ts, run by backend-redis.test.ts): the key layout (one slot per name, apart from the
// mutex and from the other kind), keys that expire with their last lease or queue place,
// channels that do not cross kinds, loss notices across instances, batched renewals, and
// fences that keep rising after a FLUSHALL or a restart without persistence (on a private
// server this file starts and flushes; the shared server is never flushed).
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import { hostname } from "node:os";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AcquireRequest, AcquireResult, LockMode } from "../kit/backend.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { QueueKeyLayout, KeyLayout, slotOf } from "../plugins/backends/redis/keys.js";
import type { RedisConfig } from "../plugins/backends/redis/config.js";
import { redisUrl, startRedisServer, type RedisServer } from "./support/servers.js";
import { sleep } from "./support/until.js";
import { silent } from "./support/log.js";

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
const name = (): string => `shared-${++n}`;
const holder = { plugin: "p", node: "node-a" };
const req = (key: string, mode: LockMode, over: Partial<AcquireRequest> = {}): AcquireRequest => ({
  name: key,
  owner: randomUUID(),
  ttlMs: 10_000,
  holder,
  mode,
  limit: 0,
  queueMs: 0,
  ...over,
});
const fenceOf = (r: AcquireResult): number => {
  if (!r.acquired) throw new Error("expected the acquisition to succeed");
  return r.fence;
};

async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await sleep(5);
  }
}

const backends: RedisBackend[] = [];
function open(over: Partial<RedisConfig> = {}): RedisBackend {
  const backend = new RedisBackend(config(over), silent);
  backends.push(backend);
  return backend;
}

let admin: Redis;
const rwKeys = new QueueKeyLayout(prefix, "rw");
const semKeys = new QueueKeyLayout(prefix, "semaphore");
const mutexKeys = new KeyLayout(prefix);
beforeAll(() => {
  admin = new Redis(url, { maxRetriesPerRequest: 1 });
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

describe("redis queue kinds: key layout", () => {
  const tricky = ["a", "}", "}x", "{", "{a}", "a}b{c", "%", "%7D", "ключ/🔒 *?[x]"];

  it("keeps every key of a name in the name's slot, in each kind's own namespace apart from the mutex's", () => {
    for (const k of tricky) {
      const keys = [rwKeys, semKeys].flatMap((l) => [l.holders(k), l.info(k), l.queue(k), l.places(k), l.fence(k)]);
      for (const key of keys) expect(keySlot(key), key).toBe(slotOf(k));
      const all = [...keys, mutexKeys.lock(k), mutexKeys.fence(k)];
      expect(new Set(all).size).toBe(all.length);
    }
    expect(rwKeys.holders("billing:x")).toBe(`${prefix}rw:holders:{billing:x}`);
    expect(semKeys.fence("billing:x")).toBe(`${prefix}semaphore:fence:{billing:x}`);
    expect(new Set([rwKeys.released("a"), semKeys.released("a"), mutexKeys.released("a")]).size).toBe(3);
  });

  it("writes the holder's record (mode, fence, plugin, node, hostname, instance, time) and lease TTL, and the limit", async () => {
    const backend = open();
    const sem = backend.steps("semaphore");
    const k = name();
    const a = req(k, "shared", { limit: 4, ttlMs: 30_000, holder: { plugin: "billing", node: "node-7" } });
    const r = await sem.acquire(a);
    if (!r.acquired) throw new Error("not acquired");
    expect(Number(await admin.zscore(semKeys.holders(k), a.owner))).toBe(r.expiresAtMs);
    const info = await admin.hgetall(semKeys.info(k));
    expect(info).toEqual({
      limit: "4",
      mode: "shared",
      [`h:${a.owner}`]: JSON.stringify(["shared", String(r.fence), "billing", "node-7", hostname(), backend.instanceId, String(r.acquiredAtMs)]),
      [`t:${a.owner}`]: "30000",
    });
    expect(await admin.get(semKeys.fence(k))).toBe(String(r.fence));
    const s = await sem.status(k);
    expect(s?.holders[0]).toMatchObject({
      owner: a.owner,
      mode: "shared",
      fence: r.fence,
      holder: { plugin: "billing", node: "node-7", hostname: hostname() },
    });
    // Nothing in the mutex's or the other kind's namespace.
    expect(await admin.exists(mutexKeys.lock(k), mutexKeys.fence(k), rwKeys.holders(k), rwKeys.fence(k))).toBe(0);
  });

  it("quotes names with braces and glob characters correctly in status and list", async () => {
    const rw = open().steps("rw");
    const base = `${name()}*?[`;
    for (const k of [`${base}}x{`, `${base}%7D`]) {
      expect((await rw.acquire(req(k, "shared"))).acquired).toBe(true);
      expect((await rw.status(k))?.name).toBe(k);
    }
    const page = await rw.list({ prefix: base, limit: 10 });
    expect(page.records.map((r) => r.name).sort()).toEqual([`${base}%7D`, `${base}}x{`]);
  });
});

describe("redis queue kinds: expiry of keys", () => {
  it("sets the holders' keys to expire with the longest lease, and the queue's with the last place", async () => {
    const rw = open().steps("rw");
    const k = name();
    await rw.acquire(req(k, "shared", { ttlMs: 5_000 }));
    await rw.acquire(req(k, "shared", { ttlMs: 20_000 }));
    await rw.acquire(req(k, "exclusive", { queueMs: 8_000 }));
    for (const key of [rwKeys.holders(k), rwKeys.info(k)]) {
      const pttl = await admin.pttl(key);
      expect(pttl).toBeGreaterThan(15_000);
      expect(pttl).toBeLessThanOrEqual(20_000);
    }
    for (const key of [rwKeys.queue(k), rwKeys.places(k)]) {
      const pttl = await admin.pttl(key);
      expect(pttl).toBeGreaterThan(3_000);
      expect(pttl).toBeLessThanOrEqual(8_000);
    }
    expect(await admin.pttl(rwKeys.fence(k))).toBe(-1);
  });

  it("leaves only the fence counter once every holder crashed and every waiter went away", async () => {
    const rw = open().steps("rw");
    const k = name();
    await rw.acquire(req(k, "shared", { ttlMs: 200 }));
    await rw.acquire(req(k, "exclusive", { queueMs: 250 }));
    await sleep(400);
    expect(await admin.exists(rwKeys.holders(k), rwKeys.info(k), rwKeys.queue(k), rwKeys.places(k))).toBe(0);
    expect(await admin.exists(rwKeys.fence(k))).toBe(1);
    expect(await rw.status(k)).toBeNull();
  });

  it("renewing raises the keys' TTL with the lease, never lowering it for the others", async () => {
    const rw = open().steps("rw");
    const k = name();
    const a = req(k, "shared", { ttlMs: 5_000 });
    const b = req(k, "shared", { ttlMs: 5_000 });
    await rw.acquire(a);
    await rw.acquire(b);
    expect((await rw.renewMany([{ name: k, owner: a.owner, ttlMs: 30_000 }]))[0]?.ok).toBe(true);
    expect(await admin.pttl(rwKeys.info(k))).toBeGreaterThan(25_000);
    expect(await admin.hget(rwKeys.info(k), `t:${a.owner}`)).toBe("30000");
    expect((await rw.renewMany([{ name: k, owner: b.owner, ttlMs: 1_000 }]))[0]?.ok).toBe(true);
    expect(await admin.pttl(rwKeys.holders(k))).toBeGreaterThan(25_000);
    const s = await rw.status(k);
    expect(s?.holders.find((h) => h.owner === b.owner)?.ttlMs).toBe(1_000);
  });

  it("tells a refused request when the earliest lease ends, or with no holder when the earliest queue place lapses", async () => {
    const rw = open().steps("rw");
    const k = name();
    const a = req(k, "shared", { ttlMs: 3_000 });
    await rw.acquire(a);
    await rw.acquire(req(k, "shared", { ttlMs: 9_000 }));
    const w = req(k, "exclusive", { queueMs: 6_000 });
    const byLease = await rw.acquire(w);
    expect(byLease.acquired).toBe(false);
    if (!byLease.acquired) expect(byLease.retryAfterMs).toBeGreaterThan(1_000);
    if (!byLease.acquired) expect(byLease.retryAfterMs).toBeLessThanOrEqual(3_000);
    await rw.forceRelease(k);
    // Only the queued writer is in the way of a reader now: should it have crashed, its place lapses then.
    const byPlace = await rw.acquire(req(k, "shared"));
    expect(byPlace.acquired).toBe(false);
    if (!byPlace.acquired) expect(byPlace.retryAfterMs).toBeGreaterThan(3_000);
    if (!byPlace.acquired) expect(byPlace.retryAfterMs).toBeLessThanOrEqual(6_000);
    expect(await rw.acquire(w)).toMatchObject({ acquired: true });
  });

  it("refuses to release or renew a lease that ended while its record is still stored (a longer one keeps the keys)", async () => {
    const rw = open().steps("rw");
    const k = name();
    const a = req(k, "shared", { ttlMs: 150 });
    const b = req(k, "shared", { ttlMs: 10_000 });
    await rw.acquire(a);
    await rw.acquire(b);
    await sleep(250);
    expect(await admin.zscore(rwKeys.holders(k), a.owner)).not.toBeNull();
    expect(await rw.renewMany([{ name: k, owner: a.owner, ttlMs: 10_000 }])).toEqual([{ ok: false, reason: "not_found" }]);
    expect(await rw.release(k, a.owner)).toBe("not_found");
    expect((await rw.status(k))?.holders.map((h) => h.owner)).toEqual([b.owner]);
    // The next acquisition prunes it.
    await rw.acquire(req(k, "shared"));
    expect(await admin.zscore(rwKeys.holders(k), a.owner)).toBeNull();
    expect(await admin.hexists(rwKeys.info(k), `h:${a.owner}`)).toBe(0);
  });

  it("drops the info hash with the last holder's release, keeping the queue", async () => {
    const rw = open().steps("rw");
    const k = name();
    const a = req(k, "shared");
    await rw.acquire(a);
    await rw.acquire(req(k, "exclusive", { queueMs: 10_000 }));
    expect(await rw.release(k, a.owner)).toBe("released");
    expect(await admin.exists(rwKeys.holders(k), rwKeys.info(k))).toBe(0);
    expect(await rw.status(k)).toMatchObject({ holders: [], queued: 1, limit: 0 });
    expect((await rw.list({ prefix: k, limit: 10 })).records).toEqual([]);
  });
});

describe("redis queue kinds: channels and notices", () => {
  it("wakes only the watchers of the same kind and name: not the mutex's, not the other kind's", async () => {
    const backend = open();
    const rw = backend.steps("rw");
    const sem = backend.steps("semaphore");
    const k = name();
    const woken = { rw: 0, sem: 0, mutex: 0 };
    const watches = [rw.watch(k, () => void woken.rw++), sem.watch(k, () => void woken.sem++), backend.watch(k, () => void woken.mutex++)];
    await Promise.all(watches.map((w) => w.ready));
    const a = req(k, "shared", { limit: 2 });
    await sem.acquire(a);
    await sem.release(k, a.owner);
    await waitFor(() => woken.sem > 0);
    const m = { name: k, owner: randomUUID(), ttlMs: 10_000, holder };
    await backend.acquire(m);
    await backend.release(k, m.owner);
    await waitFor(() => woken.mutex > 0);
    // Both messages above were published before this one: had they crossed, they would be in.
    const w = req(k, "exclusive");
    await rw.acquire(w);
    await rw.release(k, w.owner);
    await waitFor(() => woken.rw > 0);
    expect(woken).toEqual({ rw: 1, sem: 1, mutex: 1 });
    for (const watch of watches) watch.close();
  });

  it("tells the holder's instance when another instance releases its hold, and not when it releases itself", async () => {
    const mine = open();
    const other = open();
    const lost: string[] = [];
    mine.onLost((owner) => void lost.push(owner));
    const rw = mine.steps("rw");
    const k = name();
    const a = req(k, "shared");
    const b = req(k, "shared");
    await rw.acquire(a);
    await rw.acquire(b);
    expect(await rw.release(k, a.owner)).toBe("released");
    expect(await other.steps("rw").release(k, b.owner)).toBe("released");
    await waitFor(() => lost.includes(b.owner));
    expect(lost).toEqual([b.owner]);
  });

  it("tells every force-released holder's instance, each with its owner", async () => {
    const first = open();
    const second = open();
    const lostFirst: string[] = [];
    const lostSecond: string[] = [];
    first.onLost((o) => void lostFirst.push(o));
    second.onLost((o) => void lostSecond.push(o));
    const k = name();
    const a = req(k, "shared", { limit: 3 });
    const b = req(k, "shared", { limit: 3 });
    await first.steps("semaphore").acquire(a);
    await second.steps("semaphore").acquire(b);
    expect(await open().steps("semaphore").forceRelease(k)).toBe(2);
    await waitFor(() => lostFirst.length > 0 && lostSecond.length > 0);
    expect([lostFirst, lostSecond]).toEqual([[a.owner], [b.owner]]);
  });
});

describe("redis queue kinds: batches, listing, arguments", () => {
  it("renews holds of many names and both modes in one script call", async () => {
    const backend = open();
    const rw = backend.steps("rw");
    const reqs = [];
    for (let i = 0; i < 50; i++) {
      const a = req(name(), i % 2 === 0 ? "shared" : "exclusive");
      expect((await rw.acquire(a)).acquired).toBe(true);
      reqs.push({ name: a.name, owner: a.owner, ttlMs: 20_000 });
    }
    const calls = backend.renewRoundTrips;
    const results = await rw.renewMany([...reqs, { name: reqs[0]!.name, owner: "nobody", ttlMs: 1_000 }]);
    expect(backend.renewRoundTrips - calls).toBe(1);
    expect(results.slice(0, 50).every((r) => r.ok)).toBe(true);
    expect(results[50]).toEqual({ ok: false, reason: "not_found" });
  });

  it("lists each record with its limit, holders in fence order, and queue", async () => {
    const sem = open().steps("semaphore");
    const base = `${name()}/`;
    const a = req(`${base}a`, "shared", { limit: 3 });
    const b = req(`${base}a`, "shared", { limit: 3 });
    const fa = fenceOf(await sem.acquire(a));
    const fb = fenceOf(await sem.acquire(b));
    const page = await sem.list({ prefix: base, limit: 10 });
    expect(page.records).toHaveLength(1);
    expect(page.records[0]).toMatchObject({ name: `${base}a`, kind: "semaphore", limit: 3, queued: 0 });
    expect(page.records[0]!.holders.map((h) => [h.owner, h.fence])).toEqual([
      [a.owner, fa],
      [b.owner, fb],
    ]);
  });

  it("refuses arguments Redis cannot take before sending anything", async () => {
    const rw = open().steps("rw");
    const k = name();
    for (const over of [{ ttlMs: 0 }, { ttlMs: 1.5 }, { queueMs: -1 }, { limit: -1 }, { limit: 1_000_001 }, { mode: "both" as LockMode }]) {
      await expect(rw.acquire(req(k, "exclusive", over))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    await expect(rw.renewMany([{ name: k, owner: "x", ttlMs: 0 }])).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("ttlMs"),
    });
    expect(await admin.exists(rwKeys.holders(k), rwKeys.queue(k), rwKeys.fence(k))).toBe(0);
  });
});

describe("redis queue kinds: fences on a private server", () => {
  let server: RedisServer;
  let direct: Redis;
  beforeAll(async () => {
    server = await startRedisServer();
    direct = new Redis(server.url, { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    direct?.disconnect();
    await server?.stop();
  });

  it("hands fences above every earlier one of the key after a FLUSHALL, in either mode", async () => {
    const rw = open({ url: server.url }).steps("rw");
    const k = name();
    const before = [fenceOf(await rw.acquire(req(k, "shared"))), fenceOf(await rw.acquire(req(k, "shared")))];
    await direct.flushall();
    const w = fenceOf(await rw.acquire(req(k, "exclusive")));
    expect(w).toBeGreaterThan(Math.max(...before));
    await direct.flushall();
    expect(fenceOf(await rw.acquire(req(k, "shared")))).toBeGreaterThan(w);
  });

  it("hands fences above the last one after a restart without persistence, and runs its scripts again (NOSCRIPT)", async () => {
    const backend = open({ url: server.url });
    const sem = backend.steps("semaphore");
    const k = name();
    const last = fenceOf(await sem.acquire(req(k, "shared", { limit: 2 })));
    await server.kill();
    await server.start();
    let next: AcquireResult | undefined;
    // The backend reconnects by itself; until then calls fail fast.
    for (let i = 0; i < 200 && next === undefined; i++) {
      next = await sem.acquire(req(k, "shared", { limit: 2 })).catch(() => undefined);
      if (next === undefined) await sleep(50);
    }
    expect(fenceOf(next!)).toBeGreaterThan(last);
    expect((await sem.status(k))?.holders).toHaveLength(1);
  });
});
