// The LockBackend interface: what a store must provide. For every lock kind it serves, the
// atomic steps of kit/steps.ts (one family: a mutex, a read/write lock, a semaphore, a fair
// mutex and a leader are all taken, renewed, released and listed through the same interface);
// everything with a lifecycle (validation, scopes, handles, renewal, waiting) lives above it in
// LockService, so a backend stays a set of small files. Expected outcomes are results; only
// failures throw (a LockhostError with code BACKEND_UNAVAILABLE).
import type { LockKind } from "./kinds.js";
import type { DelegationSteps } from "./delegation.js";
import type { KindSteps } from "./steps.js";

export type { Acquired, Holder, ListRequest, LockMode, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "./common.js";
export type { AcquireRequest, AcquireResult, HandoffResult, HolderRecord, KindSteps, LockState, LockStatePage } from "./steps.js";
export type { LockPage, LockRecord, MutexAcquireRequest, MutexAcquireResult, MutexHandoffResult, MutexStore } from "./mutex.js";
export type { DelegatedGrant, DelegationSteps } from "./delegation.js";

/** A lock store. */
export interface LockBackend {
  /** The backend's name, as its descriptor says it: "memory", "redis", "pg", "etcd". */
  readonly name: string;
  /** Whether several host processes share this backend's locks. */
  readonly distributed: boolean;
  /**
   * The lock kinds it serves (rows of kit/kinds.ts), in table order; the host refuses the others
   * with a coded error that names the backend. A mutex-only store says ["mutex"].
   */
  readonly kinds: readonly LockKind[];
  /**
   * Optional: true when a lock whose holder dies without a word (its process killed) still lasts
   * until its lease's end (Redis: the key's TTL). Observers and campaigners then need to look
   * again only at that end, and the host reads no election's leader on a timer. Left out (false),
   * a lock may end at any moment with no notice (PostgreSQL: a dead session frees its advisory
   * locks at once), so while an election is observed or contested the host reads its leader
   * every `[locking.waiting] election_poll_ms`.
   */
  readonly endsOnlyAtExpiry?: boolean;
  /**
   * The steps of `kind`, one of `kinds` (the host asks once per kind and keeps them). Each kind
   * has its own namespace of names. A mutex kept in one record per key (a faster script) is
   * served through kit/mutex.ts's MutexSteps.
   */
  steps(kind: LockKind): KindSteps;
  /**
   * Optional: the steps of lock delegation (kit/delegation.ts), for the mutex. Absent, the host
   * never delegates on this backend (every acquisition goes to it, as before).
   */
  readonly delegation?: DelegationSteps;
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
   * Resolves once the store answers a trivial request (health checks, the host's start). Rejects
   * with BACKEND_UNAVAILABLE; with `details.permanent` = 1 when retrying cannot help (a wrong
   * password, a missing database, a host name that does not resolve), so a host can fail fast.
   */
  ping(): Promise<void>;
  /** Frees connections and timers. */
  close(): Promise<void>;
}
