// The host-side record of one advisory lock on one session. Advisory locks are re-entrant
// per session, so PostgreSQL cannot tell two callers sharing a session apart: these records
// do. A session keeps at most one per advisory id, from the moment an acquire is sent until
// the lock is unlocked, and nobody sends pg_try_advisory_lock for an id that has one.
import type { AdvisoryKey } from "./key-hash.js";
import type { Timed } from "../../../kit/deadline-queue.js";

/**
 * - "acquiring": the acquire statement is in flight (the server may already hold the lock);
 * - "held": acquired, with a host deadline in the expiry queue;
 * - "checking": past its host deadline, a statement asks whether another host renewed the
 *   lease by owner (then "held" again, with a later deadline) or unlocks it ("releasing");
 * - "releasing": an unlock is in flight (release, expiry, or cleanup after a failed acquire).
 * A record leaves its session's map when its unlock is answered (or its caller stopped
 * waiting: the unlock still goes out, ahead of anything sent later on that session) or when
 * the session ends.
 */
export type HeldLockState = "acquiring" | "held" | "checking" | "releasing";

/** One lock a session holds or is about to hold or release. */
export class HeldLock implements Timed {
  state: HeldLockState = "acquiring";
  /** performance.now() by which the lease ends: from when the acquire (or last renew) was sent. */
  deadline = Infinity;
  heapIndex = -1;
  /** The fence handed out with the lock (once "held"): names this holding in control messages. */
  fence = 0;
  /** The lease's end on the server's clock as this host last set it (ms since the epoch). */
  expiresAtMs = 0;
  /** The statement in flight ("acquiring", "checking", "releasing"); may reject: callers waiting on it ignore how it ends. */
  busy: Promise<unknown> | undefined;

  constructor(
    /** The fully qualified lock name. */
    readonly key: string,
    /** The owner token the lock was acquired with. */
    readonly owner: string,
    readonly advisory: AdvisoryKey,
  ) {}
}
