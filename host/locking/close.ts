// Shutting a service down: no new acquisitions, the ones in flight finish (and give back what
// they got), every lease is released, then the renewal manager and the backend close.
import type { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import { releaseAll } from "./release.js";

/** Closes `core` once; later calls get the first call's promise (see LockService.close). */
export function close(core: ServiceCore, closeBackend: boolean): Promise<LockhostError[]> {
  core.closePromise ??= closeOnce(core, closeBackend);
  return core.closePromise;
}

/** Resolves to the errors of releases that failed (those locks end at their TTL). */
async function closeOnce(core: ServiceCore, closeBackend: boolean): Promise<LockhostError[]> {
  core.closing = true;
  // Waiting acquisitions end with CLOSED (they are counted in `inFlight` while they try).
  core.waits.wakeAll();
  core.sentinel.stop();
  // An acquisition that completes now gives its lock back itself (see attempt in acquire.ts).
  await core.attemptsDrained();
  const failed = await releaseAll(core);
  // Locks left by calls that failed get one more try while the backend is still open.
  await core.unsettled.close();
  core.renewals.close();
  core.closed = true;
  if (closeBackend) await core.backend.close();
  return failed;
}
