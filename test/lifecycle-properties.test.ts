// Property tests of the lifecycle's scheduling core, on fake timers (fast-check generates the
// cases): the one-timer deadline queue, and the renewal manager that relies on it.
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeadlineQueue, type Timed } from "../kit/deadline-queue.js";
import { LockService } from "../host/locking/service.js";
import { renewalSpy } from "./support/renewal-spy.js";

interface Item extends Timed {
  readonly id: number;
}

type Op =
  | { readonly op: "add"; readonly id: number; readonly inMs: number }
  | { readonly op: "move"; readonly id: number; readonly inMs: number }
  | { readonly op: "remove"; readonly id: number }
  | { readonly op: "wait"; readonly ms: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ op: fc.constant("add" as const), id: fc.integer({ min: 0, max: 30 }), inMs: fc.integer({ min: 0, max: 500 }) }),
  fc.record({ op: fc.constant("move" as const), id: fc.integer({ min: 0, max: 30 }), inMs: fc.integer({ min: 0, max: 500 }) }),
  fc.record({ op: fc.constant("remove" as const), id: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ op: fc.constant("wait" as const), ms: fc.integer({ min: 0, max: 200 }) }),
);

describe("properties (fake timers)", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("DeadlineQueue fires every queued item once, never early, never a removed one, from one timer", () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 80 }), (ops) => {
        const fired: { id: number; at: number; deadline: number }[] = [];
        const queue = new DeadlineQueue<Item>((item) => fired.push({ id: item.id, at: performance.now(), deadline: item.deadline }));
        const items = new Map<number, Item>();
        /** What must fire: id -> deadline, for items queued and not yet fired or removed. */
        const pending = new Map<number, number>();
        const fire = (ms: number): void => {
          const before = fired.length;
          vi.advanceTimersByTime(ms);
          for (const f of fired.slice(before)) {
            expect(pending.get(f.id)).toBe(f.deadline);
            pending.delete(f.id);
          }
        };
        for (const o of ops) {
          if (o.op === "wait") {
            fire(o.ms);
          } else if (o.op === "add") {
            if (items.get(o.id)?.heapIndex !== undefined && items.get(o.id)!.heapIndex >= 0) continue;
            const item: Item = { id: o.id, deadline: performance.now() + o.inMs, heapIndex: -1 };
            items.set(o.id, item);
            queue.add(item);
            pending.set(o.id, item.deadline);
          } else if (o.op === "move") {
            const item = items.get(o.id);
            if (!item || item.heapIndex < 0) continue;
            item.deadline = performance.now() + o.inMs;
            queue.update(item);
            pending.set(o.id, item.deadline);
          } else {
            const item = items.get(o.id);
            if (!item) continue;
            queue.remove(item);
            pending.delete(o.id);
          }
          expect(queue.timers).toBeLessThanOrEqual(1);
          expect(queue.size).toBe(pending.size);
        }
        fire(1_000);
        expect(pending.size).toBe(0);
        expect(queue.timers).toBe(0);
        // Whole-ms timers: "due within the next ms" counts as due, never more than that early.
        for (const f of fired) expect(f.at).toBeGreaterThanOrEqual(f.deadline - 1);
        queue.clear();
      }),
      { numRuns: 300 },
    );
  });

  it("keeps every keepalive lease held over many TTLs when renewals succeed, in few batches", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 40, max: 3_000 }), { minLength: 1, maxLength: 25 }),
        fc.integer({ min: 0, max: 40 }),
        async (ttls, batchWindowMs) => {
          // The backend's clock is the faked one too, so server and host agree on time; its renewal batches counted.
          let batches = 0;
          const backend = renewalSpy(
            () => performance.now(),
            () => void batches++,
          );
          const service = new LockService(backend, { node: "prop", keepalive: { batchWindowMs } });
          try {
            const leases = await Promise.all(ttls.map((ttlMs, i) => service.tryLock(`k${i}`, { ttlMs, keepalive: true })));
            const horizon = Math.max(...ttls) * 4;
            await vi.advanceTimersByTimeAsync(horizon);
            for (const lease of leases) expect(lease!.state).toBe("held");
            const stats = service.stats();
            expect(stats.lost).toBe(0);
            expect(stats.renewalTimers).toBe(1);
            // Each lease renews about every half TTL; batching never needs more calls than renewals.
            expect(batches).toBeLessThanOrEqual(stats.renewalsOk);
            expect(stats.renewalsOk).toBeGreaterThanOrEqual(ttls.length * 3);
          } finally {
            await service.close();
          }
        },
      ),
      { numRuns: 40 },
    );
  });
});
