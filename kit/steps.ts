// The atomic steps of one lock kind: the one family every backend implements for every kind it
// serves (LockBackend.steps). A lock has holders, "shared" ones (readers, semaphore permits) up
// to a limit or one "exclusive" one (a mutex's holder, a writer), and, for the kinds whose row
// queues exclusive waiters (read/write locks, the fair mutex), a queue of waiting exclusive
// acquirers that shared acquisitions stand behind (writer preference, FIFO among writers).
// As ever, the lifecycle (waiting, renewal, loss, auto-release) lives above in the host; a
// backend only makes each step atomic on its server's clock.
import type { Acquired, Holder, ListRequest, LockMode, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "./common.js";
import type { LockKind } from "./kinds.js";

/** One atomic acquisition attempt, of any kind. */
export interface AcquireRequest {
  /** Fully qualified lock name (scope applied), e.g. "billing:ledger". */
  readonly name: string;
  /** Random owner token, unique per acquisition; renew and release compare on it. */
  readonly owner: string;
  readonly ttlMs: number;
  readonly holder: Holder;
  /** The kind's row says which modes it has; a mutex is always "exclusive". */
  readonly mode: LockMode;
  /**
   * Most shared holders at once: a semaphore's permits N (1 to MAX_PERMITS); 0 for every other
   * kind (unbounded readers). The lock keeps the limit its holders took it with while any holder
   * is live: a shared request naming another one is refused with `limit` in the result.
   */
  readonly limit: number;
  /**
   * Exclusive mode of a kind whose row queues exclusive waiters, else 0. 0: a try, which takes no
   * place in the queue. Above 0: the caller is waiting; when it cannot take the lock now it keeps
   * a place at the tail of the lock's queue (or refreshes the place it has) for `queueMs` from now,
   * on the server's clock. Each attempt of a waiter refreshes it; an expired place counts as absent.
   */
  readonly queueMs: number;
}

/** The outcome of an acquisition: never an error for contention. */
export type AcquireResult =
  | Acquired
  | {
      readonly acquired: false;
      /** When the earliest live holder's lease ends (ms from now, server clock), when the step learned it. */
      readonly retryAfterMs?: number;
      /**
       * Set only when the request was refused because the lock's live holders took it with
       * another limit: theirs. Nothing was changed.
       */
      readonly limit?: number;
    };

/**
 * What a handoff did (KindSteps.handoff): the holder's release, and when it happened, the next
 * owner's acquisition, made in the same atomic step.
 */
export type HandoffResult<R = AcquireResult> = { readonly released: "released"; readonly next: R } | { readonly released: Exclude<ReleaseResult, "released"> };

/** One live holder of a lock, as status and list report it. */
export interface HolderRecord {
  readonly owner: string;
  readonly mode: LockMode;
  readonly fence: number;
  readonly holder: Holder;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** The TTL its current lease was set with (acquire or latest renew), ms. */
  readonly ttlMs: number;
  /** Remaining lease on the server's clock. */
  readonly ttlRemainingMs: number;
  /**
   * What the holder proclaimed (KindSteps.proclaim: a leader's value); absent until it does,
   * and cleared by every acquisition, so a new holder never shows its predecessor's.
   */
  readonly value?: string;
}

/** What the backend knows about a lock of one kind (KindSteps.status, list). */
export interface LockState {
  /** Fully qualified lock name, as the requests give it. */
  readonly name: string;
  readonly kind: LockKind;
  /** The limit the live holders took the lock with (a semaphore's N; 0 for the other kinds). */
  readonly limit: number;
  /** Live holders, in acquisition (fence) order. */
  readonly holders: readonly HolderRecord[];
  /** Live places in the queue of exclusive waiters (0 for a kind that does not queue). */
  readonly queued: number;
}

/** One page of locks (see KindSteps.list). */
export interface LockStatePage {
  /** Locks with at least one live holder, in no promised order. */
  readonly records: readonly LockState[];
  /** Pass it back for the next page; absent on the last one. Opaque: each backend has its own. */
  readonly cursor?: string;
}

/**
 * The atomic steps of one kind, in that kind's own namespace of names: a read/write lock "a", a
 * semaphore "a" and a mutex "a" are independent locks. Rules every backend keeps (the contract
 * suite in lockhost/testing checks them):
 *
 * - An exclusive acquisition succeeds only when the lock has no live holder and either no live
 *   queue place or the requester's place is the queue's head; its own place is then dropped.
 * - A shared acquisition succeeds only when the lock has no live exclusive holder, no live queue
 *   place (writer preference), fewer live shared holders than its limit (0: no bound), and,
 *   when live holders exist, the same limit as theirs.
 * - An owner that already holds the lock is refused (not reentrant).
 * - A lease that ended and a queue place that expired count as absent.
 * - Every fence is above every fence handed out on the name before, across modes, expiry and
 *   force-release.
 * - Every release, force-release and queue departure wakes the lock's watchers (a departed
 *   writer may unblock readers). A release or force-release by anyone but the holder tells the
 *   removed holders' owners through LockBackend.onLost.
 */
export interface KindSteps {
  readonly kind: LockKind;
  /** One acquisition attempt (see AcquireRequest). */
  acquire(req: AcquireRequest): Promise<AcquireResult>;
  /**
   * Each request: sets the holder's lease to `ttlMs` from now if `owner` still holds `name`. One
   * round trip for the batch (the renewal manager sends every renewal due in a tick through it).
   * Resolves to one result per request, in order; rejects (for the whole batch) only when the
   * backend failed, and then any subset may have been applied.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  /** Removes `owner`'s hold on `name`: "released"; "not_found" or "mismatch" (someone else holds it) when it holds none. */
  release(name: string, owner: string): Promise<ReleaseResult>;
  /**
   * Optional, for a kind whose row says `handsOffLocally` (the mutex): `release(name, owner)` and,
   * only if it released, `acquire(next)` for `next.name` === `name`, as one atomic step (Redis: one
   * script, one round trip), so the lock passes from one holder of this host to its next local
   * waiter without ever being free: nobody else can take it in between, and its watchers are not
   * woken (it was never free). The next owner gets a fence above the released holder's, as any
   * acquisition does. A backend without it is served by a release, then an acquisition.
   */
  handoff?(name: string, owner: string, next: AcquireRequest): Promise<HandoffResult>;
  /** Drops `owner`'s queue place on `name`, if it has one (a waiter that gave up); nothing for a kind that does not queue. */
  leaveQueue(name: string, owner: string): Promise<void>;
  /** The lock's live holders and queue, or null when it has neither. */
  status(name: string): Promise<LockState | null>;
  /** Removes every holder of `name` (its queue stays); resolves to how many there were. Fences stay. */
  forceRelease(name: string): Promise<number>;
  /**
   * One page of the locks with live holders, without reading every key of the store in one go
   * (Redis: SCAN over the key prefix, on every master of a cluster; PostgreSQL: the holders
   * table). A lock taken or released while the pages are read may or may not be listed.
   */
  list(req: ListRequest): Promise<LockStatePage>;
  /**
   * Calls `listener` (with no arguments, possibly more than once, possibly spuriously) when
   * `name` may have become free on any host sharing this backend: released, force-released, a
   * queue place left, a value proclaimed (Redis pub/sub, PostgreSQL LISTEN/NOTIFY, in-process
   * for memory). Expiry need not be signalled: waiters also wake at the `retryAfterMs` a
   * contended acquire reported, and poll as a fallback. Never throws; a watch that cannot be set
   * up resolves `ready` anyway, and the waiters fall back to polling.
   */
  watch(name: string, listener: () => void): ReleaseWatch;
  /**
   * Optional (leader election, on the kind whose row says `elects`): stores `value` in the
   * holder's record (HolderRecord.value) only if `owner` still holds `name`, and then wakes the
   * lock's watchers as a release does, so observers hear of a changed value, not only of a
   * release. Resolves to false when `owner` does not hold `name`; nothing is changed then.
   */
  proclaim?(name: string, owner: string, value: string): Promise<boolean>;
}

export { MAX_PERMITS } from "./common.js";
