// The backend contract's basics, run through two LockServices (two hosts) on backends that
// log in as a least-privilege user (test/grants-*.test.ts): if a grant the docs list is
// missing, one of these steps fails with the backend's permission error.
import { expect } from "vitest";
import type { LockBackend } from "../../kit/backend.js";
import { permitSpec, READ, WRITE } from "../../kit/kinds.js";
import { LockService } from "../../host/locking/service.js";

/**
 * Acquire, renew, release, a wait woken by a release on the other host, status, list,
 * force-release, and every lock kind (mutex, fair mutex, read/write, semaphore, leader), on
 * two services over `a` and `b`. Closes the services (not the backends).
 * @param run a unique word for this run's lock names.
 */
export async function exerciseBasics(a: LockBackend, b: LockBackend, run: string): Promise<void> {
  // A long poll interval: a waiter that wakes in time was woken by the release notice.
  const one = new LockService(a, { node: "grants-a", waiting: { pollIntervalMs: 60_000 } });
  const two = new LockService(b, { node: "grants-b", waiting: { pollIntervalMs: 60_000 } });
  try {
    await one.ping();
    const key = `grants-${run}-mutex`;
    const lease = (await one.tryLock(key, { ttlMs: 10_000 }))!;
    expect(lease).not.toBeNull();
    expect(await two.tryLock(key, { ttlMs: 10_000 })).toBeNull();
    await one.renew(lease, 20_000);
    const status = await two.status(key);
    expect(status).toMatchObject({ held: true, kind: "mutex" });
    expect(status.holders[0]).toMatchObject({ fence: lease.fence, node: "grants-a" });
    expect((await two.list({ prefix: `global:grants-${run}` })).locks.map((l) => l.name)).toEqual([`global:${key}`]);

    // A waiter on the other host wakes on the release, long before its poll interval.
    const waiting = two.acquire(key, { ttlMs: 10_000, waitMs: 30_000 });
    await new Promise((r) => setTimeout(r, 200));
    const releasedAt = performance.now();
    await one.release(lease);
    const next = await waiting;
    expect(next.fence).toBeGreaterThan(lease.fence);
    // Without the notice it would wait for the holder's lease (20 s) or the poll (60 s).
    expect(performance.now() - releasedAt).toBeLessThan(10_000);

    // Force-release by the operator: the holder hears it lost.
    expect(await one.forceRelease(key)).toBe(1);
    expect((await one.status(key)).held).toBe(false);

    // Every kind.
    const fair = (await one.tryLock(`grants-${run}-fair`, { ttlMs: 10_000, fair: true }))!;
    expect(fair).not.toBeNull();
    await one.release(fair);
    const reader = (await one.try(`grants-${run}-rw`, { ttlMs: 10_000, ...READ }))!;
    const reader2 = (await two.try(`grants-${run}-rw`, { ttlMs: 10_000, ...READ }))!;
    expect(reader2).not.toBeNull();
    expect(await two.try(`grants-${run}-rw`, { ttlMs: 10_000, ...WRITE })).toBeNull();
    await one.release(reader);
    await two.release(reader2);
    const writer = (await two.try(`grants-${run}-rw`, { ttlMs: 10_000, ...WRITE }))!;
    expect(writer).not.toBeNull();
    await two.release(writer);
    const permits = [
      (await one.try(`grants-${run}-sem`, { ttlMs: 10_000, ...permitSpec(2) }))!,
      (await two.try(`grants-${run}-sem`, { ttlMs: 10_000, ...permitSpec(2) }))!,
    ];
    expect(permits.every((p) => p !== null)).toBe(true);
    expect(await one.try(`grants-${run}-sem`, { ttlMs: 10_000, ...permitSpec(2) })).toBeNull();
    expect((await one.status(`grants-${run}-sem`, { kind: "semaphore" })).holders).toHaveLength(2);
    expect(await one.forceRelease(`grants-${run}-sem`, { kind: "semaphore" })).toBe(2);
    const leader = await one.campaign(`grants-${run}-leader`, { ttlMs: 10_000, value: "me" });
    expect(await two.leader(`grants-${run}-leader`)).toMatchObject({ held: true, node: "grants-a", value: "me" });
    await leader.resign();
  } finally {
    await one.close({ closeBackend: false });
    await two.close({ closeBackend: false });
  }
}
