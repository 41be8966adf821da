// Releases as values: what became of a lock that a release was asked for, whether the caller
// has the Lease or only the key and the owner token. The throwing forms (LockService.release)
// are these outcomes turned into errors, so both forms always agree.
import { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import { release } from "./release.js";
import { qualify, type Scope } from "./scope.js";
import { scopeOf } from "./request.js";
import { validateKey, validateOptions } from "./validate.js";

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

/** Options of a release by key and owner token. */
export interface ReleaseOptions {
  /** Where the key lives (default "global"), as in tryLock. */
  readonly scope?: Scope;
}

/** A release's target, checked: the Lease, or the full name and owner token. */
export type ReleaseTarget = Lease | { readonly name: string; readonly owner: string };

/**
 * Checks the arguments of release/tryRelease: a Lease, or a key and owner token (with an
 * optional scope). Throws INVALID_ARGUMENT naming the argument at fault.
 */
export function releaseTarget(target: unknown, owner: unknown, options: ReleaseOptions | undefined): ReleaseTarget {
  if (target instanceof Lease) {
    if (owner !== undefined) throw new LockhostError("INVALID_ARGUMENT", "owner must not be given with a Lease (the lease knows its owner)");
    return target;
  }
  if (typeof target !== "string") {
    throw new LockhostError("INVALID_ARGUMENT", `lease must be a Lease, or a key string followed by an owner token, got ${target === null ? "null" : typeof target}`);
  }
  validateKey(target);
  validateKey(owner, "owner");
  return { name: qualify(target, scopeOf(validateOptions(options, "options"))), owner: owner as string };
}

/** Releases `target`, telling what became of it (see LockService.tryRelease). */
export async function tryRelease(core: ServiceCore, target: ReleaseTarget): Promise<ReleaseOutcome> {
  core.checkOpen();
  const lease = target instanceof Lease ? target : core.held.get(target.owner);
  if (lease !== undefined && lease.name === target.name) return releaseLease(core, lease);
  return releaseByOwner(core, target.name, target.owner);
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
async function releaseByOwner(core: ServiceCore, name: string, owner: string): Promise<ReleaseOutcome> {
  const result = await core.backendCall(() => core.backend.release(name, owner));
  if (result === "released") {
    core.released.add(owner);
    // The holder's own service hears of it through the backend (onLost); waiters here need no round trip.
    core.waits.notify(name);
    return "released";
  }
  if (core.released.has(owner)) return "already_released";
  if (result === "mismatch") return "lost";
  // A backend may answer not_found from its own memory of that owner's ended lock (PostgreSQL
  // does) though another owner holds the key now: asked, so every backend gives one answer.
  // Only this rare path pays the round trip.
  const record = await core.backendCall(() => core.backend.status(name));
  return record !== null && record.owner !== owner ? "lost" : "not_found";
}
