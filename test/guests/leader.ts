// Test guest for leader election through the ABI. Exports take and return i32. Leaderships are
// kept in slots 0..3 (taken with KEEP), all for this plugin's election "main"; value n is "v<n>".
// Results: a handle > 0 when leading, 0 when another leads, -TIMEOUT when a wait ran out, -code
// on error (traced as "error <code>: <message>"). lockhost_on_lost traces "lost <handle>".

import { tryCampaign, campaign, proclaim, resign, leaderOf, Lock, TryResult, LockError, KEEP, TIMEOUT } from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

const ELECTION = "main";
const slots = new Array<Lock | null>(4).fill(null);

function value(n: i32): string {
  return "v" + n.toString();
}

function kept(slot: i32, r: TryResult): i32 {
  const lock = r.lock;
  if (lock) {
    slots[slot] = lock;
    return lock.handle;
  }
  if (r.timedOut) return -TIMEOUT;
  if (r.contended) return 0;
  return failed(r.error!);
}

function failed(err: LockError): i32 {
  trace("error " + err.code.toString() + ": " + err.message);
  return -err.code;
}

export function lead(slot: i32, n: i32, ttlMs: i32): i32 {
  return kept(slot, tryCampaign(ELECTION, value(n), ttlMs, KEEP));
}

export function leadWait(slot: i32, n: i32, ttlMs: i32, waitMs: i32): i32 {
  return kept(slot, campaign(ELECTION, value(n), ttlMs, waitMs, KEEP));
}

/** The term of the leadership in `slot`: its fence (as i32: small on the memory backend). */
export function term(slot: i32): i32 {
  return <i32>slots[slot]!.fence();
}

export function state(slot: i32): i32 {
  return slots[slot]!.state();
}

export function say(slot: i32, n: i32): i32 {
  const err = proclaim(slots[slot]!, value(n));
  return err ? failed(err) : 0;
}

export function stepDown(slot: i32): i32 {
  const err = resign(slots[slot]!);
  return err ? failed(err) : 0;
}

/** Traces "leader <json>"; 0, or -code. */
export function who(): i32 {
  const r = leaderOf(ELECTION);
  if (r.error) return failed(r.error!);
  trace("leader " + r.value);
  return 0;
}

export function lockhost_on_lost(handle: i32): void {
  trace("lost " + handle.toString());
}
