// The lock calls of leader election: lock.campaign and lock.try_campaign, lock.proclaim,
// lock.resign and lock.leader. A leadership is a lease of the leader kind (keepalive on) whose
// handle the guest holds like any other; its Leadership is kept beside it for proclaim and resign.
import { TRY_CONTENDED } from "../../../abi/status.js";
import { LockhostError, toLockhostError } from "../../../kit/errors.js";
import { LEADER } from "../../../kit/kinds.js";
import { closedError } from "../../locking/core.js";
import { campaign, validateLeaderValue, type Leadership } from "../../locking/election.js";
import type { Lease } from "../../locking/lease.js";
import { readLeader } from "../../locking/leader-watch.js";
import { qualify } from "../../locking/scope.js";
import { validateWaitMs } from "../../locking/validate.js";
import { textReply, type AbiReply } from "../guest-reply.js";
import type { GuestLocks, WaitLimit } from "../guest-locks.js";
import { waitBudget } from "./acquisition.js";
import { quietly, releaseLock } from "./renew-release.js";

/**
 * `lock.campaign` (`waitMs` > 0) and `lock.try_campaign` (0: TRY_CONTENDED while another
 * leads): a handle for the leadership of election `key` (the key in the leader kind, kept
 * alive), proclaiming `value`. The wait is cut to the call's time limit as acquire's is.
 */
export async function campaignLock(
  locks: GuestLocks,
  key: string,
  value: string,
  ttlMs: number,
  waitMs: number,
  flags: number,
  limit?: WaitLimit,
): Promise<AbiReply> {
  const epoch = locks.epoch;
  locks.checkRoom();
  // An election's lock key is its name (election.ts electionKey), checked at the boundary.
  const request = locks.request(key, ttlMs, flags, LEADER, true);
  validateLeaderValue(value);
  validateWaitMs(waitMs);
  locks.checkWait(waitMs);
  const budget = waitBudget(waitMs, limit);
  let leadership: Leadership;
  try {
    if (locks.core.life.closing) throw closedError();
    leadership = await campaign(locks.core, key, request, value, Math.min(waitMs, budget), locks.signal);
  } catch (err) {
    const e = toLockhostError(err);
    if (waitMs === 0 && e.code === "TIMEOUT") return { result: TRY_CONTENDED, text: `CONTENDED: election ${request.name} has another leader` };
    throw e;
  }
  const { lease } = leadership;
  locks.leaderships.set(lease, leadership);
  return { result: await locks.adopt(lease, flags, epoch, true) };
}

/** `lock.proclaim`: OK, or -LOST when the guest no longer leads (the handle is then lost). */
export function proclaimLock(locks: GuestLocks, handle: number, value: string): Promise<AbiReply> {
  return quietly(locks, handle, (held) => leadershipOf(locks, handle, held.lease).proclaim(value));
}

/** `lock.resign`: `lock.release` of a leadership handle. */
export function resignLock(locks: GuestLocks, handle: number): Promise<AbiReply> {
  leadershipOf(locks, handle, locks.handles.get(handle).lease);
  return releaseLock(locks, handle);
}

/** `lock.leader`: who leads election `key` now, as JSON in the ABI's snake_case. */
export async function leaderOf(locks: GuestLocks, key: string, flags: number): Promise<AbiReply> {
  const scope = locks.scopeOf(key, flags);
  const l = await readLeader(locks.core, key, qualify(key, scope));
  return textReply(
    JSON.stringify(l.held ? { key, held: true, node: l.node, plugin: l.plugin, value: l.value, term: l.term, since_ms: l.sinceMs } : { key, held: false }),
  );
}

function leadershipOf(locks: GuestLocks, handle: number, lease: Lease): Leadership {
  const leadership = locks.leaderships.get(lease);
  if (!leadership) throw new LockhostError("INVALID_HANDLE", `handle ${handle} is lock ${lease.name}, not a leadership (lock.campaign)`);
  return leadership;
}
