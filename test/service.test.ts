import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as S from "../abi/status.js";
import { globalKeyMatcher, qualify } from "../host/locking/scope.js";
import type { LockBackend } from "../kit/backend.js";
import { Lease, takeLeaseControl } from "../host/locking/lease.js";
import { checkRequest } from "../host/locking/request.js";
import { LockService, serviceCore } from "../host/locking/service.js";
import { acquireChecked, tryChecked } from "../host/locking/acquire.js";
import { MAX_NAME_BYTES } from "../host/locking/validate.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { sleep, until } from "./support/until.js";

let backend: MemoryBackend;
let locks: LockService;
beforeEach(() => {
  backend = new MemoryBackend();
  locks = new LockService(backend, { node: "node-a" });
});
afterEach(async () => {
  await locks.close();
});

describe("LockService", () => {
  it("acquires with an owner token and a fence, and reports contention as null", async () => {
    const lease = await locks.tryLock("orders", { ttlMs: 5_000 });
    expect(lease).not.toBeNull();
    expect(lease!.name).toBe("global:orders");
    expect(lease!.owner).toMatch(/^[0-9a-f-]{36}$/);
    expect(lease!.fence).toBe(1);
    expect(lease!.holder).toEqual({ plugin: "host", node: "node-a" });
    expect(await locks.tryLock("orders", { ttlMs: 5_000 })).toBeNull();
    await locks.release(lease!);
    expect((await locks.tryLock("orders", { ttlMs: 5_000 }))!.fence).toBe(2);
  });

  it("rejects bad keys and TTLs with INVALID_ARGUMENT naming the argument", async () => {
    await expect(locks.tryLock("", { ttlMs: 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: "key must not be empty" });
    await expect(locks.tryLock("x".repeat(S.MAX_KEY_BYTES + 1), { ttlMs: 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(locks.tryLock("é".repeat(S.MAX_KEY_BYTES / 2 + 1), { ttlMs: 1 })).rejects.toThrow(/bytes of UTF-8/);
    await expect(locks.tryLock("\ud800", { ttlMs: 1 })).rejects.toThrow(/lone surrogate/);
    await expect(locks.tryLock("k", { ttlMs: 0 })).rejects.toThrow("ttlMs must be > 0, got 0");
    await expect(locks.tryLock("k", { ttlMs: 1.5 })).rejects.toThrow(/ttlMs must be an integer/);
    await expect(locks.tryLock("k", { ttlMs: S.MAX_TTL_MS + 1 })).rejects.toThrow(/at most/);
    // A bad fair is refused like any other option: a rejection from every short form, never a throw.
    for (const call of [
      () => locks.tryLock("k", { ttlMs: 1_000, fair: "yes" as never }),
      () => locks.acquire("k", { ttlMs: 1_000, waitMs: 0, fair: 1 as never }),
      () => locks.withLock("k", () => undefined, { ttlMs: 1_000, fair: "no" as never }),
    ]) {
      await expect(call()).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("fair") });
    }
  });

  it("reports LOST when the lease ended, and never deletes the new holder's lock", async () => {
    const a = (await locks.tryLock("k", { ttlMs: 30, keepalive: false }))!;
    await new Promise((r) => setTimeout(r, 60));
    const b = (await locks.tryLock("k", { ttlMs: 5_000 }))!;
    await expect(locks.renew(a)).rejects.toMatchObject({ code: "LOST" });
    expect(a.state).toBe("lost");
    await expect(locks.release(a)).rejects.toMatchObject({ code: "LOST" });
    expect((await locks.status({ name: "global:k" })).held).toBe(true);
    await locks.release(b);
    await expect(locks.release(b)).rejects.toMatchObject({ code: "ALREADY_RELEASED" });
  });

  it("reports LOST on release after a force-release", async () => {
    const a = (await locks.tryLock("k", { ttlMs: 5_000 }))!;
    expect(await locks.forceRelease({ name: "global:k" })).toBe(1);
    await expect(locks.release(a)).rejects.toMatchObject({ code: "LOST" });
    expect(locks.heldCount).toBe(0);
  });

  it("shows status with holder, owner, fence and times", async () => {
    const a = (await locks.tryLock("k", { ttlMs: 5_000, scope: { plugin: "billing" } }))!;
    const s = await locks.status({ name: "billing:k" }, { owners: true });
    expect(s).toMatchObject({ held: true, name: "billing:k", kind: "mutex", holders: [{ owner: a.owner, fence: 1, plugin: "billing", node: "node-a" }] });
    expect(s.holders).toHaveLength(1);
    // Owner tokens only when asked for.
    expect((await locks.status({ name: "billing:k" })).holders[0]).not.toHaveProperty("owner");
    expect(await locks.status({ name: "billing:other" })).toEqual({ name: "billing:other", kind: "mutex", held: false, holders: [], limit: 0, queued: 0 });
  });

  it("releases everything it holds on close, then refuses with CLOSED", async () => {
    await locks.tryLock("a", { ttlMs: 5_000 });
    await locks.tryLock("b", { ttlMs: 5_000 });
    await locks.close({ closeBackend: false });
    expect(backend.size).toBe(0);
    await expect(locks.tryLock("c", { ttlMs: 1 })).rejects.toMatchObject({ code: "CLOSED" });
  });
});

describe("LockService close with acquisitions in flight", () => {
  it("rejects a tryLock still waiting on the backend with CLOSED and leaves nothing held", async () => {
    const { backend: slow, inner, faults } = faultyBackend();
    const service = new LockService(slow, { node: "node-a" });
    faults.acquireDelayMs = 100;
    const pending = service.tryLock("k", { ttlMs: 60_000 });
    const outcome = pending.then(
      (lease) => ({ lease }),
      (err: unknown) => ({ err }),
    );
    await service.close({ closeBackend: false });
    expect(await outcome).toMatchObject({ err: { code: "CLOSED" } });
    expect(inner.size).toBe(0);
    expect(service.heldCount).toBe(0);
    expect((await inner.acquire({ name: "global:k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } })).acquired).toBe(true);
  });

  it("refuses new tryLocks as soon as close() starts, while releases of held leases still work", async () => {
    const { backend: slow, inner, faults } = faultyBackend();
    const service = new LockService(slow, { node: "node-a" });
    const held = (await service.tryLock("held", { ttlMs: 60_000 }))!;
    faults.acquireDelayMs = 100;
    const pending = service.tryLock("slow", { ttlMs: 60_000 }).catch((err: unknown) => err);
    const closing = service.close({ closeBackend: false });
    await expect(service.tryLock("late", { ttlMs: 60_000 })).rejects.toMatchObject({ code: "CLOSED" });
    await service.release(held); // still open for existing leases while closing
    expect(held.state).toBe("released");
    await closing;
    expect(await pending).toMatchObject({ code: "CLOSED" });
    expect(inner.size).toBe(0);
    await expect(service.tryLock("after", { ttlMs: 1_000 })).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("gives back a lock whose acquire was applied but whose reply was lost, so it does not sit until its TTL", async () => {
    const { backend: lossy, inner, faults } = faultyBackend();
    const service = new LockService(lossy, { node: "node-a" });
    faults.loseAcquireReplies = 1;
    await expect(service.tryLock("orphan", { ttlMs: 60_000 })).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    await vi.waitFor(() => expect(inner.size).toBe(0));
    expect(await service.tryLock("orphan", { ttlMs: 60_000 })).not.toBeNull();
    await service.close();
  });

  it("with releaseTimeoutMs, tries a release the backend failed again until it succeeds", async () => {
    const { backend: flaky, inner, faults } = faultyBackend();
    const service = new LockService(flaky, { node: "node-a" });
    const lease = (await service.tryLock("flaky", { ttlMs: 60_000 }))!;
    faults.failReleases = 3;
    expect(await service.close({ closeBackend: false, releaseTimeoutMs: 30_000 })).toEqual([]);
    expect(faults.failReleases).toBe(0);
    expect(lease.state).toBe("released");
    expect(inner.size).toBe(0);
  });

  it("with releaseTimeoutMs, gives up when it is spent and names each lock left (lock, kind, fence); without it, one attempt", async () => {
    const { backend: down, inner, faults } = faultyBackend();
    const service = new LockService(down, { node: "node-a" });
    const a = (await service.tryLock("down-a", { ttlMs: 60_000 }))!;
    const b = (await service.tryLock({ name: "p:down-b" }, { ttlMs: 60_000, kind: "semaphore", permits: 2 }))!;
    faults.failReleases = Number.MAX_SAFE_INTEGER;
    const failed = await service.close({ closeBackend: false, releaseTimeoutMs: 300 });
    expect(failed.map((e) => e.details).sort((x, y) => String(x!.lock).localeCompare(String(y!.lock)))).toEqual([
      { lock: "global:down-a", kind: "mutex", fence: a.fence },
      { lock: "p:down-b", kind: "semaphore", fence: b.fence },
    ]);
    for (const e of failed)
      expect(e).toMatchObject({
        code: "BACKEND_UNAVAILABLE",
        message: expect.stringMatching(/^lock (global:down-a \(mutex|p:down-b \(semaphore), fence \d+\): release failed \(injected fault\)$/),
      });
    // Tried more than once each.
    expect(Number.MAX_SAFE_INTEGER - faults.failReleases).toBeGreaterThan(2);
    expect(inner.size).toBeGreaterThan(0); // the mutex (the store counts mutex keys)

    const once = faultyBackend();
    const other = new LockService(once.backend, { node: "node-b" });
    await other.tryLock("down-c", { ttlMs: 60_000 });
    once.faults.failReleases = Number.MAX_SAFE_INTEGER;
    expect(await other.close({ closeBackend: false })).toHaveLength(1);
    expect(Number.MAX_SAFE_INTEGER - once.faults.failReleases).toBe(1);
    await expect(new LockService(new MemoryBackend(), { node: "n" }).close({ releaseTimeoutMs: Infinity })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});

describe("full lock names", () => {
  it("inspects and force-releases a maximal key in a maximal plugin scope", async () => {
    const plugin = "x".repeat(64);
    const key = "k".repeat(S.MAX_KEY_BYTES);
    const lease = (await locks.tryLock(key, { ttlMs: 60_000, scope: { plugin } }))!;
    expect(lease.name).toBe(`${plugin}:${key}`);
    expect(await locks.status({ name: lease.name }, { owners: true })).toMatchObject({ held: true, name: lease.name, holders: [{ owner: lease.owner }] });
    expect(await locks.forceRelease({ name: lease.name })).toBe(1);
    expect(await locks.status({ name: lease.name })).toEqual({ name: lease.name, kind: "mutex", held: false, holders: [], limit: 0, queued: 0 });
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "LOST" });
  });

  it("still rejects a name longer than any scope prefix plus MAX_KEY_BYTES", async () => {
    const name = "n".repeat(MAX_NAME_BYTES + 1);
    await expect(locks.status({ name })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^name is \d+ bytes of UTF-8; the maximum is \d+$/),
    });
    await expect(locks.forceRelease({ name })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(locks.status({ name: "" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: "name must not be empty" });
    expect(MAX_NAME_BYTES).toBe(S.MAX_KEY_BYTES + 65);
  });
});

describe("scopes", () => {
  it("namespaces plugin keys and global keys apart", () => {
    expect(qualify("k", { plugin: "billing" })).toBe("billing:k");
    expect(qualify("k", "global")).toBe("global:k");
  });

  it("matches global-key patterns literally except for *", () => {
    const m = globalKeyMatcher(["ledger", "jobs/*", "a.b"]);
    expect(m("ledger")).toBe(true);
    expect(m("ledger2")).toBe(false);
    expect(m("jobs/")).toBe(true);
    expect(m("jobs/x:y/z")).toBe(true);
    expect(m("a.b")).toBe(true);
    expect(m("axb")).toBe(false);
    expect(globalKeyMatcher([])("anything")).toBe(false);
  });
});

describe("LockService lifecycle (memory, faults injected)", () => {
  const keepalive = { renewAtRatio: 0.5, maxRetries: 3, safetyMarginRatio: 0.1, batchWindowMs: 5 };

  it("retries a keepalive renewal that failed on I/O, and keeps the lock", async () => {
    const { backend: faulty, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n", keepalive });
    try {
      faults.failRenewals = 2;
      // A TTL of seconds: the renewal comes at half of it and must be confirmed 10 % before its
      // end, so the retries have 1.2 s, not the 160 ms a 400 ms TTL left them, which a loaded
      // machine's late timers used up (the lease was lost before its third attempt ran).
      const lease = (await service.tryLock("k", { ttlMs: 3_000, keepalive: true }))!;
      await until("two renewals confirmed after two failed ones", 20_000, () => service.stats().renewalsOk >= 2 || lease.state !== "held");
      expect(lease.state).toBe("held");
      const s = service.stats();
      expect(s.renewalsFailed).toBe(2);
      expect(s.renewalsOk).toBeGreaterThanOrEqual(2);
      expect(s.lost).toBe(0);
    } finally {
      await service.close();
    }
  });

  it("declares a lock lost when no renewal is confirmed before the safety margin, and gives it back", async () => {
    const { backend: faulty, inner, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n", keepalive });
    try {
      faults.failRenewals = 1_000;
      // Seconds, as above: the retries end at ~3.2 s, 0.8 s before the lease would (with 400 ms
      // they ended 80 ms before it, which a loaded machine's late timers could eat).
      const lease = (await service.tryLock("k", { ttlMs: 4_000, keepalive: true }))!;
      const t0 = performance.now();
      const reason = await new Promise<unknown>((resolve) => lease.signal.addEventListener("abort", () => resolve(lease.signal.reason)));
      const at = performance.now() - t0;
      // Lost before the lease would end (4 s), after the retries (≥ 2 s in: the first renewal).
      expect(at).toBeGreaterThan(1_990);
      expect(at).toBeLessThan(4_000);
      expect(reason).toMatchObject({ code: "LOST", message: expect.stringMatching(/could not be confirmed/) });
      expect(service.stats()).toMatchObject({ renewalsFailed: 4, lost: 1, held: 0 });
      // Given back by owner token, so the key is free before its TTL.
      await until("the lost lease given back", 3_000, async () => (await inner.status("global:k")) === null);
    } finally {
      await service.close();
    }
  });

  it("turns keepalive on and off for a held lease", async () => {
    // 2 s, renewed twice: a TTL of 200 ms left the renewal 80 ms, which a loaded machine can eat.
    const lease = (await locks.tryLock("k", { ttlMs: 2_000 }))!;
    const renewed = locks.stats().renewalsOk;
    locks.setKeepalive(lease, true);
    expect(locks.stats().keepalive).toBe(1);
    await until("two renewals", 20_000, () => locks.stats().renewalsOk >= renewed + 2 || lease.state !== "held");
    expect(lease.state).toBe("held");
    locks.setKeepalive(lease, false);
    expect(locks.stats().keepalive).toBe(0);
    await locks.release(lease);
  });

  it("rejects bad waitMs with INVALID_ARGUMENT, and waitMs 0 on a held key with TIMEOUT at once", async () => {
    await expect(locks.acquire("k", { ttlMs: 1_000, waitMs: -1 })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/^waitMs/),
    });
    await expect(locks.acquire("k", { ttlMs: 1_000, waitMs: 1.5 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(locks.acquire("k", { ttlMs: 1_000, waitMs: S.MAX_WAIT_MS + 1 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    const held = (await locks.tryLock("k", { ttlMs: 5_000 }))!;
    await expect(locks.acquire("k", { ttlMs: 1_000, waitMs: 0 })).rejects.toMatchObject({ code: "TIMEOUT", details: { waitedMs: 0 } });
    await locks.release(held);
    const free = await locks.acquire("k", { ttlMs: 1_000, waitMs: 0 });
    await locks.release(free);
  });

  it("ends waits with CLOSED when the service closes, and leaves nothing queued", async () => {
    const other = new LockService(backend, { node: "node-b" });
    const held = (await other.tryLock("k", { ttlMs: 30_000 }))!;
    const waits = [locks.acquire("k", { ttlMs: 1_000, waitMs: 30_000 }), locks.acquire("k", { ttlMs: 1_000, waitMs: 30_000 })];
    await sleep(50);
    expect(locks.stats().waiters).toBe(2);
    const closed = locks.close({ closeBackend: false });
    for (const w of waits) await expect(w).rejects.toMatchObject({ code: "CLOSED" });
    await closed;
    expect(locks.stats().waiters).toBe(0);
    await other.release(held);
    await other.close({ closeBackend: false });
  });

  it("restore returns the lease this service already holds for that owner", async () => {
    const lease = (await locks.tryLock("k", { ttlMs: 5_000 }))!;
    expect(await locks.restore("k", lease.owner)).toBe(lease);
    expect(locks.stats().held).toBe(1);
  });

  it("restore asks the backend even for a lease it holds: one released elsewhere is lost, not restored", async () => {
    const backend = new MemoryBackend();
    const mine = new LockService(backend, { node: "a" });
    const other = new LockService(backend, { node: "b" });
    try {
      const lease = (await mine.tryLock("k", { ttlMs: 5_000 }))!;
      // Another process takes the lock over by its owner token and releases it.
      await other.release(await other.restore("k", lease.owner));
      await expect(mine.restore("k", lease.owner)).rejects.toMatchObject({ code: "NOT_FOUND" });
      expect(lease.state).toBe("lost");
      expect(mine.stats().held).toBe(0);
      // Someone else holds it now: OWNERSHIP_MISMATCH, and still no lease.
      const theirs = (await other.tryLock("k", { ttlMs: 5_000 }))!;
      await expect(mine.restore("k", lease.owner)).rejects.toMatchObject({ code: "OWNERSHIP_MISMATCH" });
      await other.release(theirs);
    } finally {
      await mine.close({ closeBackend: false });
      await other.close();
    }
  });

  it("counts acquisitions, contention, waits and time waited", async () => {
    const held = (await locks.tryLock("k", { ttlMs: 5_000 }))!;
    expect(await locks.tryLock("k", { ttlMs: 5_000 })).toBeNull();
    setTimeout(() => void locks.release(held), 100);
    const got = await locks.acquire("k", { ttlMs: 5_000, waitMs: 5_000 });
    const s = locks.stats();
    expect(s).toMatchObject({ acquisitions: 2, held: 1, waits: 1, waitTimeouts: 0, waiters: 0 });
    expect(s.contended).toBeGreaterThanOrEqual(2);
    expect(s.waitTimeMsTotal).toBeGreaterThan(80);
    await locks.release(got);
  });

  it("does not lose a released lease, nor tell its onLost observers anything; its signal aborts as released, not LOST", async () => {
    const lease = (await locks.tryLock("k", { ttlMs: 100 }))!;
    let told = false;
    lease.onLost(() => (told = true));
    const early = lease.signal;
    await locks.release(lease);
    await sleep(200);
    expect(told).toBe(false);
    expect(lease.state).toBe("released");
    for (const signal of [early, lease.signal]) {
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toMatchObject({ name: "LockhostError", code: "ALREADY_RELEASED", details: { reason: "released" } });
    }
    expect(locks.stats().lost).toBe(0);
  });
});

describe("LockService lifecycle options", () => {
  const make = (opts: object): LockService => new LockService(new MemoryBackend(), { node: "n", ...opts });

  it("are validated when the service is made, naming the option at fault", () => {
    expect(() => make({ keepalive: { renewAtRatio: 1 } })).toThrow(
      expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^keepalive\.renewAtRatio/) }),
    );
    expect(() => make({ keepalive: { renewAtRatio: 0.9, safetyMarginRatio: 0.2 } })).toThrow(
      /^keepalive\.safetyMarginRatio .* less than 1 - renewAtRatio \(0\.1\)/,
    );
    expect(() => make({ keepalive: { maxRetries: -1 } })).toThrow(/^keepalive\.maxRetries must be an integer from 0 to 100/);
    expect(() => make({ keepalive: { batchWindowMs: 1.5 } })).toThrow(/^keepalive\.batchWindowMs/);
    expect(() => make({ waiting: { pollIntervalMs: 0 } })).toThrow(/^waiting\.pollIntervalMs must be an integer from 10/);
  });

  it("default what is left out, including fields given as undefined", async () => {
    const service = make({ keepalive: { renewAtRatio: undefined, maxRetries: 0 }, waiting: {} });
    // Seconds: with no retry, a 200 ms TTL left the one renewal ~80 ms, which load can eat.
    const lease = (await service.tryLock("k", { ttlMs: 2_000, keepalive: true }))!;
    await until("two renewals", 20_000, () => service.stats().renewalsOk >= 2 || lease.state !== "held");
    expect(lease.state).toBe("held");
    await service.close();
  });
});

describe("LockService.forceRelease of its own lease", () => {
  it("marks the lease lost at once, so its holder hears of it before any renewal", async () => {
    const lease = (await locks.tryLock("k", { ttlMs: 30_000 }))!;
    expect(await locks.forceRelease({ name: "global:k" })).toBe(1);
    expect(lease.state).toBe("lost");
    expect(lease.signal.aborted).toBe(true);
    expect(lease.lostReason?.message).toMatch(/force-released by an operator/);
    expect(locks.stats()).toMatchObject({ held: 0, lost: 1 });
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "LOST" });
  });
});

describe("LockService races and failures (review findings)", () => {
  /** The shared memory backend behind a wrapper whose steps' status() and watch().ready are slow. */
  function slowBackend(over: { statusDelayMs?: number; readyDelayMs?: number }): LockBackend {
    const { backend: base } = faultyBackend(backend);
    return {
      ...base,
      steps: (kind) => {
        const steps = base.steps(kind);
        return {
          ...steps,
          status: async (k) => {
            await sleep(over.statusDelayMs ?? 0);
            return steps.status(k);
          },
          watch: (k, l) => {
            const w = steps.watch(k, l);
            return { ready: sleep(over.readyDelayMs ?? 0), close: w.close };
          },
        };
      },
      close: async () => undefined,
    };
  }

  it("restores a lock with the TTL its lease was set with, however old the lock is", async () => {
    // Older than its TTL, renewed in time: 400 ms apart leaves a loaded machine 600 ms of slack.
    const lease = (await locks.tryLock("k", { ttlMs: 1_000 }))!;
    for (let i = 0; i < 3; i++) {
      await sleep(400);
      await locks.renew(lease);
    }
    const other = new LockService(backend, { node: "node-b" });
    const restored = await other.restore("k", lease.owner);
    expect(restored.ttlMs).toBe(1_000);
    await other.renew(restored, 1_500);
    const again = new LockService(backend, { node: "node-c" });
    expect((await again.restore("k", lease.owner)).ttlMs).toBe(1_500);
    await again.close({ closeBackend: false });
    await other.close({ closeBackend: false });
  });

  it("a lease whose release failed is still watched: its observers hear when it runs out", async () => {
    const { backend: faulty, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n" });
    try {
      const lease = (await service.tryLock("k", { ttlMs: 100, keepalive: false }))!;
      const signal = lease.signal;
      faults.failReleases = 1;
      await expect(service.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect(lease.state).toBe("held");
      await until("the lease runs out", 5_000, () => lease.state !== "held");
      expect(lease.state).toBe("lost");
      expect(signal.aborted).toBe(true);
    } finally {
      await service.close();
    }
  });

  for (const keepalive of [false, true]) {
    it(`hands out no restored lease once close() has begun (keepalive ${keepalive})`, async () => {
      const lease = (await locks.tryLock("k", { ttlMs: 60_000 }))!;
      const other = new LockService(slowBackend({ statusDelayMs: 50 }), { node: "node-b" });
      const restoring = other.restore("k", lease.owner, { keepalive });
      const closed = other.close();
      await expect(restoring).rejects.toMatchObject({ code: "CLOSED" });
      await closed;
      expect(other.heldCount).toBe(0);
      // Nothing was taken over: the original holder still has its lock.
      expect((await locks.status({ name: "global:k" })).held).toBe(true);
    });
  }

  it("gives concurrent restores of one owner the same lease", async () => {
    const lease = (await locks.tryLock("k", { ttlMs: 60_000 }))!;
    const other = new LockService(slowBackend({ statusDelayMs: 20 }), { node: "node-b" });
    const [x, y] = await Promise.all([other.restore("k", lease.owner), other.restore("k", lease.owner)]);
    expect(x).toBe(y);
    expect(other.heldCount).toBe(1);
    await other.close();
  });

  it("bounds the release subscription by waitMs and the abort signal", async () => {
    const held = (await locks.tryLock("k", { ttlMs: 60_000 }))!;
    // Bounds far below the subscription's 20 s, so what they show is that it was not waited for.
    const other = new LockService(slowBackend({ readyDelayMs: 20_000 }), { node: "node-b" });
    try {
      let t0 = performance.now();
      await expect(other.acquire("k", { ttlMs: 1_000, waitMs: 50 })).rejects.toMatchObject({ code: "TIMEOUT" });
      expect(performance.now() - t0).toBeLessThan(10_000);
      const controller = new AbortController();
      t0 = performance.now();
      const waiting = other.acquire("k", { ttlMs: 1_000, waitMs: 10_000, signal: controller.signal });
      setTimeout(() => controller.abort(new Error("gave up")), 10);
      await expect(waiting).rejects.toThrow("gave up");
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      await other.close();
      await locks.release(held);
    }
  });
});

describe("a lease lasts no longer than the backend granted", () => {
  it("ends a lease granted for less than its TTL at the grant's end here", async () => {
    const { backend: faulty, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n" });
    try {
      faults.grantMs = 100;
      const sentAt = performance.now();
      const lease = (await service.tryLock("k", { ttlMs: 5_000, keepalive: false }))!;
      expect(lease.deadline).toBeLessThanOrEqual(performance.now() + 100);
      expect(lease.deadline).toBeGreaterThanOrEqual(sentAt + 100);
      const signal = lease.signal;
      await until("the grant ends", 5_000, () => lease.state !== "held");
      expect(lease.state).toBe("lost");
      expect(signal.aborted).toBe(true);
    } finally {
      await service.close();
    }
  });

  it("keeps a keepalive lease granted for less than its TTL by renewing it before the grant ends", async () => {
    const { backend: faulty, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n" });
    try {
      // A grant of 1.5 s for a TTL of 10 s: renewed at half the grant, not the TTL (a 150 ms grant
      // left the renewal ~60 ms, which load can eat).
      faults.grantMs = 1_500;
      const lease = (await service.tryLock("k", { ttlMs: 10_000, keepalive: true }))!;
      await until("a renewal", 20_000, () => service.stats().renewalsOk >= 1 || lease.state !== "held");
      expect(lease.state).toBe("held");
      expect(service.stats().renewalsOk).toBeGreaterThanOrEqual(1);
      await service.release(lease);
    } finally {
      await service.close();
    }
  });

  it("hands no lease with no time left to this host's next waiter, who tries again after a backoff", async () => {
    const { backend: faulty, inner, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n" });
    try {
      const held = (await service.tryLock("k", { ttlMs: 5_000 }))!;
      let got: Lease | undefined;
      const waiting = service.acquire("k", { ttlMs: 5_000, waitMs: 3_000 }).then((l) => (got = l));
      await sleep(20);
      faults.grantMs = 0;
      await service.release(held);
      await sleep(200);
      expect(got).toBeUndefined();
      expect(service.stats().handoffs).toBe(0);
      await until("the grant with no time left given back", 5_000, async () => (await inner.steps("mutex").status("k")) === null);
      // Given back and tried again every ~50 ms, not at once on its own give-back's release notice.
      const contended = service.stats().contended;
      expect(contended).toBeGreaterThanOrEqual(1);
      expect(contended).toBeLessThan(20);
      faults.grantMs = undefined;
      const lease = await waiting;
      expect(lease.state).toBe("held");
      await service.release(lease);
    } finally {
      await service.close();
    }
  });

  it("a waiter whose first attempt got a grant with no time left tries again only after the backoff", async () => {
    const { backend: faulty, faults } = faultyBackend();
    const tries: number[] = [];
    const counted: LockBackend = {
      ...faulty,
      steps: (kind) => {
        const steps = faulty.steps(kind);
        return { ...steps, acquire: (req) => (tries.push(performance.now()), steps.acquire(req)) };
      },
    };
    const service = new LockService(counted, { node: "n" });
    try {
      faults.grantMs = 0;
      const waiting = service.acquire("k", { ttlMs: 5_000, waitMs: 1_000 }).catch((err: unknown) => err);
      expect(await waiting).toMatchObject({ code: "TIMEOUT" });
      expect(tries.length).toBeGreaterThanOrEqual(2);
      for (let i = 1; i < tries.length; i++) expect(tries[i]! - tries[i - 1]!).toBeGreaterThanOrEqual(20);
    } finally {
      await service.close();
    }
  });

  for (const grantMs of [0, -5]) {
    it(`gives back a grant with no time left (${grantMs} ms) and answers contended`, async () => {
      const { backend: faulty, inner, faults } = faultyBackend();
      const service = new LockService(faulty, { node: "n" });
      try {
        faults.grantMs = grantMs;
        expect(await service.tryLock("k", { ttlMs: 5_000 })).toBeNull();
        expect(service.stats().contended).toBe(1);
        expect(service.heldCount).toBe(0);
        await until("the grant given back", 5_000, async () => (await inner.steps("mutex").status("k")) === null);
        faults.grantMs = undefined;
        const lease = (await service.tryLock("k", { ttlMs: 5_000 }))!;
        expect(lease.state).toBe("held");
        await service.release(lease);
      } finally {
        await service.close();
      }
    });
  }
});

describe("releaseIfHeld that fails (review finding)", () => {
  it("stops keeping the lease alive, so it ends at its TTL as the caller is told", async () => {
    const { backend: faulty, inner, faults } = faultyBackend();
    const service = new LockService(faulty, { node: "n" });
    try {
      const lease = (await service.tryLock("k", { ttlMs: 200, keepalive: true }))!;
      faults.failReleases = 1;
      expect(await service.releaseIfHeld(lease)).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect(lease.keepalive).toBe(false);
      await new Promise((r) => setTimeout(r, 450));
      expect(await inner.status("global:k")).toBeNull();
    } finally {
      await service.close();
    }
  });
});

describe("pre-checked requests", () => {
  it("checkRequest qualifies the key and fills in the defaults once", () => {
    // Keepalive is on by default (DEFAULT_KEEPALIVE), no owner means one is minted per attempt, and a mutex is the default kind.
    expect(checkRequest("k", { ttlMs: 10 })).toEqual({
      name: "global:k",
      key: "k",
      scope: "global",
      ttlMs: 10,
      plugin: "host",
      keepalive: true,
      owner: undefined,
      spec: { kind: "mutex" },
      mode: "exclusive",
      limit: 0,
    });
    expect(checkRequest("k", { ttlMs: 10, scope: { plugin: "billing" }, keepalive: true })).toMatchObject({
      name: "billing:k",
      plugin: "billing",
      keepalive: true,
    });
    expect(checkRequest("k", { ttlMs: 10, scope: { plugin: "lockhost" }, plugin: "report" }).plugin).toBe("report");
  });

  it("checkRequest rejects bad keys, TTLs, scopes and plugins with INVALID_ARGUMENT", () => {
    expect(() => checkRequest("", { ttlMs: 10 })).toThrow("key must not be empty");
    expect(() => checkRequest("k", { ttlMs: 0 })).toThrow("ttlMs must be > 0, got 0");
    // A plugin scope named "global" would alias the global namespace.
    expect(() => checkRequest("k", { ttlMs: 10, scope: { plugin: "global" } })).toThrow(/scope must be "global" or \{ plugin \}/);
    expect(() => checkRequest("k", { ttlMs: 10, scope: { plugin: "Bad Name" } })).toThrow(/got "Bad Name"/);
    expect(() => checkRequest("k", { ttlMs: 10, scope: { plugin: "a:b" } })).toThrow(/scope must be/);
    expect(() => checkRequest("k", { ttlMs: 10, plugin: "" })).toThrow(/plugin must be a plugin name/);
  });

  it("tryLock and acquire refuse a bad scope before the backend is asked", async () => {
    await expect(locks.tryLock("k", { ttlMs: 10, scope: { plugin: "global" } })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    await expect(locks.acquire("k", { ttlMs: 10, waitMs: 0, plugin: "No" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(locks.stats()).toMatchObject({ acquisitions: 0, contended: 0 });
  });

  it("tryChecked and acquireChecked (the internal door, serviceCore) take, contend and wait like tryLock and acquire", async () => {
    const core = serviceCore(locks);
    const request = checkRequest("orders", { ttlMs: 5_000, scope: { plugin: "billing" } });
    const lease = await tryChecked(core, request);
    expect(lease).toMatchObject({ name: "billing:orders", fence: 1, holder: { plugin: "billing", node: "node-a" } });
    expect(await tryChecked(core, request)).toBeNull();
    await expect(acquireChecked(core, request, 0)).rejects.toMatchObject({ code: "TIMEOUT" });
    const waiting = acquireChecked(core, request, 5_000);
    await locks.release(lease!);
    const next = await waiting;
    expect(next.fence).toBe(2);
    const aborted = new AbortController();
    const cut = acquireChecked(core, request, 5_000, aborted.signal);
    aborted.abort(new Error("stop"));
    await expect(cut).rejects.toThrow("stop");
    await locks.close();
    await expect(tryChecked(core, request)).rejects.toMatchObject({ code: "CLOSED" });
    await expect(acquireChecked(core, request, 0)).rejects.toMatchObject({ code: "CLOSED" });
    // The door is not on the public class.
    expect(Object.getOwnPropertyNames(LockService.prototype).filter((name) => name.endsWith("Checked"))).toEqual([]);
  });
});

describe("Lease is read-only to its users", () => {
  it("refuses writes to its changing fields, which only the service moves", async () => {
    const lease = (await locks.tryLock("ro", { ttlMs: 5_000 }))!;
    const writable = lease as unknown as Record<string, unknown>;
    for (const field of ["state", "deadline", "expiresAtMs", "keepalive", "lostReason"]) {
      expect(() => {
        writable[field] = "changed";
      }).toThrow(TypeError);
    }
    expect(lease.state).toBe("held");
    const deadline = lease.deadline;
    locks.setKeepalive(lease, true);
    expect(lease.keepalive).toBe(true);
    await locks.renew(lease);
    expect(lease.deadline).toBeGreaterThan(deadline);
    await locks.release(lease);
    expect(lease.state).toBe("released");
  });

  it("hands its control to host/locking only: a second taker gets INTERNAL", () => {
    expect(() => takeLeaseControl()).toThrow(expect.objectContaining({ code: "INTERNAL" }));
  });

  it("is built from one object of named fields", () => {
    const lease = new Lease({
      name: "global:k",
      owner: "o",
      fence: 7,
      ttlMs: 100,
      holder: { plugin: "host", node: "n" },
      acquiredAtMs: 1,
      expiresAtMs: 101,
      deadline: 50,
      keepalive: false,
    });
    expect(lease).toMatchObject({ name: "global:k", owner: "o", fence: 7, ttlMs: 100, acquiredAtMs: 1 });
    expect([lease.state, lease.expiresAtMs, lease.deadline, lease.keepalive, lease.lostReason]).toEqual(["held", 101, 50, false, undefined]);
  });
});
