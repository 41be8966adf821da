// Test guest for read/write locks and semaphores through the ABI. Every export takes i32
// arguments and returns a number. Locks are kept in slots 0..7 (taken with KEEP unless the
// export says otherwise), all on this plugin's key "doc" (its read/write lock, its semaphore,
// its fair mutex or its mutex).
// Results: a handle > 0 when taken, 0 when contended (or a wait timed out: -2, TIMEOUT), -code
// on error (and the error is traced as "error <code>: <message>").

import {
  tryRead, tryWrite, read, write, trySemaphore, semaphore, withRead, withWrite, withPermit,
  rwStatus, semaphoreStatus, fairStatus, tryLock, acquire, Lock, TryResult, KEEP, FAIR, TIMEOUT,
} from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

const KEY = "doc";
const slots = new Array<Lock | null>(8).fill(null);

/** Keeps the lock of `r` in `slot`: its handle, 0 contended, -TIMEOUT, or -code (traced). */
function kept(slot: i32, r: TryResult): i32 {
  const lock = r.lock;
  if (lock) {
    slots[slot] = lock;
    return lock.handle;
  }
  if (r.timedOut) return -TIMEOUT;
  if (r.contended) return 0;
  const err = r.error!;
  trace("error " + err.code.toString() + ": " + err.message);
  return -err.code;
}

export function readLock(slot: i32, ttlMs: i32): i32 {
  return kept(slot, tryRead(KEY, ttlMs, KEEP));
}

export function writeLock(slot: i32, ttlMs: i32): i32 {
  return kept(slot, tryWrite(KEY, ttlMs, KEEP));
}

export function readWait(slot: i32, ttlMs: i32, waitMs: i32): i32 {
  return kept(slot, read(KEY, ttlMs, waitMs, KEEP));
}

export function writeWait(slot: i32, ttlMs: i32, waitMs: i32): i32 {
  return kept(slot, write(KEY, ttlMs, waitMs, KEEP));
}

export function permit(slot: i32, permits: i32, ttlMs: i32): i32 {
  return kept(slot, trySemaphore(KEY, permits, ttlMs, KEEP));
}

export function permitWait(slot: i32, permits: i32, ttlMs: i32, waitMs: i32): i32 {
  return kept(slot, semaphore(KEY, permits, ttlMs, waitMs, KEEP));
}

export function fairLock(slot: i32, ttlMs: i32): i32 {
  return kept(slot, tryLock(KEY, ttlMs, KEEP | FAIR));
}

export function fairWait(slot: i32, ttlMs: i32, waitMs: i32): i32 {
  return kept(slot, acquire(KEY, ttlMs, waitMs, KEEP | FAIR));
}

/** The plain mutex of the same key (another lock than its fair mutex). */
export function mutexLock(slot: i32, ttlMs: i32): i32 {
  return kept(slot, tryLock(KEY, ttlMs, KEEP));
}

/** Traces the fair mutex's status JSON; returns its length. */
export function fairStatusTrace(): i32 {
  const s = fairStatus(KEY);
  trace("fair " + s.value);
  return s.value.length;
}

/** A read lock without KEEP: the host releases it when this call returns. Its handle. */
export function readForThisCall(ttlMs: i32): i32 {
  const r = tryRead(KEY, ttlMs);
  return r.lock ? r.lock!.handle : -1;
}

/** Releases the lock in `slot`: 0, or -code. */
export function release(slot: i32): i32 {
  const lock = slots[slot];
  if (!lock) return -1000;
  slots[slot] = null;
  const err = lock.release();
  return err ? -err.code : 0;
}

export function fence(slot: i32): i64 {
  const lock = slots[slot];
  return lock ? lock.fence() : -1000;
}

export function state(slot: i32): i32 {
  const lock = slots[slot];
  return lock ? lock.state() : -1000;
}

let seen: i64 = 0;

/** withRead, withWrite, withPermit in turn: the sum of the three fences (each > 0), or -1 if one was not taken or not released. */
export function helpers(): i64 {
  let sum: i64 = 0;
  let r = withRead(KEY, 1_000, (lock: Lock): void => { seen = lock.fence(); });
  if (!r.acquired || r.releaseError != null) return -1;
  sum += seen;
  r = withWrite(KEY, 1_000, (lock: Lock): void => { seen = lock.fence(); });
  if (!r.acquired || r.releaseError != null) return -1;
  sum += seen;
  r = withPermit(KEY, 3, 1_000, (lock: Lock): void => { seen = lock.fence(); });
  if (!r.acquired || r.releaseError != null) return -1;
  return sum + seen;
}

/** Traces the read/write lock's status JSON and the semaphore's; returns the first one's length. */
export function statuses(): i32 {
  const rw = rwStatus(KEY);
  const sem = semaphoreStatus(KEY);
  trace("rw " + rw.value);
  trace("semaphore " + sem.value);
  return rw.value.length;
}
