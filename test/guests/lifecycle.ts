// Test guest for the lease lifecycle: waiting acquire, keepalive, lock state, restore by
// owner token, and the lockhost_on_lost callback. Exports take and return i32 so tests
// can drive it without touching guest memory; a key id `n` names the key "k<n>".
// Raw results follow ABI.md; on an error an export traces "error <code>: <last_error>".

import {
  acquire,
  restore,
  lastError,
  scheduleLockState,
  lock_try,
  lock_acquire,
  lock_state,
  lock_restore,
  lock_release,
  lock_renew,
  MAX_KEY_BYTES,
} from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

/** An address far outside any memory the host will allow. */
const BAD_PTR: usize = 0x7ffffff0;

function keyOf(keyId: i32): string {
  return "k" + keyId.toString();
}

function traced(r: i32): i32 {
  if (r < 0) trace("error " + (-r).toString() + ": " + lastError());
  return r;
}

// --- lost-lock callback --------------------------------------------------------

const lost: i32[] = [];
let trapOnLost = false;

/** Called by the host when a lock this guest holds is lost (handle 0: the schedule's lock). */
export function lockhost_on_lost(handle: i32): void {
  lost.push(handle);
  trace("lost " + handle.toString() + " state " + lock_state(handle).toString());
  if (trapOnLost) unreachable();
}

/** How many lost notifications arrived. */
export function lostCount(): i32 {
  return lost.length;
}

/** The handle of the i-th lost notification. */
export function lostAt(i: i32): i32 {
  return lost[i];
}

/** Makes the next lockhost_on_lost trap after recording (until the guest restarts). */
export function trapNextLost(): void {
  trapOnLost = true;
}

// --- raw imports ---------------------------------------------------------------

/** Raw lock.try on "k<keyId>". */
export function hold(keyId: i32, ttlMs: i32, flags: i32): i32 {
  const buf = String.UTF8.encode(keyOf(keyId));
  return traced(lock_try(changetype<usize>(buf), buf.byteLength, ttlMs, flags));
}

/** Raw lock.acquire on "k<keyId>": handle, -TIMEOUT (traced with last_error), -code. */
export function acquireKey(keyId: i32, ttlMs: i32, waitMs: i32, flags: i32): i32 {
  const buf = String.UTF8.encode(keyOf(keyId));
  return traced(lock_acquire(changetype<usize>(buf), buf.byteLength, ttlMs, waitMs, flags));
}

/** lock.acquire with a key pointer outside memory. */
export function acquireBadPointer(): i32 {
  return traced(lock_acquire(BAD_PTR, 8, 1_000, 0, 0));
}

/** Raw lock.state. */
export function state(handle: i32): i32 {
  return traced(lock_state(handle));
}

/** Raw lock.release. */
export function release(handle: i32): i32 {
  return traced(lock_release(handle));
}

/** Raw lock.renew. */
export function renew(handle: i32, ttlMs: i32): i32 {
  return traced(lock_renew(handle, ttlMs));
}

// --- restore: the test feeds the owner token one character at a time ----------

let owner = "";

/** Forgets the owner token being fed. */
export function ownerClear(): void {
  owner = "";
}

/** Appends one character (a UTF-16 code unit) to the owner token. */
export function ownerPush(c: i32): void {
  owner += String.fromCharCode(c);
}

/** SDK restore of "k<keyId>" with the fed owner token: the handle, or -code (traced). */
export function restoreKey(keyId: i32, ttlMs: i32, flags: i32): i32 {
  const r = restore(keyOf(keyId), owner, ttlMs, flags);
  const lock = r.lock;
  if (lock) return lock.handle;
  const err = r.error!;
  trace("error " + err.code.toString() + ": " + err.message);
  return -err.code;
}

/** Raw restore with the owner pointer outside memory. */
export function restoreBadOwnerPtr(keyId: i32): i32 {
  const k = String.UTF8.encode(keyOf(keyId));
  return traced(lock_restore(changetype<usize>(k), k.byteLength, BAD_PTR, 36, 0, 0));
}

/** Raw restore with an empty owner token. */
export function restoreEmptyOwner(keyId: i32): i32 {
  const k = String.UTF8.encode(keyOf(keyId));
  return traced(lock_restore(changetype<usize>(k), k.byteLength, changetype<usize>(k), 0, 0, 0));
}

/** Raw restore with an owner token one byte over the limit. */
export function restoreLongOwner(keyId: i32): i32 {
  const k = String.UTF8.encode(keyOf(keyId));
  const o = new ArrayBuffer(MAX_KEY_BYTES + 1);
  memory.fill(changetype<usize>(o), 0x61, <usize>(MAX_KEY_BYTES + 1));
  return traced(lock_restore(changetype<usize>(k), k.byteLength, changetype<usize>(o), o.byteLength, 0, 0));
}

// --- through the SDK -------------------------------------------------------------

/**
 * SDK acquire: the handle when acquired (kept only with KEEP), -1000 when it timed
 * out (traces "timeout <message>"), -code on error (traced).
 */
export function acquireSdk(keyId: i32, ttlMs: i32, waitMs: i32, flags: i32): i32 {
  const r = acquire(keyOf(keyId), ttlMs, waitMs, flags);
  const lock = r.lock;
  if (lock) {
    if (!lock.isHeld()) return -2000;
    return lock.handle;
  }
  if (r.timedOut) {
    if (!r.contended) return -3000;
    trace("timeout " + lastError());
    return -1000;
  }
  const err = r.error!;
  trace("error " + err.code.toString() + ": " + err.message);
  return -err.code;
}

// --- plumbing ---------------------------------------------------------------------

/** Traces "mark <n>" (tests read the order of events from the log). */
export function mark(n: i32): void {
  trace("mark " + n.toString());
}

/** a + b. */
export function add(a: i32, b: i32): i32 {
  return a + b;
}

/**
 * Stands for a long piece of work without burning a core: holds the key "sleep"
 * and waits `ms` for it in lock.acquire (a guest's own key is contended to it),
 * which blocks only this guest's worker.
 */
function sleepMs(ms: i32): void {
  const key = String.UTF8.encode("sleep");
  const h = lock_try(changetype<usize>(key), key.byteLength, 60_000, 0);
  lock_acquire(changetype<usize>(key), key.byteLength, 60_000, ms, 0);
  if (h > 0) lock_release(h);
}

/** Works for `ms` milliseconds (a long job), then returns the state of `handle`. */
export function busy(handle: i32, ms: i32): i32 {
  sleepMs(ms);
  return lock_state(handle);
}

/** Takes "k<keyId>" with `flags`, works for `ms`, then returns the handle (or -code). */
export function holdBusy(keyId: i32, ttlMs: i32, flags: i32, ms: i32): i32 {
  const h = hold(keyId, ttlMs, flags);
  sleepMs(ms);
  return h;
}

/** A scheduled job: traces the schedule lock's state, works for `ms`, returns its state. */
export function job(ms: i32): i32 {
  trace("job start state " + scheduleLockState().toString());
  sleepMs(ms);
  return scheduleLockState();
}

/** A scheduled export (no arguments): works for 700 ms, then traces the schedule lock's state. */
export function scheduledJob(): void {
  sleepMs(700);
  trace("scheduled job done, state " + scheduleLockState().toString());
}

/** A long scheduled export (no arguments): works for 2.5 s. */
export function longJob(): void {
  sleepMs(2_500);
}

/** A quick scheduled export: traces the schedule lock's state (handle 0) as it is entered. */
export function quickJob(): void {
  trace("quick job start state " + scheduleLockState().toString());
}
