// Test guest for the exclusion check across host processes. Each critical section is two
// calls: `enter` takes the global key "hammer-<keyId>" with KEEP (so the lock outlives the
// call) and returns its fence; the driver records the section while the guest holds the
// lock; `leave` releases it. Every lock goes through the real ABI path of a worker guest.

import { tryLock, tryRead, tryWrite, trySemaphore, lastError, Lock, TryResult, GLOBAL, KEEP } from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

const held = new Map<i32, Lock>();

/** Takes "hammer-<keyId>": the fence (> 0) when acquired, 0 when contended, -code on error. */
export function enter(keyId: i32, ttlMs: i32): i64 {
  return held_(keyId, tryLock("hammer-" + keyId.toString(), ttlMs, GLOBAL | KEEP));
}

/**
 * As enter, in a mode: 1 a read lock, 2 a write lock (read/write lock "hammer-<keyId>"), 3 a
 * permit of the semaphore "hammer-<keyId>" with `permits` permits.
 */
export function enterAs(keyId: i32, ttlMs: i32, mode: i32, permits: i32): i64 {
  const key = "hammer-" + keyId.toString();
  if (mode == 1) return held_(keyId, tryRead(key, ttlMs, GLOBAL | KEEP));
  if (mode == 2) return held_(keyId, tryWrite(key, ttlMs, GLOBAL | KEEP));
  return held_(keyId, trySemaphore(key, permits, ttlMs, GLOBAL | KEEP));
}

/** Keeps the lock of a try for `leave`: its fence, 0 when contended, -code on error. */
function held_(keyId: i32, r: TryResult): i64 {
  const lock = r.lock;
  if (lock) {
    held.set(keyId, lock);
    return lock.fence();
  }
  if (r.contended) return 0;
  const err = r.error!;
  trace("enter error " + err.name + ": " + err.message);
  return -(err.code as i64);
}

/** Releases the lock `enter` took on "hammer-<keyId>": 0, or -code (and traces the error). */
export function leave(keyId: i32): i32 {
  if (!held.has(keyId)) return -1000;
  const lock = held.get(keyId);
  held.delete(keyId);
  const err = lock.release();
  if (err) {
    trace("leave error " + err.name + ": " + err.message + " / " + lastError());
    return -err.code;
  }
  return 0;
}
