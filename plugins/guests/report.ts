// Example plugin: a scheduled job that must run on exactly one node per tick.
//
// Every node of the cluster runs `run()` on the same schedule; the lock decides
// which one does the work. The others see the key contended and skip the tick.

import { withLock, Lock, scheduleLockState, STATE_LOST } from "lockhost";

// Required in every guest: the host checks the ABI version before loading it.
export { lockhost_abi_version } from "lockhost";

/**
 * Optional: the host calls this when a lock this guest holds is lost (between
 * calls). Handle 0 is the schedule's lock: losing it while `run` worked means
 * another node may have run the same tick.
 */
export function lockhost_on_lost(handle: i32): void {
  trace("report: lock " + handle.toString() + " was lost; another node may have run this tick too");
}

/** The scheduled entry point. */
export function run(): void {
  // During a scheduled call, handle 0 is the schedule's lock (-INVALID_HANDLE otherwise).
  if (scheduleLockState() == STATE_LOST) {
    trace("report: the schedule's lock is already lost; skipping this tick");
    return;
  }
  const r = withLock("daily-report", 10_000, generate);
  if (r.contended) {
    trace("report: lock busy, another node has it");
  } else if (r.error) {
    const err = r.error!;
    trace("report: could not take the lock: " + err.name + ": " + err.message);
  } else if (r.releaseError) {
    // The lease ended before we released it: another node may have run too.
    const err = r.releaseError!;
    trace("report: lock lost before release: " + err.name + ": " + err.message);
  }
}

// Runs while holding the lock; withLock releases it afterwards.
function generate(lock: Lock): void {
  // Stand-in for the real work: sum the day's numbers.
  let total: i64 = 0;
  for (let i: i64 = 1; i <= 1000; i++) total += i;
  trace("report: generated with fence " + lock.fence().toString() + " (total " + total.toString() + ")");
}
