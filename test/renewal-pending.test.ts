// New keepalive leases wait outside the renewal heap until their first renewal is near
// (host/locking/renewal-pending.ts): nothing about their renewal may change for it. On fake
// timers, over the memory backend with its renewal calls counted.
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { renewalSpy } from "./support/renewal-spy.js";

/** The memory backend's mutexes (clock: the faked performance.now), with each renewed owner recorded. */
function countingBackend(): { backend: LockBackend; renewed: string[] } {
  const renewed: string[] = [];
  const backend = renewalSpy(
    () => performance.now(),
    (reqs) => {
      for (const r of reqs) renewed.push(r.owner);
    },
  );
  return { backend, renewed };
}

describe("keepalive leases before their first renewal", () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "performance"] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("a lease released before its first renewal is never renewed, and leaves nothing behind", async () => {
    const { backend, renewed } = countingBackend();
    const service = new LockService(backend, { node: "n" });
    try {
      const lease = (await service.tryLock("k", { ttlMs: 1_000 }))!;
      expect(service.stats().keepalive).toBe(1);
      await service.release(lease);
      expect(service.stats()).toMatchObject({ keepalive: 0, held: 0 });
      await vi.advanceTimersByTimeAsync(5_000);
      expect(renewed).toEqual([]);
      expect(service.stats().renewalTicks).toBe(0);
    } finally {
      await service.close();
    }
  });

  it("keeps every lease held that was taken at any time with any TTL, and renews none released early", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            afterMs: fc.integer({ min: 0, max: 400 }),
            ttlMs: fc.integer({ min: 40, max: 2_000 }),
            releaseAfterMs: fc.option(fc.integer({ min: 0, max: 15 })),
          }),
          { minLength: 1, maxLength: 20 },
        ),
        async (takes) => {
          const { backend, renewed } = countingBackend();
          const service = new LockService(backend, { node: "n", keepalive: { batchWindowMs: 5 } });
          try {
            const kept = [];
            const released = new Set<string>();
            let i = 0;
            for (const take of takes) {
              await vi.advanceTimersByTimeAsync(take.afterMs);
              const lease = (await service.tryLock(`k${i++}`, { ttlMs: take.ttlMs }))!;
              // Released well before half its TTL (the first renewal), or kept.
              if (take.releaseAfterMs !== null && take.releaseAfterMs < take.ttlMs / 4) {
                await vi.advanceTimersByTimeAsync(take.releaseAfterMs);
                await service.release(lease);
                released.add(lease.owner);
              } else {
                kept.push(lease);
              }
            }
            await vi.advanceTimersByTimeAsync(Math.max(...takes.map((t) => t.ttlMs)) * 4);
            for (const lease of kept) expect(lease.state).toBe("held");
            expect(service.stats()).toMatchObject({ lost: 0, keepalive: kept.length, held: kept.length });
            expect(renewed.filter((owner) => released.has(owner))).toEqual([]);
            if (kept.length > 0) expect(service.stats().renewalTimers).toBe(1);
          } finally {
            await service.close();
          }
        },
      ),
      { numRuns: 30 },
    );
  });

  it("a manual renew before the first renewal re-plans it: earlier for a shorter lease, later for a longer one", async () => {
    const { backend, renewed } = countingBackend();
    const service = new LockService(backend, { node: "n", keepalive: { batchWindowMs: 0 } });
    try {
      const short = (await service.tryLock("short", { ttlMs: 10_000 }))!;
      const long = (await service.tryLock("long", { ttlMs: 1_000 }))!;
      await service.renew(short, 2_000);
      await service.renew(long, 4_000);
      // The manual renewals went through renewMany too: only keepalive's, from here on, count.
      const manual = renewed.length;
      const byKeepalive = (): string[] => renewed.slice(manual);
      // short now ends in 2 s: renewed before then, not at 5 s. long ends in 4 s: not renewed at 0.5 s.
      await vi.advanceTimersByTimeAsync(1_500);
      expect(byKeepalive()).toContain(short.owner);
      expect(byKeepalive()).not.toContain(long.owner);
      await vi.advanceTimersByTimeAsync(2_400);
      expect(byKeepalive()).toContain(long.owner);
      expect([short.state, long.state]).toEqual(["held", "held"]);
    } finally {
      await service.close();
    }
  });

  it("keepalive turned off before the first renewal: an observed lease ends at its deadline, unrenewed", async () => {
    const { backend, renewed } = countingBackend();
    const service = new LockService(backend, { node: "n" });
    try {
      const lease = (await service.tryLock("k", { ttlMs: 200 }))!;
      service.setKeepalive(lease, false);
      expect(service.stats().keepalive).toBe(0);
      const lost = new Promise((resolve) => lease.onLost(resolve));
      await vi.advanceTimersByTimeAsync(250);
      await expect(lost).resolves.toMatchObject({ code: "LOST" });
      expect(renewed).toEqual([]);
    } finally {
      await service.close();
    }
  });

  it("close() drops the pending leases with the rest: no timer left", async () => {
    const { backend } = countingBackend();
    const service = new LockService(backend, { node: "n" });
    await service.tryLock("k", { ttlMs: 1_000 });
    expect(service.stats().renewalTimers).toBe(1);
    await service.close();
    expect(service.stats().renewalTimers).toBe(0);
  });
});
