// Giving locks back: one lease, one lease if still held (cleanup paths), or all of them.
import { type LockhostError, toLockhostError } from "../../kit/errors.js";
import type { ReleaseResult } from "../../kit/backend.js";
import { backendError, kindOf, lostError, type ServiceCore } from "./core.js";
import { waitKey } from "./kinds.js";
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";
import { setKeepalive } from "./renew.js";

/**
 * Releases `lease` (see LockService.release). The backend is awaited in place: no closure and
 * no `.catch` promise per release.
 */
export async function release(core: ServiceCore, lease: Lease): Promise<void> {
  core.checkUsable(lease);
  // Leave the books first: a concurrent releaseAll must not release the same lease again.
  const minted = core.held.delete(lease.owner);
  core.renewals.forget(lease);
  leases.setState(lease, "released");
  let result: ReleaseResult;
  try {
    result = await core.steps(lease.kind).release(lease.name, lease.owner);
  } catch (err) {
    // The release did not happen: the lease is still ours until its TTL ends.
    leases.setState(lease, "held");
    core.held.add(lease, minted);
    // Its renewals, or the watch on its end that its observers rely on, resume.
    if (lease.keepalive || lease.observed) core.renewals.watch(lease);
    throw backendError(err);
  }
  if (result !== "released") {
    leases.setState(lease, "held");
    const e = lostError(lease, result);
    core.markLost(lease, e);
    throw e;
  }
  core.released.add(lease.owner);
  leases.markReleased(lease);
  // Waiters of this host need no round trip through the backend to hear about it.
  core.waits.notify(waitKey(lease.kind, lease.name));
  if (core.events.wants("released")) {
    const atMs = Date.now();
    core.events.emit({ type: "released", ...kindOf(lease), name: lease.name, fence: lease.fence, plugin: lease.holder.plugin, heldMs: atMs - lease.acquiredAtMs, atMs });
  }
}

/** Releases `lease` if it is still held; resolves to the error of a release that failed (see LockService.releaseIfHeld). */
export async function releaseIfHeld(core: ServiceCore, lease: Lease): Promise<LockhostError | undefined> {
  try {
    await release(core, lease);
    return undefined;
  } catch (err) {
    const e = toLockhostError(err);
    if (e.code === "LOST" || e.code === "ALREADY_RELEASED") return undefined;
    // The caller is letting go of the lease: nobody would renew or release it any more, so it
    // must not be kept alive forever. It ends at its TTL, as the caller is told.
    if (lease.state === "held" && lease.keepalive) setKeepalive(core, lease, false);
    return e;
  }
}

/** Releases every lease `core` holds; failures are returned, not thrown. */
export async function releaseAll(core: ServiceCore): Promise<LockhostError[]> {
  const held = core.held.values();
  const settled = await Promise.allSettled(held.map((l) => release(core, l)));
  return settled.flatMap((s) => (s.status === "rejected" ? [toLockhostError(s.reason)] : []));
}
