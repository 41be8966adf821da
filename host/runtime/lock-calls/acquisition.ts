// The lock calls that take a lock: lock.try, lock.acquire (and their read, write and permit
// forms) and lock.restore. The key comes checked from the boundary (lock-ops.ts); the request
// goes through the service's internal door (GuestLocks.core) straight to the steps (acquire.ts).
import { FLAG_GLOBAL, FLAG_KEEP, FLAG_KEEPALIVE, TRY_CONTENDED } from "../../../abi/status.js";
import { LockhostError, toLockhostError } from "../../../kit/errors.js";
import { flaggedSpec, KINDS, MUTEX, type LockSpec } from "../../../kit/kinds.js";
import { acquireChecked, tryChecked } from "../../locking/acquire.js";
import { kindName } from "../../locking/kinds.js";
import type { Lease } from "../../locking/lease.js";
import { restoreChecked } from "../../locking/restore.js";
import { qualify } from "../../locking/scope.js";
import { validateTtl, validateWaitMs } from "../../locking/validate.js";
import type { AbiReply } from "../guest-reply.js";
import type { GuestLocks, WaitLimit } from "../guest-locks.js";

/** `lock.try` (key and flags checked by the boundary, lock-ops.ts): a handle, TRY_CONTENDED, or throws. */
export async function tryLock(locks: GuestLocks, key: string, ttlMs: number, flags: number, spec: LockSpec = MUTEX): Promise<AbiReply> {
  const epoch = locks.epoch;
  // FLAG_FAIR on a mutex's try: the fair mutex (the kind table says which flag picks which kind).
  spec = flaggedSpec(spec, flags);
  locks.checkRoom();
  const lease = await tryChecked(locks.core, locks.request(key, ttlMs, flags, spec));
  // The note becomes the guest's last_error: contention is no error, but says whose key it is.
  if (!lease) return { result: TRY_CONTENDED, text: contendedNote(key, flags, locks.policy.plugin, spec) };
  return { result: await locks.adopt(lease, flags, epoch, true) };
}

/**
 * `lock.acquire`: a handle, or -TIMEOUT when the key stayed held for `waitMs` (the message
 * says how long the guest waited). A wait longer than `limit.budgetMs` (what is left of the
 * call's time limit) is cut to it, so the guest gets -TIMEOUT while its call can still return
 * instead of being stopped.
 */
export async function acquireLock(
  locks: GuestLocks,
  key: string,
  ttlMs: number,
  waitMs: number,
  flags: number,
  limit?: WaitLimit,
  spec: LockSpec = MUTEX,
): Promise<AbiReply> {
  const epoch = locks.epoch;
  spec = flaggedSpec(spec, flags);
  const signal = locks.signal;
  locks.checkRoom();
  const request = locks.request(key, ttlMs, flags, spec);
  validateWaitMs(waitMs);
  locks.checkWait(waitMs);
  const budget = waitBudget(waitMs, limit);
  const cut = waitMs > budget;
  let lease: Lease;
  try {
    lease = await acquireChecked(locks.core, request, cut ? budget : waitMs, signal);
  } catch (err) {
    const e = toLockhostError(err);
    if (!cut || e.code !== "TIMEOUT") throw e;
    throw new LockhostError(
      "TIMEOUT",
      `${e.message}; waitMs ${waitMs} was cut to ${budget} ms so the call can return before its time limit of ${limit!.callTimeoutMs} ms`,
      { details: { ...e.details, waitMs: budget } },
    );
  }
  return { result: await locks.adopt(lease, flags, epoch, true) };
}

/** The longest a wait may last within the call's time limit (`limit`), else `waitMs` itself. */
export function waitBudget(waitMs: number, limit: WaitLimit | undefined): number {
  return limit ? Math.max(0, Math.floor(limit.budgetMs)) : waitMs;
}

/**
 * `lock.restore`: a handle for a lock taken elsewhere, given its owner token. `ttlMs` 0
 * keeps the lock's current lease length. -NOT_FOUND when nobody holds the key,
 * -OWNERSHIP_MISMATCH when another owner does, -ALREADY_RELEASED when this host released
 * that owner's lock. A lock this guest already has a handle for gets that handle back.
 */
export async function restoreLock(locks: GuestLocks, key: string, owner: string, ttlMs: number, flags: number): Promise<AbiReply> {
  const epoch = locks.epoch;
  const scope = locks.scopeOf(key, flags);
  const keepalive = (flags & FLAG_KEEPALIVE) !== 0;
  // 0 keeps the lock's lease length; anything else must be a valid TTL.
  if (ttlMs !== 0) validateTtl(ttlMs);
  // A lease this host already holds (another guest's, maybe) is shared, not this call's to undo.
  const shared = locks.core.held.get(owner) !== undefined;
  const options = { scope, keepalive, ...(ttlMs !== 0 && { ttlMs }) };
  const lease = await restoreChecked(locks.core, { name: qualify(key, scope), kind: MUTEX.kind }, owner, options);
  for (const [handle, held] of locks.handles.entries()) {
    if (held.lease !== lease) continue;
    // One lock, one handle: a second handle would let auto-release free a kept one.
    if ((flags & FLAG_KEEP) !== 0) held.keep = true;
    return { result: handle };
  }
  return { result: await locks.adopt(lease, flags, epoch, !shared) };
}

/** What last_error says after a contended lock.try: the full lock name the guest could not take. */
function contendedNote(key: string, flags: number, plugin: string, spec: LockSpec): string {
  const name = qualify(key, (flags & FLAG_GLOBAL) !== 0 ? "global" : { plugin });
  return `CONTENDED: ${KINDS[spec.kind].isDefault ? `lock ${name}` : kindName(spec.kind, name)} is held by another owner`;
}
