// What a release does to the service's books around the backend's step, shared by a plain
// release (release.ts) and one that hands the key to this host's next waiter (handoff.ts).
import type { LockhostError } from "../../kit/errors.js";
import type { ReleaseResult } from "../../kit/backend.js";
import { backendError, kindOf, lostError, type ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";

/**
 * Takes `lease` out of the books before its release is sent, so a concurrent releaseAll cannot
 * release it again; true when its owner token was minted here (releaseFailed puts it back so).
 */
export function leaveBooks(core: ServiceCore, lease: Lease): boolean {
  const minted = core.held.delete(lease.owner);
  core.renewals.forget(lease);
  leases.setState(lease, "released");
  return minted;
}

/** The release did not happen (the backend failed): the lease is ours again until its TTL; the error to throw. */
export function releaseFailed(core: ServiceCore, lease: Lease, minted: boolean, err: unknown): LockhostError {
  leases.setState(lease, "held");
  core.held.add(lease, minted);
  // Its renewals, or the watch on its end that its observers rely on, resume.
  if (lease.keepalive || lease.observed) core.renewals.watch(lease);
  return backendError(err);
}

/** The backend found the lock no longer held by the lease: it is lost; the error to throw. */
export function releaseRefused(core: ServiceCore, lease: Lease, result: Exclude<ReleaseResult, "released">): LockhostError {
  leases.setState(lease, "held");
  const e = lostError(lease, result);
  core.markLost(lease, e);
  return e;
}

/** The backend confirmed the release: the lease ends as released, and who listens is told. */
export function releaseDone(core: ServiceCore, lease: Lease): void {
  core.released.add(lease.owner);
  leases.markReleased(lease);
  if (core.events.wants("released")) {
    const atMs = Date.now();
    core.events.emit({ type: "released", ...kindOf(lease), name: lease.name, fence: lease.fence, plugin: lease.holder.plugin, heldMs: atMs - lease.acquiredAtMs, atMs });
  }
}
