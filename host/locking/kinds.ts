// The lock kinds a LockService serves (mutex, read/write lock, semaphore) and the few steps the
// lifecycle needs of each kind's store: renew, release, watch, and whether an owner still holds
// a key. Every job of host/locking (renewal, release, waiting, loss checks) goes through these,
// so the lifecycle is written once for every kind; a mutex's steps are the backend's own.
import { LockhostError } from "../../kit/errors.js";
import type { LockBackend, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "../../kit/backend.js";
import type { SharedKind, SharedMode, SharedSteps } from "../../kit/shared.js";

/** What a lease holds: a mutex, a read/write lock or a semaphore permit. */
export type LockKind = "mutex" | SharedKind;

/** How an acquisition takes its key. */
export type LockSpec =
  | { readonly kind: "mutex" }
  | { readonly kind: "rw"; readonly mode: SharedMode }
  | { readonly kind: "semaphore"; readonly permits: number };

/** A mutex: the default of every acquisition. */
export const MUTEX: LockSpec = Object.freeze({ kind: "mutex" });
/** A read lock and a write lock. */
export const READ: LockSpec = Object.freeze({ kind: "rw", mode: "shared" });
export const WRITE: LockSpec = Object.freeze({ kind: "rw", mode: "exclusive" });

/** The mode a spec takes its key in: a writer or a mutex exclusive, a reader or a permit shared. */
export function modeOf(spec: LockSpec): SharedMode {
  return spec.kind === "rw" ? spec.mode : spec.kind === "semaphore" ? "shared" : "exclusive";
}

/** The steps of one kind's store that the lifecycle uses. */
export interface KindSteps {
  renew(key: string, owner: string, ttlMs: number): Promise<RenewResult>;
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  release(key: string, owner: string): Promise<ReleaseResult>;
  watch(key: string, listener: () => void): ReleaseWatch;
  /** Whether `owner` still holds `key` (after loss notices may have been missed). */
  holds(key: string, owner: string): Promise<boolean>;
}

/** A mutex's steps: the backend's own methods. */
export function mutexSteps(backend: LockBackend): KindSteps {
  return {
    renew: (key, owner, ttlMs) => backend.renew(key, owner, ttlMs),
    renewMany: (reqs) => backend.renewMany(reqs),
    release: (key, owner) => backend.release(key, owner),
    watch: (key, listener) => backend.watch(key, listener),
    holds: async (key, owner) => (await backend.status(key))?.owner === owner,
  };
}

/** A shared kind's steps, as the lifecycle uses them. */
export function sharedKindSteps(steps: SharedSteps): KindSteps {
  return {
    renew: async (key, owner, ttlMs) => (await steps.renewMany([{ key, owner, ttlMs }]))[0] ?? { ok: false, reason: "not_found" },
    renewMany: (reqs) => steps.renewMany(reqs),
    release: (key, owner) => steps.release(key, owner),
    watch: (key, listener) => steps.watch(key, listener),
    holds: async (key, owner) => (await steps.status(key))?.holders.some((h) => h.owner === owner) ?? false,
  };
}

/** The backend's steps of a shared kind; INVALID_ARGUMENT naming the backend when it has none. */
export function sharedStepsOf(backend: LockBackend, kind: SharedKind): SharedSteps {
  if (typeof backend.shared !== "function") {
    throw new LockhostError("INVALID_ARGUMENT", `backend ${backend.kind} has no ${kind === "rw" ? "read/write locks" : "semaphores"} (it does not implement LockBackend.shared)`);
  }
  return backend.shared(kind);
}

/** The key of a lock's local wait queue: the name, apart per kind (a mutex "a" and a read/write lock "a" are two locks). */
export function waitKey(kind: LockKind, name: string): string {
  return kind === "mutex" ? name : `${kind}\u0000${name}`;
}

/** A lock's name with its kind, for messages: "rw billing:a", or just the name of a mutex. */
export function kindName(kind: LockKind, name: string): string {
  return kind === "mutex" ? name : `${kind === "rw" ? "read/write lock" : "semaphore"} ${name}`;
}
