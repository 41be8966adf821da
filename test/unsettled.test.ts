// The book of unsettled locks (host/locking/unsettled.ts), through a memory backend that acts
// as a stalled server does: while stalled, an acquisition is applied but its caller hears a
// timeout, and a release is not applied and fails. The real servers' freezes are in
// test/backend-stall.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { KindSteps, LockBackend } from "../kit/backend.js";
import { LockService, type CleanedLock } from "../host/locking/service.js";
import { MAX_UNSETTLED } from "../host/locking/unsettled.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { until } from "./support/until.js";

const timedOut = (): LockhostError => new LockhostError("BACKEND_UNAVAILABLE", "did not answer within 500 ms (test); the command may still have been applied");

/** A memory backend whose mutex steps time out while `stalled` (acquisitions applied all the same). */
function stalling(): { backend: LockBackend; memory: MemoryBackend; state: { stalled: boolean } } {
  const memory = new MemoryBackend();
  const state = { stalled: false };
  const wrap = (steps: KindSteps): KindSteps => ({
    ...steps,
    acquire: async (req) => {
      const result = await steps.acquire(req);
      if (state.stalled) throw timedOut();
      return result;
    },
    release: (key, owner) => (state.stalled ? Promise.reject(timedOut()) : steps.release(key, owner)),
  });
  const backend = new Proxy(memory, {
    get(target, prop) {
      if (prop === "steps") return (kind: string) => wrap(target.steps(kind as "mutex"));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { backend, memory, state };
}

const services: LockService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

function service(backend: LockBackend): LockService {
  const s = new LockService(backend, { node: "n" });
  services.push(s);
  return s;
}

describe("locks left behind by calls that failed", () => {
  it("an acquisition that timed out but was applied is released by its owner once the backend answers, counted and told", async () => {
    const { backend, memory, state } = stalling();
    const locks = service(backend);
    const told: CleanedLock[][] = [];
    locks.onCleanup((cleaned) => told.push([...cleaned]));
    state.stalled = true;
    await expect(locks.tryLock("job", { ttlMs: 60_000 })).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect((await memory.status("global:job"))?.owner).toBeDefined();
    expect(locks.stats()).toMatchObject({ unsettled: 1, cleanups: 0, held: 0 });
    state.stalled = false;
    await until("the lock is released", 5_000, async () => (await memory.status("global:job")) === null);
    expect(locks.stats()).toMatchObject({ cleanups: 1 });
    expect(told).toEqual([[{ name: "global:job", kind: "mutex", owner: expect.any(String) }]]);
    // Asked again once more (the release may have been answered before the acquisition ran), then settled.
    await until("the book is empty", 5_000, () => locks.stats().unsettled === 0);
    expect(await locks.tryLock("job", { ttlMs: 1_000 })).not.toBeNull();
  });

  it("a lease whose release failed stays held until the release is made once the backend answers, then ends as released", async () => {
    const { backend, memory, state } = stalling();
    const locks = service(backend);
    const lease = (await locks.tryLock("owed", { ttlMs: 60_000 }))!;
    state.stalled = true;
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect(lease.state).toBe("held");
    expect(locks.stats()).toMatchObject({ unsettled: 1, held: 1 });
    state.stalled = false;
    await until("the lease ends as released", 5_000, () => lease.state === "released");
    expect(await memory.status("global:owed")).toBeNull();
    expect(locks.stats()).toMatchObject({ unsettled: 0, held: 0, cleanups: 1 });
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "ALREADY_RELEASED" });
  });

  it("a lease whose release failed and that its caller released meanwhile leaves the book without a second release", async () => {
    const { backend, state } = stalling();
    const locks = service(backend);
    const lease = (await locks.tryLock("retried", { ttlMs: 60_000 }))!;
    state.stalled = true;
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    state.stalled = false;
    await locks.release(lease);
    expect(lease.state).toBe("released");
    await until("the book is empty", 5_000, () => locks.stats().unsettled === 0);
    expect(locks.stats().cleanups).toBe(0);
  });

  it("keeps at most MAX_UNSETTLED owner tokens (the oldest go first) and releases what close() can still reach", async () => {
    const { backend, memory, state } = stalling();
    const locks = service(backend);
    state.stalled = true;
    const n = MAX_UNSETTLED + 10;
    const failed = await Promise.allSettled(Array.from({ length: n }, (_, i) => locks.tryLock(`k${i}`, { ttlMs: 60_000 })));
    expect(failed.every((r) => r.status === "rejected")).toBe(true);
    expect(locks.stats().unsettled).toBe(MAX_UNSETTLED);
    state.stalled = false;
    // close() makes one last round at once, before the backend closes.
    await locks.close({ closeBackend: false });
    expect(await memory.status("global:k0")).not.toBeNull(); // pushed out: left to its TTL
    expect(await memory.status(`global:k${n - 1}`)).toBeNull();
    expect(locks.stats().cleanups).toBe(MAX_UNSETTLED);
    await memory.close();
  });
});
