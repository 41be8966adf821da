// Several keys taken all or nothing, the way the host's LockService.tryMany does it: in one
// canonical order (the keys' UTF-8 bytes, within one scope), so guests and host-side callers
// naming the same keys in any order never deadlock, and with the keys taken so far released
// when one is held.
//
//     const r = tryLocks(["accounts/1", "accounts/2"], 10_000);
//     const locks = r.locks;
//     if (locks) {
//       // ... both accounts are ours; locks[i].fence() for each write ...
//       releaseLocks(locks);
//     }

import { Lock, LockError, TryResult, acquire, tryLock } from "./lock";

/** The outcome of taking a set of keys. */
export class LocksResult {
  /** The locks, in canonical order, when every key was taken; null otherwise. */
  readonly locks: Lock[] | null;
  /** A key was held by someone else (or stayed held for the wait): nothing is held. */
  readonly contended: bool;
  /** The key that could not be had, when `contended` or `error`. */
  readonly failedKey: string;
  readonly error: LockError | null;
  constructor(locks: Lock[] | null, contended: bool, failedKey: string, error: LockError | null) {
    this.locks = locks;
    this.contended = contended;
    this.failedKey = failedKey;
    this.error = error;
  }
}

/** Takes every key of `keys` for `ttlMs` (same `flags` for all), or none. */
export function tryLocks(keys: string[], ttlMs: i32, flags: i32 = 0): LocksResult {
  return takeAll(keys, ttlMs, -1, flags);
}

/**
 * tryLocks, waiting up to `waitMs` in all for the keys, one after the other in canonical
 * order; contended when one stayed held.
 */
export function acquireLocks(keys: string[], ttlMs: i32, waitMs: i32, flags: i32 = 0): LocksResult {
  return takeAll(keys, ttlMs, waitMs, flags);
}

/** Releases every lock of a set, in the reverse of the order it was taken in. */
export function releaseLocks(locks: Lock[]): void {
  for (let i = locks.length - 1; i >= 0; i--) locks[i].release();
}

/** The keys in canonical order: by their UTF-8 bytes. */
export function canonicalOrder(keys: string[]): string[] {
  const sorted = keys.slice(0);
  sorted.sort((a: string, b: string): i32 => compareUtf8(a, b));
  return sorted;
}

function takeAll(keys: string[], ttlMs: i32, waitMs: i32, flags: i32): LocksResult {
  const ordered = canonicalOrder(keys);
  const started = Date.now();
  const taken = new Array<Lock>(0);
  for (let i = 0; i < ordered.length; i++) {
    const key = ordered[i];
    let r: TryResult;
    if (waitMs < 0) {
      r = tryLock(key, ttlMs, flags);
    } else {
      const left = <i32>Math.max(0, <f64>waitMs - <f64>(Date.now() - started));
      r = acquire(key, ttlMs, left, flags);
    }
    const lock = r.lock;
    if (!lock) {
      releaseLocks(taken);
      // A wait that ran out is contended too (acquire's TryResult says so).
      return new LocksResult(null, r.contended, key, r.error);
    }
    taken.push(lock);
  }
  return new LocksResult(taken, false, "", null);
}

function compareUtf8(a: string, b: string): i32 {
  const x = Uint8Array.wrap(String.UTF8.encode(a));
  const y = Uint8Array.wrap(String.UTF8.encode(b));
  const n = min(x.length, y.length);
  for (let i = 0; i < n; i++) if (x[i] != y[i]) return <i32>x[i] - <i32>y[i];
  return x.length - y.length;
}
