// The lock calls that read: lock.state, lock.fence, lock.owner (a handle's) and lock.status (a
// key's, as JSON in the ABI's snake_case).
import { STATE_RELEASED } from "../../../abi/status.js";
import { LockhostError } from "../../../kit/errors.js";
import { KINDS, MUTEX, QUEUE_KINDS, type QueueKind } from "../../../kit/kinds.js";
import { qualify } from "../../locking/scope.js";
import { status, type LockStatus } from "../../locking/status.js";
import { stateOf } from "../abi-args.js";
import { textReply, type AbiReply } from "../guest-reply.js";
import type { GuestLocks } from "../guest-locks.js";

/**
 * `lock.state`: STATE_HELD, STATE_LOST or STATE_RELEASED. A released handle answers how it
 * ended until its slot is reused (then INVALID_HANDLE). Handle 0 is the schedule's lock
 * during a scheduled call.
 */
export function lockState(locks: GuestLocks, handle: number): AbiReply {
  if (handle === 0) return { result: stateOf(locks.scheduleLease(false)) };
  const entry = locks.handles.lookup(handle);
  return { result: entry.live ? stateOf(entry.value.lease) : (entry.tombstone ?? STATE_RELEASED) };
}

/** `lock.fence`: the fencing token, or -LOST once the lease has ended. */
export function lockFence(locks: GuestLocks, handle: number): AbiReply {
  return { result: locks.current(handle).fence };
}

/** `lock.owner`: the owner token, or -LOST once the lease has ended. */
export function lockOwner(locks: GuestLocks, handle: number): AbiReply {
  const lease = locks.current(handle);
  return { result: lease.owner.length, text: lease.owner };
}

/** `lock.status`: the key's status JSON (without the owner token); a read/write lock's or semaphore's with FLAG_RW / FLAG_SEMAPHORE. */
export async function lockStatus(locks: GuestLocks, key: string, flags: number): Promise<AbiReply> {
  const scope = locks.scopeOf(key, flags);
  const kind = queueKindOfFlags(flags);
  // A guest reads `held`; the operator's hint of locks held elsewhere would cost it more reads.
  const s = await status(locks.core, qualify(key, scope), kind ?? MUTEX.kind, { ...(kind !== undefined && { kind }), elsewhere: false });
  if (kind !== undefined) return textReply(queueStatusJson(s));
  const one = s.holders[0];
  // ABI v1's mutex status: the holder's fields at the top.
  const json = JSON.stringify(
    one !== undefined
      ? {
          key: s.name,
          held: true,
          holder: { plugin: one.plugin, node: one.node },
          fence: one.fence,
          acquired_at_ms: one.acquiredAtMs,
          expires_at_ms: one.expiresAtMs,
          ttl_remaining_ms: one.ttlRemainingMs,
          ttl_ms: one.ttlMs,
        }
      : { key: s.name, held: false },
  );
  return textReply(json);
}

/** The kind a status call's flags ask for (each kind's status flag): undefined for the mutex; two at once is INVALID_ARGUMENT. */
function queueKindOfFlags(flags: number): QueueKind | undefined {
  const asked = QUEUE_KINDS.filter((kind) => (flags & KINDS[kind].statusFlag) !== 0);
  if (asked.length > 1)
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `flags may hold ${QUEUE_KINDS.map((kind) => KINDS[kind].statusFlagName).join(" or ")}, not ${asked.length === 2 ? "both" : "several"}`,
    );
  return asked[0];
}

/** The status JSON of a read/write lock or semaphore, in the ABI's snake_case. */
function queueStatusJson(s: LockStatus): string {
  return JSON.stringify({
    key: s.name,
    kind: s.kind,
    held: s.held,
    limit: s.limit,
    queued: s.queued,
    holders: s.holders.map((h) => ({
      mode: h.mode,
      fence: h.fence,
      holder: { plugin: h.plugin, node: h.node },
      acquired_at_ms: h.acquiredAtMs,
      expires_at_ms: h.expiresAtMs,
      ttl_remaining_ms: h.ttlRemainingMs,
      ttl_ms: h.ttlMs,
    })),
  });
}
