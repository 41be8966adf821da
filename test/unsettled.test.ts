// The book of unsettled locks (host/locking/unsettled.ts), through a memory backend that acts
// as a stalled server does: while stalled, an acquisition is applied but its caller hears a
// timeout, and a release is not applied and fails. The real servers' freezes are in
// test/backend-stall.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { AcquireRequest, AcquireResult, KindSteps, LockBackend } from "../kit/backend.js";
import { LockService, type CleanedLock } from "../host/locking/service.js";
import { MAX_UNSETTLED, RETRY_MS } from "../host/locking/unsettled.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { faultyBackend } from "./support/faulty-backend.js";
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

/**
 * A memory backend whose fair mutex answers a waiting writer as a server paused past the TTL
 * does: its first grant arrives after the lock ended there (a grant of nothing, gone from the
 * store), and the reply to its next acquisition is held back, once applied, until `answer()`.
 */
function lateWriter(): { backend: LockBackend; memory: MemoryBackend; applied: Promise<void>; answer: () => void } {
  const memory = new MemoryBackend();
  let attempts = 0;
  let answer!: () => void;
  const gate = new Promise<void>((r) => (answer = r));
  let markApplied!: () => void;
  const applied = new Promise<void>((r) => (markApplied = r));
  const acquire = async (steps: KindSteps, req: AcquireRequest): Promise<AcquireResult> => {
    const result = await steps.acquire(req);
    if (!result.acquired) return result;
    if (++attempts === 1) {
      await steps.forceRelease(req.name);
      return { ...result, expiresAtMs: result.acquiredAtMs };
    }
    markApplied();
    await gate;
    return result;
  };
  const wrap = (steps: KindSteps): KindSteps =>
    new Proxy(steps, {
      get(target, prop) {
        if (prop === "acquire") return (req: AcquireRequest) => acquire(target, req);
        const value: unknown = Reflect.get(target, prop, target);
        return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  const backend = new Proxy(memory, {
    get(target, prop) {
      if (prop === "steps") return (kind: string) => (kind === "fair" ? wrap(target.steps("fair")) : target.steps(kind as "mutex"));
      const value: unknown = Reflect.get(target, prop, target);
      return typeof value === "function" ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
  return { backend, memory, applied, answer };
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

  it("a waiting writer's grant with no time left is released once, not booked: the book cannot release what its next attempt (same owner) takes", async () => {
    const { backend, memory, applied, answer } = lateWriter();
    const locks = service(backend);
    const writer = locks.acquire("w", { kind: "fair", ttlMs: 60_000, waitMs: 60_000 });
    // The first grant was given back (it had ended on the server already); the retry, under the
    // same owner, is applied there and its answer held back over several of the book's rounds.
    const holder = async (): Promise<string | undefined> => (await memory.steps("fair").status("global:w"))?.holders[0]?.owner;
    let owner: string | undefined;
    try {
      await applied;
      owner = await holder();
      expect(owner).toBeDefined();
      await new Promise((r) => setTimeout(r, 4 * RETRY_MS));
    } finally {
      answer();
    }
    const lease = await writer;
    expect(lease.owner).toBe(owner);
    // Before: a round found no lease of that owner here (the attempt was in flight) and released it.
    expect(await holder()).toBe(owner);
    expect(locks.stats()).toMatchObject({ cleanups: 0, unsettled: 0, held: 1 });
    await locks.release(lease);
  });

  it("an owed release under an owner the book holds for a given-back grant replaces that entry: the lease's release is not forgotten", async () => {
    const { backend, inner, faults } = faultyBackend();
    const locks = service(backend);
    // A grant with no time left under the caller's owner, given back; the backend does not answer the release.
    faults.failReleases = 1_000_000;
    faults.grantMs = 0;
    expect(await locks.tryLock("a", { ttlMs: 60_000, owner: "o-1" })).toBeNull();
    expect(locks.stats().unsettled).toBe(1);
    // The same owner takes another lock, whose release fails too: the release is owed.
    faults.grantMs = undefined;
    const lease = (await locks.tryLock("b", { ttlMs: 60_000, owner: "o-1" }))!;
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect(lease.state).toBe("held");
    faults.failReleases = 0;
    // Before: the next round found "o-1" in use by that lease and dropped the entry; the lease stayed held.
    await until("the owed release is made", 5_000, () => lease.state === "released");
    expect(await inner.status("global:b")).toBeNull();
    expect(locks.stats()).toMatchObject({ unsettled: 0, held: 0 });
  });

  it("a keepalive lease whose owed release the book gives up on (pushed out) loses its keepalive and ends at its TTL", async () => {
    const { backend, inner, faults } = faultyBackend();
    const locks = service(backend);
    const lease = (await locks.tryLock("owed", { ttlMs: 1_000, keepalive: true }))!;
    faults.failReleases = 1_000_000;
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    expect(lease.keepalive).toBe(true);
    // MAX_UNSETTLED acquisitions whose replies are lost push the owed release out of the book.
    faults.loseAcquireReplies = MAX_UNSETTLED;
    const failed = await Promise.allSettled(Array.from({ length: MAX_UNSETTLED }, (_, i) => locks.tryLock(`k${i}`, { ttlMs: 60_000 })));
    expect(failed.every((r) => r.status === "rejected")).toBe(true);
    expect(locks.stats()).toMatchObject({ unsettled: MAX_UNSETTLED });
    expect(lease.keepalive).toBe(false);
    // Before: renewed every third of its TTL until the host stopped; now it ends at its TTL.
    await until("the lease ends", 10_000, () => lease.state === "lost");
    expect(await inner.status("global:owed")).toBeNull();
    faults.failReleases = 0;
  });

  it("a waiting writer's attempt that failed is given back until the backend answers: the error ends its wait, so its owner is not used again", async () => {
    const { backend, inner, faults } = faultyBackend();
    const locks = service(backend);
    // Applied, its reply lost; the first release by its owner fails too.
    faults.loseAcquireReplies = 1;
    faults.failReleases = 1;
    await expect(locks.acquire("w", { kind: "fair", ttlMs: 60_000, waitMs: 60_000 })).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    // Before: released once only, so the lock stayed held until its TTL (60 s).
    await until("the lock is released", 5_000, async () => (await inner.steps("fair").status("global:w")) === null);
    expect(locks.stats()).toMatchObject({ cleanups: 1, held: 0 });
  });
});
