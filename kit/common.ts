// The shapes every kind of lock's steps share (kit/steps.ts, and the mutex's single-record
// steps, kit/mutex.ts): a successful acquisition, who holds a lock, a renewal and its outcome, a
// release's outcome, a listing request, and a release subscription.

/** An acquisition that succeeded (of a mutex or of a queue kind). */
export interface Acquired {
  readonly acquired: true;
  /**
   * Strictly increasing per key: above every fence handed out on the key before it, also after
   * expiry (a queue-kind key's counter is advanced by acquisitions of either mode, so a writer's
   * fence is above every earlier reader's and writer's).
   */
  readonly fence: number;
  /** Server clock, ms since epoch. */
  readonly acquiredAtMs: number;
  /** Server clock, ms since epoch. */
  readonly expiresAtMs: number;
}

/** Who holds a lock: written by acquire, shown by status. */
export interface Holder {
  /** The plugin that took the lock, or "host" for host-side callers. */
  readonly plugin: string;
  /** The configured node name of the host process. */
  readonly node: string;
  /**
   * The machine the lock was taken on (os.hostname()), as a distributed backend records it
   * beside the configurable node name; absent in acquire requests and where not recorded.
   */
  readonly hostname?: string;
}

/** One renewal of a batch (see KindSteps.renewMany). */
export interface RenewRequest {
  readonly name: string;
  readonly owner: string;
  readonly ttlMs: number;
}

/** The outcome of a compare-and-set renewal. */
export type RenewResult = { readonly ok: true; readonly expiresAtMs: number } | { readonly ok: false; readonly reason: "not_found" | "mismatch" };

/** The outcome of a compare-and-delete release. */
export type ReleaseResult = "released" | "not_found" | "mismatch";

/** What KindSteps.list is asked for: one page of held locks. */
export interface ListRequest {
  /** Only locks whose full name starts with this (e.g. "billing:"); every lock when absent. */
  readonly prefix?: string;
  /** Where the previous page ended (its `cursor`); the first page when absent. */
  readonly cursor?: string;
  /** At most this many locks. A page may hold fewer, even none, and still have a next one. */
  readonly limit: number;
}

/** A subscription made by KindSteps.watch. */
export interface ReleaseWatch {
  /**
   * Settles (never rejects) once releases are being delivered to the listener: a waiter
   * retries after it, so a release between its failed attempt and the subscription is not
   * missed.
   */
  readonly ready: Promise<void>;
  /** Stops delivering to this listener; the last watcher of a key unsubscribes. Idempotent. */
  close(): void;
}

/** The most permits a semaphore can have. */
export const MAX_PERMITS = 1_000_000;

/** How a holder takes a key: "shared" (a reader, a semaphore permit) or "exclusive" (a mutex holder, a writer). */
export type LockMode = "shared" | "exclusive";
