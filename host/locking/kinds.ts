// The lock kinds a LockService serves and the few things the lifecycle asks of each kind's
// steps beyond kit/steps.ts: whether an owner still holds a lock, a single renewal. Every job of
// host/locking (renewal, release, waiting, loss checks, status, listing) goes through
// ServiceCore.steps(kind), one interface for every kind.
import { LockhostError } from "../../kit/errors.js";
import type { LockBackend, RenewResult } from "../../kit/backend.js";
import type { KindSteps } from "../../kit/steps.js";
import { KINDS, LOCK_KINDS, type LockKind } from "../../kit/kinds.js";

const NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });

/** One renewal through the kind's batch step. */
export async function renewOne(steps: KindSteps, name: string, owner: string, ttlMs: number): Promise<RenewResult> {
  return (await steps.renewMany([{ name, owner, ttlMs }]))[0] ?? NOT_FOUND;
}

/** Whether `owner` still holds `name` (after loss notices may have been missed). */
export async function holds(steps: KindSteps, name: string, owner: string): Promise<boolean> {
  return (await steps.status(name))?.holders.some((h) => h.owner === owner) ?? false;
}

/** The backend's steps of `kind`; INVALID_ARGUMENT naming the backend when it does not serve the kind. */
export function stepsOf(backend: LockBackend, kind: LockKind): KindSteps {
  if (!backend.kinds.includes(kind)) {
    throw new LockhostError("INVALID_ARGUMENT", `backend ${backend.name} has no ${KINDS[kind].plural} (its kinds are ${backend.kinds.join(", ")})`);
  }
  return backend.steps(kind);
}

/** The kinds `backend` serves, in table order. */
export function servedKinds(backend: LockBackend): readonly LockKind[] {
  return LOCK_KINDS.filter((kind) => backend.kinds.includes(kind));
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
