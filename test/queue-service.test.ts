// The queue kinds (read/write locks, semaphores, fair mutexes) through the LockService (issue 14): the lifecycle written
// once for every kind (waiting woken by release, writer preference and FIFO through waiting
// acquisitions, keepalive, loss, auto-release, close), on every backend that has them; two
// services on one backend stand for two hosts.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { LockhostError } from "../kit/errors.js";
import { permitSpec, READ, WRITE } from "../kit/kinds.js";
import { LockService } from "../host/locking/service.js";
import type { Lease } from "../host/locking/lease.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { hostsOn, PG_TABLE, REDIS_PREFIX, queueBackends } from "./support/queue-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";
import { sleep, until } from "./support/until.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

for (const target of queueBackends()) {
  describe(`read/write locks and semaphores through the lock service: ${target.name}`, () => {
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const key = (): string => `svc-${run}-${++n}`;
    /** Two services (two hosts) on one backend, or on two backends of one server. */
    const fleet = hostsOn(target);
    const hosts = (count = 2, pollIntervalMs = 60_000): Promise<LockService[]> => fleet.hosts(count, pollIntervalMs);
    afterEach(() => fleet.close());

    it("shares a key among readers and keeps a writer out until the last one leaves", async () => {
      const [a, b] = await hosts();
      const k = key();
      const r1 = await a!.try(k, { ttlMs: 10_000, ...READ });
      const r2 = await b!.try(k, { ttlMs: 10_000, ...READ });
      expect(r1).toMatchObject({ kind: "rw", mode: "shared", state: "held" });
      expect(r2).not.toBeNull();
      expect(await a!.try(k, { ttlMs: 10_000, ...WRITE })).toBeNull();
      const status = await a!.status(k, { kind: "rw" });
      expect(status).toMatchObject({ name: `global:${k}`, kind: "rw", held: true, limit: 0, queued: 0 });
      expect(status.holders.map((h) => [h.mode, h.node])).toEqual([
        ["shared", "node-0"],
        ["shared", "node-1"],
      ]);
      expect(JSON.stringify(status)).not.toContain(r1!.owner);
      await a!.release(r1!);
      await b!.release(r2!);
      const w = await a!.try(k, { ttlMs: 10_000, ...WRITE });
      expect(w).toMatchObject({ kind: "rw", mode: "exclusive" });
      expect(w!.fence).toBeGreaterThan(r2!.fence);
      expect(await b!.try(k, { ttlMs: 10_000, ...READ })).toBeNull();
      // A mutex of the same name is another lock.
      expect(await b!.tryLock(k, { ttlMs: 10_000 })).not.toBeNull();
    });

    it("wakes a waiting writer on the last reader's release, not at a poll", async () => {
      const [a, b] = await hosts();
      const k = key();
      const r = (await a!.try(k, { ttlMs: 30_000, ...READ }))!;
      const t0 = performance.now();
      const writing = b!.acquire(k, { ttlMs: 10_000, waitMs: 20_000, ...WRITE });
      await sleep(150);
      await a!.release(r);
      const w = await writing;
      expect(w.kind).toBe("rw");
      // The poll interval is a minute: only the release notice can have woken it this soon.
      expect(performance.now() - t0).toBeLessThan(15_000);
    });

    it("prefers a waiting writer: readers arriving after it wait, then get the key after it", async () => {
      const [a, b] = await hosts();
      const k = key();
      const r = (await a!.try(k, { ttlMs: 30_000, ...READ }))!;
      const order: string[] = [];
      const writing = b!.acquire(k, { ttlMs: 10_000, waitMs: 20_000, ...WRITE }).then((l) => (order.push("writer"), l));
      await sleep(150);
      expect((await a!.status(k, { kind: "rw" })).queued).toBe(1);
      expect(await a!.try(k, { ttlMs: 10_000, ...READ })).toBeNull();
      const reading = a!.acquire(k, { ttlMs: 10_000, waitMs: 20_000, ...READ }).then((l) => (order.push("reader"), l));
      await sleep(100);
      await a!.release(r);
      const w = await writing;
      await sleep(100);
      expect(order).toEqual(["writer"]);
      await b!.release(w);
      await reading;
      expect(order).toEqual(["writer", "reader"]);
    });

    it("serves waiting writers of two hosts in arrival order", async () => {
      const [a, b, c] = await hosts(3);
      const k = key();
      const r = (await a!.try(k, { ttlMs: 30_000, ...READ }))!;
      const order: string[] = [];
      const first = b!.acquire(k, { ttlMs: 10_000, waitMs: 20_000, ...WRITE }).then((l) => (order.push("b"), l));
      // Arrival is when the server queues a writer: a new host's first statement connects first,
      // which took longer than a fixed sleep on a loaded machine (c queued ahead of b).
      await until("b queues", 10_000, async () => (await a!.status(k, { kind: "rw" })).queued === 1);
      const second = c!.acquire(k, { ttlMs: 10_000, waitMs: 20_000, ...WRITE }).then((l) => (order.push("c"), l));
      await until("c queues", 10_000, async () => (await a!.status(k, { kind: "rw" })).queued === 2);
      await a!.release(r);
      const wb = await first;
      await sleep(100);
      expect(order).toEqual(["b"]);
      await b!.release(wb);
      await c!.release(await second);
      expect(order).toEqual(["b", "c"]);
    });

    it("leaves the writer queue when a wait times out, so readers get in at once", async () => {
      const [a, b] = await hosts();
      const k = key();
      await a!.try(k, { ttlMs: 30_000, ...READ });
      const err = await b!.acquire(k, { ttlMs: 10_000, waitMs: 200, ...WRITE }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(LockhostError);
      expect(err).toMatchObject({ code: "TIMEOUT", details: { key: k, scope: "global", name: `global:${k}` } });
      expect((err as Error).message).toContain(`read/write lock global:${k}`);
      await sleep(100);
      expect(await a!.try(k, { ttlMs: 10_000, ...READ })).not.toBeNull();
    });

    it("serves a fair mutex's waiters of two hosts in arrival order, with a fence above the last", async () => {
      const [a, b] = await hosts();
      const k = key();
      const first = (await a!.tryLock(k, { ttlMs: 30_000, fair: true }))!;
      expect(first).toMatchObject({ kind: "fair", mode: "exclusive" });
      const order: string[] = [];
      // Arrival order a, b, a: the second of host a must not pass host b's waiter.
      const waiting = (s: LockService, who: string): Promise<Lease> =>
        s.acquire(k, { ttlMs: 10_000, waitMs: 20_000, fair: true }).then((l) => (order.push(who), l));
      const w1 = waiting(a!, "a1");
      await sleep(100);
      const w2 = waiting(b!, "b");
      await sleep(100);
      const w3 = waiting(a!, "a2");
      await sleep(100);
      expect((await b!.status(k, { kind: "fair" })).queued).toBe(3);
      let last = first;
      await a!.release(first);
      for (const [expected, w, s] of [
        ["a1", w1, a],
        ["b", w2, b],
        ["a2", w3, a],
      ] as const) {
        const lease = await w;
        await sleep(100);
        expect(order.at(-1)).toBe(expected);
        expect(lease.fence).toBeGreaterThan(last.fence);
        last = lease;
        await s!.release(lease);
      }
      expect(order).toEqual(["a1", "b", "a2"]);
      // A fair mutex "k" and a mutex "k" are two locks.
      expect(await b!.tryLock(k, { ttlMs: 1_000 })).not.toBeNull();
    });

    it("refuses a fair mutex's try while someone queues, and a waiter that times out leaves the queue at once", async () => {
      const [a, b] = await hosts();
      const k = key();
      const held = (await a!.tryLock(k, { ttlMs: 30_000, fair: true }))!;
      // b queues (its wait has room for a loaded machine); the refusal below is asserted only once it does.
      const waiter = b!.acquire(k, { ttlMs: 10_000, waitMs: 10_000, fair: true });
      await until("b queues", 10_000, async () => (await a!.status(k, { kind: "fair" })).queued === 1);
      await a!.release(held);
      // b's waiter is ahead of a try: queued on a free key (the contract checks that case alone) or holding it.
      expect(await a!.tryLock(k, { ttlMs: 10_000, fair: true })).toBeNull();
      const got = await waiter;
      await b!.release(got);
      // Now a waiter that times out: the holder keeps the key past its wait.
      const holder = (await a!.tryLock(k, { ttlMs: 30_000, fair: true }))!;
      const t0 = performance.now();
      await expect(b!.acquire(k, { ttlMs: 10_000, waitMs: 300, fair: true })).rejects.toMatchObject({
        code: "TIMEOUT",
        message: expect.stringContaining("fair mutex"),
      });
      await sleep(50);
      expect((await a!.status(k, { kind: "fair" })).queued).toBe(0);
      await a!.release(holder);
      // Nobody queues: a try gets in at once, not after the place would have lapsed.
      expect(await b!.tryLock(k, { ttlMs: 10_000, fair: true })).not.toBeNull();
      expect(performance.now() - t0).toBeLessThan(2_000);
      await expect(a!.tryLock(k, { ttlMs: 1_000, fair: "yes" } as never)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("fair"),
      });
    });

    it("never holds a semaphore above its permits across two hosts, and refuses another N", async () => {
      const [a, b] = await hosts();
      const k = key();
      let inside = 0;
      let most = 0;
      const worker = async (s: LockService): Promise<void> => {
        for (let i = 0; i < 6; i++) {
          const lease = await s.acquire(k, { ttlMs: 10_000, ...permitSpec(2), waitMs: 20_000 });
          inside++;
          most = Math.max(most, inside);
          await sleep(5);
          inside--;
          await s.release(lease);
        }
      };
      await Promise.all([worker(a!), worker(a!), worker(b!), worker(b!), worker(b!)]);
      expect(most).toBe(2);
      const held = (await a!.try(k, { ttlMs: 10_000, ...permitSpec(2) }))!;
      expect(held).toMatchObject({ kind: "semaphore", mode: "shared" });
      const mismatch = await b!.try(k, { ttlMs: 10_000, ...permitSpec(3) }).catch((e: unknown) => e);
      expect(mismatch).toMatchObject({ code: "PERMITS_MISMATCH", retryable: false, details: { permits: 3, heldWith: 2 } });
      await expect(b!.acquire(k, { ttlMs: 10_000, ...permitSpec(3), waitMs: 5_000 })).rejects.toMatchObject({ code: "PERMITS_MISMATCH" });
      expect((await a!.status(k, { kind: "semaphore" })).limit).toBe(2);
    });

    it("refuses bad permits and kinds with INVALID_ARGUMENT naming them", async () => {
      const [a] = await hosts(1);
      for (const permits of [0, -1, 1.5, Number.NaN, 2_000_000, "2"]) {
        await expect(a!.try("p", { ttlMs: 1_000, kind: "semaphore", permits } as never)).rejects.toMatchObject({
          code: "INVALID_ARGUMENT",
          message: expect.stringContaining("permits must be"),
        });
      }
      await expect(a!.status("p", { kind: "bogus" as never })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("kind must be"),
      });
      await expect(a!.try("p", { ttlMs: 1_000, kind: "bogus" } as never)).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("kind must be"),
      });
    });

    it("keeps shared leases alive, and tells a holder of a force-release at once", async () => {
      const [a, b] = await hosts();
      const k = key();
      const r = (await a!.try(k, { ttlMs: 600, ...READ }))!;
      const p = (await a!.try(k, { ttlMs: 600, ...permitSpec(1) }))!;
      await sleep(1_300);
      expect(r.state).toBe("held");
      expect(p.state).toBe("held");
      expect(await b!.try(k, { ttlMs: 1_000, ...WRITE })).toBeNull();
      const lost = new Promise<LockhostError>((resolve) => r.onLost(resolve));
      expect(await b!.forceRelease(k, { kind: "rw" })).toBe(1);
      const reason = await lost;
      expect(reason.code).toBe("LOST");
      expect(r.state).toBe("lost");
      expect(p.state).toBe("held");
      await a!.release(p);
    });

    it("releases every kind at releaseAll and close, and a writer waiting at close leaves", async () => {
      const [a, b] = await hosts();
      const k = key();
      await a!.try(k, { ttlMs: 30_000, ...READ });
      await a!.try(k, { ttlMs: 30_000, ...permitSpec(1) });
      const waiting = b!.acquire(k, { ttlMs: 1_000, waitMs: 20_000, ...WRITE }).catch((e: unknown) => e);
      await sleep(100);
      expect(await a!.releaseAll()).toEqual([]);
      expect(await a!.status(k, { kind: "semaphore", elsewhere: false })).toMatchObject({ held: false, holders: [], queued: 0 });
      const w = (await waiting) as Lease;
      expect(w.kind).toBe("rw");
      const blocked = a!.acquire(k, { ttlMs: 1_000, waitMs: 20_000, ...READ }).catch((e: unknown) => e);
      await sleep(50);
      await a!.close({ closeBackend: false });
      expect(await blocked).toMatchObject({ code: "CLOSED" });
    });

    it("with releases a read or write lock after fn, and rejects CONTENDED for a full semaphore", async () => {
      const [a] = await hosts(1);
      const k = key();
      const fence = await a!.with(k, (_signal, lease) => lease.fence, { ttlMs: 1_000, ...READ });
      expect(fence).toBeGreaterThan(0);
      await a!.with(k, async (signal) => expect(signal.aborted).toBe(false), { ttlMs: 1_000, ...WRITE });
      expect(await a!.status(k, { kind: "rw", elsewhere: false })).toMatchObject({ held: false, holders: [], queued: 0 });
      const held = (await a!.try(k, { ttlMs: 10_000, ...permitSpec(1) }))!;
      await expect(a!.with(k, () => 1, { ttlMs: 1_000, ...permitSpec(1) })).rejects.toMatchObject({
        code: "CONTENDED",
        message: expect.stringContaining("semaphore"),
      });
      await a!.release(held);
    });
  });
}

describe("a backend without read/write locks or semaphores", () => {
  it("refuses them with INVALID_ARGUMENT naming the backend, and still serves mutexes", async () => {
    const inner = new MemoryBackend();
    // The memory backend serving only its mutexes, named "acme".
    const bound = new Proxy(inner, {
      get: (t, p) => {
        if (p === "kinds") return ["mutex"];
        if (p === "name") return "acme";
        const v: unknown = Reflect.get(t, p, t);
        return typeof v === "function" ? v.bind(t) : v;
      },
    }) as LockBackend;
    const s = new LockService(bound, { node: "n" });
    await expect(s.try("a", { ttlMs: 1_000, ...READ })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: "backend acme has no read/write locks (its kinds are mutex)",
    });
    await expect(s.try("a", { ttlMs: 1_000, ...permitSpec(2) })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("has no semaphores"),
    });
    expect(await s.tryLock("a", { ttlMs: 1_000 })).not.toBeNull();
    await s.close();
  });
});
