// The lock calls on a held lock's lifetime: lock.renew and lock.release (and what proclaim
// shares with renew: a step run quietly on a handle's lock).
import type { AbiReply } from "../guest-reply.js";
import type { GuestLocks, Held } from "../guest-locks.js";

const OK: AbiReply = Object.freeze({ result: 0 });

/** `lock.renew`: OK; ttlMs 0 reuses the acquisition TTL. */
export function renewLock(locks: GuestLocks, handle: number, ttlMs: number): Promise<AbiReply> {
  return quietly(locks, handle, ({ lease }) => locks.service.renew(lease, ttlMs === 0 ? lease.ttlMs : ttlMs));
}

/**
 * Runs `step` on a handle's lock and answers OK. A loss the step finds is told to the guest by
 * its -LOST, not again by callback (renew, proclaim).
 */
export async function quietly(locks: GuestLocks, handle: number, step: (held: Held) => Promise<unknown>): Promise<AbiReply> {
  const held = locks.handles.get(handle);
  held.quiet = true;
  try {
    await step(held);
  } finally {
    held.quiet = false;
  }
  return OK;
}

/**
 * `lock.release`: OK (-LOST when the lease had ended: nothing is deleted). When the backend
 * fails, the handle stays valid so the guest can retry (and auto-release still runs).
 */
export async function releaseLock(locks: GuestLocks, handle: number): Promise<AbiReply> {
  const held = locks.handles.get(handle);
  const { lease } = held;
  held.quiet = true;
  try {
    await locks.service.release(lease);
  } finally {
    if (lease.state !== "held") locks.forget(handle, held);
    else held.quiet = false;
  }
  return OK;
}
