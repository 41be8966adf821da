// What a release does to the service's books around the backend's step, shared by a plain
// release (release.ts) and one that hands the key to this host's next waiter (handoff.ts).
import type { LockhostError } from "../../kit/errors.js";
import type { ReleaseResult } from "../../kit/backend.js";
import { backendError, kinded, lostError, type ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";
import { waitKey } from "./kinds.js";
import type { UnsettledHost } from "./unsettled.js";
import { endHold } from "../tracing/tracer.js";

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

/**
 * The release failed (the backend did not answer, or not in time: it may or may not have run):
 * the lease is held again until the release is owed no more, and the release is tried again as
 * soon as the backend answers (unsettled.ts); the error to throw.
 */
export function releaseFailed(core: ServiceCore, lease: Lease, minted: boolean, err: unknown): LockhostError {
  keepHeld(core, lease, minted);
  core.unsettled.releaseOwed(lease);
  return backendError(err);
}

/** Puts a lease whose release did not happen back into the books as held. */
function keepHeld(core: ServiceCore, lease: Lease, minted: boolean): void {
  leases.setState(lease, "held");
  core.held.add(lease, minted);
  // Its renewals, or the watch on its end that its observers rely on, resume.
  if (lease.keepalive || lease.observed) core.renewals.watch(lease);
}

/** What the book of unsettled locks (unsettled.ts) asks of `core`. */
export function unsettledHost(core: ServiceCore): UnsettledHost {
  return {
    release: (kind, name, owner) => core.steps(kind).release(name, owner),
    owes: (lease) => lease.state === "held" && core.held.get(lease.owner) === lease,
    inUse: (owner) => core.held.get(owner) !== undefined,
    settleLease: (lease) => settleLease(core, lease),
    abandon: (lease) => {
      if (lease.state !== "held" || core.held.get(lease.owner) !== lease || !lease.keepalive) return;
      leases.setKeepalive(lease, false);
      core.renewals.replan(lease);
    },
  };
}

/**
 * The owed release of `lease`, tried again. Whatever the backend answers, the lease ends as
 * released: released now, or found gone or under another owner (the earlier try ran after
 * all, or the lock ran out, and someone took the key since). Its holder let go of it already:
 * a loss would tell nobody anything.
 */
async function settleLease(core: ServiceCore, lease: Lease): Promise<"released" | "ended" | "failed"> {
  const minted = leaveBooks(core, lease);
  let result: ReleaseResult;
  try {
    result = await core.steps(lease.kind).release(lease.name, lease.owner);
  } catch {
    keepHeld(core, lease, minted);
    return "failed";
  }
  releaseDone(core, lease);
  core.waits.released(waitKey(lease.kind, lease.name), lease);
  return result === "released" ? "released" : "ended";
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
  endHold(lease);
  if (core.events.wants("released")) {
    const atMs = Date.now();
    core.events.emit(
      kinded(lease.kind, { type: "released", name: lease.name, fence: lease.fence, plugin: lease.holder.plugin, heldMs: atMs - lease.acquiredAtMs, atMs }),
    );
  }
}
