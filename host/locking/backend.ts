// The LockBackend interface: the few atomic steps a store must provide. Everything with a
// lifecycle (validation, scopes, handles, renewal, waiting) lives above it in LockService,
// so a backend stays a small file. Expected outcomes are results; only failures throw
// (a LockhostError with code BACKEND_UNAVAILABLE).

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
  | {
      readonly acquired: true;
      /** Strictly increasing per key across holders, also after expiry. */
      readonly fence: number;
      /** Server clock, ms since epoch. */
      readonly acquiredAtMs: number;
      /** Server clock, ms since epoch. */
      readonly expiresAtMs: number;
    }
  | { readonly acquired: false };

/** The outcome of a compare-and-set renewal. */
export type RenewResult =
  | { readonly ok: true; readonly expiresAtMs: number }
  | { readonly ok: false; readonly reason: "not_found" | "mismatch" };

/** The outcome of a compare-and-delete release. */
export type ReleaseResult = "released" | "not_found" | "mismatch";

/** What the backend knows about a held lock. */
export interface LockRecord {
  readonly key: string;
  readonly owner: string;
  readonly fence: number;
  readonly holder: Holder;
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** Remaining lease on the server's clock. */
  readonly ttlRemainingMs: number;
}

/** The atomic steps of a lock store. */
export interface LockBackend {
  /** "memory", "redis" or "pg". */
  readonly kind: string;
  /** Whether several host processes share this backend's locks. */
  readonly distributed: boolean;
  /** Takes `key` if it is free (or its lease ended), bumping its fence counter. */
  acquire(req: AcquireRequest): Promise<AcquireResult>;
  /** Sets the lease to `ttlMs` from now, only if `owner` still holds `key`. */
  renew(key: string, owner: string, ttlMs: number): Promise<RenewResult>;
  /** Deletes the lock, only if `owner` still holds `key`. */
  release(key: string, owner: string): Promise<ReleaseResult>;
  /** The current holder of `key`, or null when free. */
  status(key: string): Promise<LockRecord | null>;
  /** Deletes the lock whoever holds it; true when there was one. Fence counters stay. */
  forceRelease(key: string): Promise<boolean>;
  /** Frees connections and timers. */
  close(): Promise<void>;
}
