// Giving locks back: one lease, one lease if still held (cleanup paths), or all of them.
import { type LockhostError, toLockhostError } from "../../kit/errors.js";
import type { ReleaseResult } from "../../kit/backend.js";
import type { ServiceCore } from "./core.js";
import { handOver } from "./handoff.js";
import { waitKey } from "./kinds.js";
import type { Lease } from "./lease.js";
import { leaveBooks, releaseDone, releaseFailed, releaseRefused } from "./release-books.js";
import { setKeepalive } from "./renew.js";

/**
 * Releases `lease` (see LockService.release), or hands its key to this host's next waiter
 * (handoff.ts). The backend is awaited in place: no closure and no `.catch` promise per release.
 */
export async function release(core: ServiceCore, lease: Lease): Promise<void> {
  core.checkUsable(lease);
  const minted = leaveBooks(core, lease);
  const handing = handOver(core, lease, minted);
  if (handing !== undefined) return handing;
  let result: ReleaseResult;
  try {
    result = await core.steps(lease.kind).release(lease.name, lease.owner);
  } catch (err) {
    throw releaseFailed(core, lease, minted, err);
  }
  if (result !== "released") throw releaseRefused(core, lease, result);
  releaseDone(core, lease);
  // Waiters of this host need no round trip through the backend to hear about it.
  core.waits.released(waitKey(lease.kind, lease.name), lease);
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
