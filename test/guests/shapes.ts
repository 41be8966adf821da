// Test guest for issue 14's guest-side shapes: withLockCtx with a context value, keyStatusOf
// as a typed value, lastError describing the last call, and exports taking strings from the
// host (through lockhost_alloc / lockhost_free). Results are traced so the tests can read them.
import {
  Lock,
  KEEP,
  GLOBAL,
  tryLock,
  withLockCtx,
  keyStatusOf,
  parseKeyStatus,
  lastError,
  restore,
  tryLocks,
  acquireLocks,
  releaseLocks,
} from "../../abi/assembly/index";

export { lockhost_abi_version, lockhost_alloc, lockhost_free } from "../../abi/assembly/index";

class Job {
  runs: i32 = 0;
  fence: i64 = 0;
  constructor(public name: string) {}
}

/** withLockCtx on `key`: the callback counts into the context; returns runs (0: not acquired). */
export function ctxRun(key: string, times: i32): i32 {
  const job = new Job(key);
  for (let i = 0; i < times; i++) {
    const r = withLockCtx<Job>(key, 10_000, job, (lock: Lock, job: Job): void => {
      job.runs++;
      job.fence = lock.fence();
      trace("ctx " + job.name + " in " + lock.key);
    });
    if (!r.acquired) trace("ctx not acquired: contended=" + (r.contended ? "1" : "0") + " " + lastError());
  }
  return job.runs;
}

/** Takes `key` and keeps it: 1 when acquired, 0 when contended. */
export function take(key: string, flags: i32): i32 {
  return tryLock(key, 10_000, flags | KEEP).acquired ? 1 : 0;
}

/** Traces the typed status of `key`; returns 1 when held. */
export function status(key: string, global: i32): i32 {
  const r = keyStatusOf(key, global != 0 ? GLOBAL : 0);
  const s = r.status;
  if (!s) {
    trace("status error " + r.error!.toString());
    return -1;
  }
  trace("status key=" + s.key + " held=" + (s.held ? "1" : "0") + " plugin=" + s.plugin + " node=" + s.node
    + " fence=" + s.fence.toString() + " ttl=" + s.ttlMs.toString() + " left>0=" + (s.ttlRemainingMs > 0 ? "1" : "0")
    + " expires>acquired=" + (s.expiresAtMs > s.acquiredAtMs ? "1" : "0"));
  return s.held ? 1 : 0;
}

/** Parses a status text handed in by the host: traces what came out, -1 when unreadable. */
export function parse(json: string): i32 {
  const s = parseKeyStatus(json);
  if (!s) return -1;
  trace("parsed key=" + s.key + " held=" + (s.held ? "1" : "0") + " plugin=" + s.plugin + " node=" + s.node + " fence=" + s.fence.toString());
  return 1;
}

/** A failed call, then a success: traces last_error after each. */
export function lastErrorCleared(key: string): void {
  tryLock(key, 0, 0); // ttlMs 0: INVALID_ARGUMENT
  trace("after failure: " + lastError());
  const r = tryLock(key, 10_000, 0);
  trace("after success: [" + lastError() + "] acquired=" + (r.acquired ? "1" : "0"));
}

/** A try on `key`, then traces last_error (a contended one names the lock). */
export function contendedNote(key: string): i32 {
  const r = tryLock(key, 10_000, 0);
  trace("after try: [" + lastError() + "]");
  return r.contended ? 1 : 0;
}

/** Restores the lock on `key` by the owner token the host hands in, and releases it: 1 on success. */
export function restoreAndRelease(key: string, owner: string): i32 {
  const r = restore(key, owner);
  const lock = r.lock;
  if (!lock) {
    trace("restore failed: " + r.error!.toString());
    return 0;
  }
  const e = lock.release();
  return e ? 0 : 1;
}

/** Two strings and a number: traces them joined (arguments keep their order and content). */
export function echo(a: string, n: i32, b: string): i32 {
  trace("echo [" + a + "] " + n.toString() + " [" + b + "]");
  return a.length + b.length;
}

/**
 * Takes keys a, b, c all or nothing (waitMs < 0: try, else wait up to it); traces the keys in
 * the order taken with their fences, or the key that could not be had. Returns how many it
 * held (released before returning), 0 when contended, -code on error.
 */
export function takeSet(a: string, b: string, c: string, waitMs: i32): i32 {
  const r = waitMs < 0 ? tryLocks([a, b, c], 10_000) : acquireLocks([a, b, c], 10_000, waitMs);
  const locks = r.locks;
  if (!locks) {
    trace("set not taken: " + (r.contended ? "contended at " : "error at ") + r.failedKey + (r.error ? " " + r.error!.toString() : ""));
    return r.error ? -r.error!.code : 0;
  }
  let line = "set";
  for (let i = 0; i < locks.length; i++) line += " " + locks[i].key + "=" + locks[i].fence().toString();
  trace(line);
  releaseLocks(locks);
  return locks.length;
}
