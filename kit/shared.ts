// The atomic steps of the lock kinds beside the mutex: read/write locks and semaphores. Both are
// one primitive, a key with several holders: "shared" holders (a reader, a semaphore permit)
// up to a limit, or one "exclusive" holder (a writer), and a queue of waiting exclusive
// acquirers that shared acquisitions stand behind (writer preference, FIFO among writers).
// As with LockBackend, the lifecycle (waiting, renewal, loss, auto-release) lives above in the
// host; a backend only makes each step atomic on its server's clock.
import type { Acquired, Holder, ListRequest, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult, SharedMode } from "./common.js";
import type { SharedKind } from "./kinds.js";

/**
 * A lock kind beside the mutex (the rows of kit/kinds.ts with `shared`). Each kind has its own
 * namespace of names in the store: a read/write lock "a", a semaphore "a" and a mutex "a" are
 * three independent locks.
 */
export type { SharedKind } from "./kinds.js";

/** "shared": a reader or a semaphore permit; "exclusive": a writer (read/write locks only). */
export type { SharedMode } from "./common.js";

/** One atomic acquisition attempt on a read/write lock or a semaphore. */
export interface SharedAcquireRequest {
  /** Fully qualified lock name (scope applied), e.g. "billing:ledger". */
  readonly key: string;
  /** Random owner token, unique per acquisition; renew and release compare on it. */
  readonly owner: string;
  readonly ttlMs: number;
  readonly holder: Holder;
  readonly mode: SharedMode;
  /**
   * Most shared holders at once: a semaphore's permits N (1 to MAX_PERMITS); 0 for a read/write
   * lock's readers (unbounded). The key keeps the limit its holders took it with while any
   * holder is live: a shared request naming another one is refused with `limit` in the result.
   */
  readonly limit: number;
  /**
   * Exclusive mode only. 0: a try, which takes no place in the queue. Above 0: the caller is
   * waiting; when it cannot take the key now it keeps a place at the tail of the key's queue of
   * exclusive waiters (or refreshes the place it has) for `queueMs` from now, on the server's
   * clock. Each attempt of a waiter refreshes it; an expired place counts as absent.
   */
  readonly queueMs: number;
}

/** The outcome of a shared acquisition: never an error for contention. */
export type SharedAcquireResult =
  | Acquired
  | {
      readonly acquired: false;
      /** When the earliest live holder's lease ends (ms, server clock), when the step learned it. */
      readonly retryAfterMs?: number;
      /**
       * Set only when the request was refused because the key's live holders took it with
       * another limit: theirs. Nothing was changed.
       */
      readonly limit?: number;
    };

/** One live holder of a shared key, as status and list report it. */
export interface SharedHolderRecord {
  readonly owner: string;
  readonly mode: SharedMode;
  readonly fence: number;
  readonly holder: Holder;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** The TTL its current lease was set with (acquire or latest renew), ms. */
  readonly ttlMs: number;
  /** Remaining lease on the server's clock. */
  readonly ttlRemainingMs: number;
}

/** What the backend knows about a shared key. */
export interface SharedRecord {
  readonly key: string;
  readonly kind: SharedKind;
  /** The limit the live holders took the key with (a semaphore's N; 0 for read/write locks). */
  readonly limit: number;
  /** Live holders, in acquisition (fence) order. */
  readonly holders: readonly SharedHolderRecord[];
  /** Live places in the queue of exclusive waiters. */
  readonly queued: number;
}

/** One page of shared keys (see SharedSteps.list). */
export interface SharedPage {
  /** Keys with at least one live holder, in no promised order. */
  readonly records: readonly SharedRecord[];
  /** Pass it back for the next page; absent on the last one. */
  readonly cursor?: string;
}

/**
 * The atomic steps of one shared kind, in that kind's own namespace of names. Rules every
 * backend keeps (the contract suite in lockhost/testing checks them):
 *
 * - An exclusive acquisition succeeds only when the key has no live holder and either no live
 *   queue place or the requester's place is the queue's head; its own place is then dropped.
 * - A shared acquisition succeeds only when the key has no live exclusive holder, no live queue
 *   place (writer preference), fewer live shared holders than its limit (0: no bound), and,
 *   when live holders exist, the same limit as theirs.
 * - An owner that already holds the key is refused (not reentrant).
 * - A lease that ended and a queue place that expired count as absent.
 * - Every release, force-release and queue departure wakes the key's watchers (a departed
 *   writer may unblock readers). A force-release tells each removed holder's owner through
 *   LockBackend.onLost, as a mutex force-release does.
 */
export interface SharedSteps {
  readonly kind: SharedKind;
  /** One acquisition attempt (see SharedAcquireRequest). */
  acquire(req: SharedAcquireRequest): Promise<SharedAcquireResult>;
  /** Each request: sets the holder's lease to `ttlMs` from now if `owner` still holds `key`; "not_found" otherwise. */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  /** Removes `owner`'s hold on `key`: "released", or "not_found" when it holds none (never "mismatch"). */
  release(key: string, owner: string): Promise<ReleaseResult>;
  /** Drops `owner`'s queue place on `key`, if it has one (a waiter that gave up). */
  leaveQueue(key: string, owner: string): Promise<void>;
  /** The key's live holders and queue, or null when it has neither. */
  status(key: string): Promise<SharedRecord | null>;
  /** Removes every holder of `key` (its queue stays); resolves to how many there were. Fences stay. */
  forceRelease(key: string): Promise<number>;
  /** One page of keys with live holders, by name prefix (as LockBackend.list). */
  list(req: ListRequest): Promise<SharedPage>;
  /** As LockBackend.watch, for this kind's releases and queue departures. */
  watch(key: string, listener: () => void): ReleaseWatch;
}

export { MAX_PERMITS } from "./common.js";
