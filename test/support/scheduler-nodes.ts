// Teardown shared by the scheduler suites: every node's ticking stops first (so none starts a
// job on a node being closed), then each waits for its jobs, lets go of what it parked, and
// closes its guest and lock service (the backend is the suite's).
import type { LockService } from "../../host/locking/service.js";
import type { GuestInstance } from "../../host/runtime/guest-instance.js";
import type { Scheduler } from "../../host/scheduler/scheduler.js";

/** One node of a scheduler suite. */
export interface SchedulerNode {
  readonly scheduler: Scheduler;
  readonly guest: GuestInstance;
  readonly locks: LockService;
}

/** Stops and closes every node in `nodes`, emptying it. */
export async function closeNodes(nodes: SchedulerNode[]): Promise<void> {
  for (const n of nodes) n.scheduler.stop();
  for (const n of nodes.splice(0)) {
    await n.scheduler.idle();
    await n.scheduler.releaseParked();
    await n.guest.close();
    await n.locks.close({ closeBackend: false });
  }
}
