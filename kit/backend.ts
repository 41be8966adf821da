// The LockBackend interface: the few atomic steps a store must provide. Everything with a
// lifecycle (validation, scopes, handles, renewal, waiting) lives above it in LockService,
// so a backend stays a small file. Expected outcomes are results; only failures throw
// (a LockhostError with code BACKEND_UNAVAILABLE).
import type { Acquired, Holder, ListRequest, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "./common.js";
import type { SharedKind, SharedSteps } from "./shared.js";

export type { Acquired, Holder, ListRequest, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "./common.js";

/** One atomic acquisition attempt. */
export interface AcquireRequest {
  /** Fully qualified lock name (scope applied), e.g. "billing:nightly". */
  readonly key: string;
  /** Random owner token; renew and release compare-and-set on it. */
  readonly owner: string;
  readonly ttlMs: number;
  readonly holder: Holder;
}

/** The outcome of an acquisition: never an error for contention. */
export type AcquireResult =
  | Acquired
  | {
      readonly acquired: false;
      /**
       * How long until the current holder's lease ends, in ms on the server's clock, when the
       * backend learned it in the same step; a waiter retries then at the latest. Absent when
       * unknown.
       */
      readonly retryAfterMs?: number;
    };

/** What the backend knows about a held lock. */
export interface LockRecord {
  readonly key: string;
  readonly owner: string;
  readonly fence: number;
  readonly holder: Holder;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** The TTL the current lease was set with (acquire or the latest renew), ms. */
  readonly ttlMs: number;
  /** Remaining lease on the server's clock. */
  readonly ttlRemainingMs: number;
  /**
   * What the holder proclaimed (LockBackend.proclaim: a leader's value); absent until it does,
   * and cleared by every acquisition, so a new holder never shows its predecessor's.
   */
  readonly value?: string;
}

/** One page of held locks. */
export interface LockPage {
  /** Live locks only (an expired record is not listed), in no promised order. */
  readonly locks: readonly LockRecord[];
  /** Pass it back for the next page; absent on the last one. Opaque: each backend has its own. */
  readonly cursor?: string;
}

/** The atomic steps of a lock store. */
export interface LockBackend {
  /** "memory", "redis" or "pg". */
  readonly kind: string;
  /** Whether several host processes share this backend's locks. */
  readonly distributed: boolean;
  /**
   * Optional: true when a lock whose holder dies without a word (its process killed) still lasts
   * until its lease's end (Redis: the key's TTL). Observers and campaigners then need to look
   * again only at that end, and the host reads no election's leader on a timer. Left out (false),
   * a lock may end at any moment with no notice (PostgreSQL: a dead session frees its advisory
   * locks at once), so while an election is observed or contested the host reads its leader
   * every `[locking.waiting] election_poll_ms`.
   */
  readonly endsOnlyAtExpiry?: boolean;
  /** Takes `key` if it is free (or its lease ended), bumping its fence counter. */
  acquire(req: AcquireRequest): Promise<AcquireResult>;
  /** Sets the lease to `ttlMs` from now, only if `owner` still holds `key`. */
  renew(key: string, owner: string, ttlMs: number): Promise<RenewResult>;
  /**
   * Renews many locks in one round trip (one pipeline or script on Redis, one statement per
   * session on PostgreSQL): the renewal manager sends every renewal due in a tick through it.
   * Resolves to one result per request, in order; rejects (for the whole batch) only when
   * the backend failed, and then any subset of the renewals may have been applied.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  /** Deletes the lock, only if `owner` still holds `key`. */
  release(key: string, owner: string): Promise<ReleaseResult>;
  /** The current holder of `key`, or null when free. */
  status(key: string): Promise<LockRecord | null>;
  /** Deletes the lock whoever holds it; true when there was one. Fence counters stay. */
  forceRelease(key: string): Promise<boolean>;
  /**
   * One page of the locks held now, without reading every key of the store in one go (Redis:
   * SCAN over the key prefix, on every master of a cluster; PostgreSQL: the holders table).
   * A lock taken or released while the pages are read may or may not be listed.
   */
  list(req: ListRequest): Promise<LockPage>;
  /**
   * Calls `listener` (with no arguments, possibly more than once, possibly spuriously) when
   * `key` may have become free on any host sharing this backend: released or force-released
   * (Redis pub/sub, PostgreSQL LISTEN/NOTIFY, in-process for memory). Expiry need not be
   * signalled: waiters also wake at the `retryAfterMs` a contended acquire reported, and poll
   * as a fallback. Never throws; a watch that cannot be set up resolves `ready` anyway, and
   * the waiters fall back to polling.
   */
  watch(key: string, listener: () => void): ReleaseWatch;
  /**
   * Optional: calls `listener` with a lock's owner token when a lock this backend instance took
   * was released or force-released by someone else (another process through restore, an
   * operator), so its holder hears of the loss at once instead of at its next renewal or its
   * TTL. Calls `missed` (if given) when notices may have been lost in transit: the connection
   * that carries them dropped and came back. The host then asks `status` about every lock it
   * holds. Both may be called spuriously.
   */
  onLost?(listener: (owner: string) => void, missed?: () => void): void;
  /**
   * Optional: the steps of read/write locks ("rw") or semaphores ("semaphore"), each kind in its
   * own namespace of names (kit/shared.ts). Called once per kind by each lock service; a
   * backend without it serves mutexes only, and the host refuses the other kinds with a coded
   * error that names the backend.
   */
  shared?(kind: SharedKind): SharedSteps;
  /**
   * Optional (leader election): stores `value` in the record of `key` (LockRecord.value) only if
   * `owner` still holds it, and then wakes the key's watchers as a release does (the same
   * channel), so observers of an election hear of a new leader and of a changed value, not only
   * of a release. Resolves to false when `owner` does not hold `key`; nothing is changed then.
   * A backend without it serves no elections (the host refuses them with a coded error).
   */
  proclaim?(key: string, owner: string, value: string): Promise<boolean>;
  /**
   * Resolves once the store answers a trivial request (health checks, the host's start). Rejects
   * with BACKEND_UNAVAILABLE; with `details.permanent` = 1 when retrying cannot help (a wrong
   * password, a missing database, a host name that does not resolve), so a host can fail fast.
   */
  ping(): Promise<void>;
  /** Frees connections and timers. */
  close(): Promise<void>;
}

