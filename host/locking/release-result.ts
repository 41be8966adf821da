// Releases as values: what became of a lock that a release was asked for, whether the caller
// has the Lease or only the key and the owner token. The throwing forms (LockService.release)
// are these outcomes turned into errors, so both forms always agree.
import { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import { release } from "./release.js";
import { waitKey } from "./kinds.js";
import { checkRef, type LockRefOptions } from "./ref.js";
import { validateKey } from "./validate.js";
import type { LockKind } from "../../kit/kinds.js";

/**
 * The final state of a lock a release was asked for:
 * - "released": this call released it;
 * - "already_released": it had been released before (by this lease, or by this service for
 *   that owner token);
 * - "lost": it had ended without a release (expired, force-released) and someone else may hold
 *   the key now; nothing was deleted;
 * - "not_found": nobody holds the key (by key and owner only: the owner never held it here, or
 *   its lock expired or was force-released).
 */
export type ReleaseOutcome = "released" | "already_released" | "lost" | "not_found";

/** Options of a release by reference and owner token: the key's scope, and the lock's kind (default the mutex). */
export type ReleaseOptions = LockRefOptions;

/** A release's target, checked: the Lease, or the full name, kind and owner token. */
export type ReleaseTarget = Lease | { readonly name: string; readonly kind: LockKind; readonly owner: string };

/**
 * Checks the arguments of release/tryRelease: a Lease, or a reference (a key, or `{ name }`) and
 * owner token with options (scope, kind). Throws INVALID_ARGUMENT naming the argument at fault.
 */
export function releaseTarget(target: unknown, owner: unknown, options: ReleaseOptions | undefined): ReleaseTarget {
  if (target instanceof Lease) {
    if (owner !== undefined) throw new LockhostError("INVALID_ARGUMENT", "owner must not be given with a Lease (the lease knows its owner)");
    return target;
  }
  if (typeof target !== "string" && (typeof target !== "object" || target === null)) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `lease must be a Lease, or a key (or { name }) followed by an owner token, got ${target === null ? "null" : typeof target}`,
    );
  }
  const { name, kind } = checkRef(target, options);
  validateKey(owner, "owner");
  return { name, kind, owner: owner as string };
}

/** Releases `target`, telling what became of it (see LockService.tryRelease). */
export async function tryRelease(core: ServiceCore, target: ReleaseTarget): Promise<ReleaseOutcome> {
  core.life.checkOpen();
  if (target instanceof Lease) return releaseLease(core, target);
  // By reference and owner: this service's own lease for it, if it holds one, keeps its messages.
  const lease = core.held.get(target.owner);
  if (lease !== undefined && lease.name === target.name && lease.kind === target.kind) return releaseLease(core, lease);
  return releaseByOwner(core, target);
}

/** Releases a lock by reference and owner token, throwing for every outcome but "released" (see LockService.release). */
export async function releaseOrThrow(core: ServiceCore, target: Exclude<ReleaseTarget, Lease>): Promise<void> {
  const outcome = await tryRelease(core, target);
  if (outcome !== "released") throw outcomeError(outcome, target.name);
}

/** The error a throwing release raises for each outcome but "released". */
export function outcomeError(outcome: Exclude<ReleaseOutcome, "released">, name: string): LockhostError {
  switch (outcome) {
    case "already_released":
      return new LockhostError("ALREADY_RELEASED", `lock ${name} with that owner token was already released`);
    case "lost":
      return new LockhostError("LOST", `lock ${name} is no longer held by that owner token: it ended or changed hands; nothing was changed`);
    case "not_found":
      return new LockhostError("NOT_FOUND", `no lock is held under ${name}`);
  }
}

async function releaseLease(core: ServiceCore, lease: Lease): Promise<ReleaseOutcome> {
  if (lease.state === "released") return "already_released";
  if (lease.state === "lost") return "lost";
  try {
    await release(core, lease);
    return "released";
  } catch (err) {
    // A concurrent release or a loss found by this one is an outcome; a backend failure is not.
    if (err instanceof LockhostError && err.code === "LOST") return "lost";
    if (err instanceof LockhostError && err.code === "ALREADY_RELEASED") return "already_released";
    throw err;
  }
}

/** A lock this service has no lease for: taken elsewhere (or by an earlier run) under `owner`. */
async function releaseByOwner(core: ServiceCore, { name, kind, owner }: Exclude<ReleaseTarget, Lease>): Promise<ReleaseOutcome> {
  const steps = core.steps(kind);
  const result = await core.backendCall(() => steps.release(name, owner));
  if (result === "released") {
    core.released.add(owner);
    // The holder's own service hears of it through the backend (onLost); waiters here need no round trip.
    core.waits.notify(waitKey(kind, name));
    return "released";
  }
  if (core.released.has(owner)) return "already_released";
  if (result === "mismatch") return "lost";
  // A backend may answer not_found from its own memory of that owner's ended lock (PostgreSQL
  // does) though another owner holds the key now: asked, so every backend gives one answer.
  // Only this rare path pays the round trip.
  const record = await core.backendCall(() => steps.status(name));
  return record !== null && record.holders.length > 0 && !record.holders.some((h) => h.owner === owner) ? "lost" : "not_found";
}
