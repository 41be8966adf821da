// The lock kinds a LockService serves (mutex, read/write lock, semaphore) and the few steps the
// lifecycle needs of each kind's store: renew, release, watch, and whether an owner still holds
// a key. Every job of host/locking (renewal, release, waiting, loss checks) goes through these,
// so the lifecycle is written once for every kind; a mutex's steps are the backend's own.
import { LockhostError } from "../../kit/errors.js";
import type { LockBackend, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "../../kit/backend.js";
import type { SharedSteps } from "../../kit/shared.js";
import { isSharedKind, KINDS, LOCK_KINDS, type LockKind, type SharedKind } from "../../kit/kinds.js";

export { FAIR, LOCK_KINDS, MUTEX, READ, WRITE, limitOf, modeOf, permitSpec, type LockKind, type LockSpec } from "../../kit/kinds.js";

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
    throw new LockhostError("INVALID_ARGUMENT", `backend ${backend.kind} has no ${KINDS[kind].plural} (it does not implement LockBackend.shared)`);
  }
  return backend.shared(kind);
}

/** The kinds `backend` serves, in table order: a backend without LockBackend.shared serves only the others. */
export function servedKinds(backend: LockBackend): readonly LockKind[] {
  return typeof backend.shared === "function" ? LOCK_KINDS : LOCK_KINDS.filter((kind) => !isSharedKind(kind));
}

/** The key of a lock's local wait queue: the name, apart per kind (a mutex "a" and a read/write lock "a" are two locks). */
export function waitKey(kind: LockKind, name: string): string {
  // The default kind keeps the bare name, so a mutex's waiters are found without building a string.
  return KINDS[kind].isDefault ? name : `${kind}\u0000${name}`;
}

/** A lock's name with its kind, for messages: "read/write lock billing:a", or just the name of a mutex. */
export function kindName(kind: LockKind, name: string): string {
  const row = KINDS[kind];
  return row.isDefault ? name : `${row.label} ${name}`;
}
