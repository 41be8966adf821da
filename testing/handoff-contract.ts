// Local contention, checked on every backend: while a host holds or queues a mutex, its own new
// attempts are contended, or queue, without asking the backend; a release hands the key to the
// host's next waiter (KindSteps.handoff where the backend has it, else a release and an
// attempt), in arrival order, with fences still strictly increasing; waiters that time out or are
// aborted leave the line; the line of a holder whose lease ran out wakes at its end; and a waiter of another host is not
// starved by the handoffs (the fairness bound). The backend's mutex steps are counted through a
// thin wrapper, so "without asking the backend" is seen, not assumed.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "./vitest.js";
import type { AcquireRequest, KindSteps, LockBackend } from "../kit/backend.js";
import type { Lease } from "../host/locking/lease.js";
import { LockService, type LockServiceOptions } from "../host/locking/service.js";
import { closeBackends, hostBackends, type ContractTarget } from "./target.js";
import { rejection } from "./rejection.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polling so slow that only a release notice, a handoff or a lease end explains a quick wake-up. */
const OPTIONS: Omit<LockServiceOptions, "node"> = { waiting: { pollIntervalMs: 10_000 } };

/** `backend` with its mutex steps' acquisitions, releases and handoffs counted. */
class Counted {
  acquires = 0;
  releases = 0;
  handoffs = 0;
  readonly backend: LockBackend;

  constructor(inner: LockBackend) {
    const steps = inner.steps("mutex");
    const handoff = steps.handoff;
    const counted: KindSteps = {
      kind: steps.kind,
      acquire: (req: AcquireRequest) => (this.acquires++, steps.acquire(req)),
      release: (name, owner) => (this.releases++, steps.release(name, owner)),
      renewMany: (reqs) => steps.renewMany(reqs),
      leaveQueue: (name, owner) => steps.leaveQueue(name, owner),
      status: (name) => steps.status(name),
      forceRelease: (name) => steps.forceRelease(name),
      list: (req) => steps.list(req),
      watch: (name, listener) => steps.watch(name, listener),
      ...(handoff && { handoff: (name: string, owner: string, next: AcquireRequest) => (this.handoffs++, handoff.call(steps, name, owner, next)) }),
    };
    this.backend = {
      name: inner.name,
      distributed: inner.distributed,
      kinds: inner.kinds,
      ...(inner.endsOnlyAtExpiry !== undefined && { endsOnlyAtExpiry: inner.endsOnlyAtExpiry }),
      steps: (kind) => (kind === "mutex" ? counted : inner.steps(kind)),
      ...(inner.onLost && { onLost: inner.onLost.bind(inner) }),
      ping: () => inner.ping(),
      close: () => inner.close(),
    };
  }

  /** Calls of the mutex's steps that take or free a key. */
  get calls(): number {
    return this.acquires + this.releases + this.handoffs;
  }
}

/** Registers the local contention cases for one backend. */
export function handoffContract(name: string, target: ContractTarget): void {
  describe(`local contention contract: ${name}`, () => {
    let a: LockService;
    let b: LockService;
    let counted: Counted;
    const backends: LockBackend[] = [];
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const key = (): string => `handoff-${run}-${++n}`;

    beforeAll(async () => {
      backends.push(...(await hostBackends(target, 2)));
      const [first, second] = backends as [LockBackend, LockBackend];
      counted = new Counted(first);
      a = new LockService(counted.backend, { node: "host-a", ...OPTIONS });
      b = new LockService(second, { node: "host-b", ...OPTIONS });
    });
    afterAll(async () => {
      await a?.close({ closeBackend: false });
      await b?.close({ closeBackend: false });
      await closeBackends(backends);
    });

    /** Until `service` has `count` waiters queued. */
    async function untilWaiters(service: LockService, count: number): Promise<void> {
      for (let i = 0; i < 500 && service.stats().waiters < count; i++) await sleep(2);
      expect(service.stats().waiters).toBe(count);
    }

    it("answers a try, and queues an acquire, without asking the backend while this host holds or queues the key", async () => {
      const k = key();
      const held = (await a.tryLock(k, { ttlMs: 10_000 }))!;
      expect(held).not.toBeNull();
      // Held by a plain try: the first waiter asks once, then queues.
      const waiting = a.acquire(k, { ttlMs: 10_000, waitMs: 10_000 });
      await untilWaiters(a, 1);
      // Its one more try once subscribed (so a release meanwhile is not missed).
      await sleep(200);
      const before = counted.acquires;
      expect(await a.tryLock(k, { ttlMs: 10_000 })).toBeNull();
      const timedOut = await rejection(a.acquire(k, { ttlMs: 10_000, waitMs: 0 }));
      expect(timedOut.code).toBe("TIMEOUT");
      const second = a.acquire(k, { ttlMs: 10_000, waitMs: 10_000 });
      await untilWaiters(a, 2);
      expect(counted.acquires - before).toBe(0);
      // Another host still asks its backend, and is contended.
      expect(await b.tryLock(k, { ttlMs: 10_000 })).toBeNull();
      // The release hands the key on: the waiter holds it, and the try is still answered here.
      await a.release(held);
      const first = await waiting;
      expect(first.fence).toBeGreaterThan(held.fence);
      expect(await a.tryLock(k, { ttlMs: 10_000 })).toBeNull();
      await a.release(first);
      const last = await second;
      expect(last.fence).toBeGreaterThan(first.fence);
      const hasStep = counted.backend.steps("mutex").handoff !== undefined;
      // With a handoff step nobody asked; without, each release was followed by the waiter's attempt.
      expect(counted.acquires - before).toBe(hasStep ? 0 : 2);
      await a.release(last);
      // Nobody holds or queues it here any more: a try asks the backend again and takes it.
      const again = await a.tryLock(k, { ttlMs: 10_000 });
      expect(again).not.toBeNull();
      expect(counted.acquires - before).toBe(hasStep ? 1 : 3);
      await a.release(again!);
    });

    it("hands the key to this host's waiters in arrival order, one backend step each, fences strictly increasing", async () => {
      const k = key();
      const held = (await a.tryLock(k, { ttlMs: 30_000 }))!;
      const taken: Lease[] = [];
      const order: number[] = [];
      const waiters = [1, 2, 3, 4, 5].map(async (i) => {
        await sleep(i * 30);
        const lease = await a.acquire(k, { ttlMs: 5_000, waitMs: 10_000 });
        order.push(i);
        taken.push(lease);
        await sleep(10);
        await a.release(lease);
      });
      await untilWaiters(a, 5);
      const calls = counted.calls;
      const handoffs = a.stats().handoffs;
      await a.release(held);
      await Promise.all(waiters);
      expect(order).toEqual([1, 2, 3, 4, 5]);
      const fences = [held, ...taken].map((l) => l.fence);
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
      // Five handoffs and the last release; a backend without a handoff step releases, then acquires.
      expect(a.stats().handoffs - handoffs).toBe(5);
      expect(counted.calls - calls).toBe(counted.backend.steps("mutex").handoff ? 6 : 11);
      const s = await b.status({ name: `global:${k}` });
      expect(s.held).toBe(false);
    });

    it("keeps the releasing caller behind the waiters it found: turns go round, nobody barges", async () => {
      const k = key();
      const turns: number[] = [];
      await Promise.all(
        [0, 1, 2, 3].map(async (c) => {
          for (let i = 0; i < 5; i++) {
            const lease = await a.acquire(k, { ttlMs: 10_000, waitMs: 10_000 });
            turns.push(c);
            await sleep(1);
            await a.release(lease);
          }
        }),
      );
      expect(turns).toHaveLength(20);
      // Once all four queue, each caller takes one turn per round: no caller holds the key twice in a row.
      for (let i = 4; i < turns.length; i++) expect(turns[i], `turn ${i}: ${turns.join(",")}`).not.toBe(turns[i - 1]);
    });

    it("a waiter that times out or is aborted leaves the line; the next one still gets the key", async () => {
      const k = key();
      const held = (await a.tryLock(k, { ttlMs: 30_000 }))!;
      const quick = rejection(a.acquire(k, { ttlMs: 5_000, waitMs: 400 }));
      await untilWaiters(a, 1);
      const controller = new AbortController();
      const aborted = rejection(a.acquire(k, { ttlMs: 5_000, waitMs: 10_000, signal: controller.signal })).catch((err: unknown) => err);
      await untilWaiters(a, 2);
      const patient = a.acquire(k, { ttlMs: 5_000, waitMs: 10_000 });
      await untilWaiters(a, 3);
      expect((await quick).code).toBe("TIMEOUT");
      controller.abort(new Error("caller gave up"));
      expect(await aborted).toMatchObject({ message: "caller gave up" });
      expect(a.stats().waiters).toBe(1);
      await a.release(held);
      const lease = await patient;
      expect(lease.fence).toBeGreaterThan(held.fence);
      expect(a.stats().waiters).toBe(0);
      await a.release(lease);
    });

    it("wakes this host's line when its holder's lease runs out unreleased: at the lease's end, not at a poll", async () => {
      const k = key();
      const held = (await a.tryLock(k, { ttlMs: 30_000 }))!;
      const first = a.acquire(k, { ttlMs: 400, waitMs: 10_000, keepalive: false });
      await untilWaiters(a, 1);
      await sleep(200);
      await a.release(held);
      // Handed over: this host's line holds it now, for 400 ms, and nobody will release it.
      const abandoned = await first;
      const t0 = performance.now();
      const calls = counted.acquires;
      const next = await a.acquire(k, { ttlMs: 5_000, waitMs: 10_000 });
      const waited = performance.now() - t0;
      expect(waited).toBeGreaterThanOrEqual(300);
      expect(waited).toBeLessThan(5_000);
      expect(next.fence).toBeGreaterThan(abandoned.fence);
      // Queued without asking while the lease lasted; an attempt once it had ended here, and at most
      // two more, never a poll: the host's deadline comes a little before the server's, which may
      // still hold it then and answer with a retry hint for its end; a backend that deletes the
      // key at its end in steps (etcd: a read, then a delete by revision) may still hold it at
      // that retry, and answers without a hint once the end has passed, so the last attempt
      // comes with the deletion's notice.
      expect(counted.acquires - calls).toBeGreaterThanOrEqual(1);
      expect(counted.acquires - calls).toBeLessThanOrEqual(3);
      await a.release(next);
    });

    it("does not starve a waiter of another host while this host's callers keep taking turns", async () => {
      const k = key();
      let stop = false;
      let turns = 0;
      const callers = [0, 1, 2, 3].map(async () => {
        while (!stop) {
          const lease = await a.acquire(k, { ttlMs: 10_000, waitMs: 20_000 });
          turns++;
          await a.release(lease);
        }
      });
      while (turns < 10) await sleep(5);
      const t0 = performance.now();
      const remote = await b.acquire(k, { ttlMs: 10_000, waitMs: 15_000 });
      const waited = performance.now() - t0;
      const during = turns;
      await sleep(20);
      // The other host holds it: this host's callers wait.
      expect(turns).toBe(during);
      await b.release(remote);
      stop = true;
      await Promise.all(callers);
      expect(waited).toBeLessThan(10_000);
    });
  });
}
