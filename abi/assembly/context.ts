// withLockCtx: withLock for callbacks that need state. AssemblyScript has no closures (a
// function that captures a local fails with AS100), so the state travels as an argument.
import { Lock, TryResult, tryLock } from "./lock";

/**
 * Like `withLock`, with a context value handed to `fn`: takes the lock on `key` for `ttlMs`
 * (once, no wait); if acquired runs `fn(lock, ctx)` and then always releases the lock (unless
 * `fn` already did), a failed release reported in `releaseError`. If not acquired, `fn` is not
 * called: check `contended` / `error` on the result (`lastError()` then says why).
 *
 *     class Job { count: i32 = 0; constructor(public name: string) {} }
 *     const job = new Job("nightly");
 *     withLockCtx<Job>("nightly", 30_000, job, (lock: Lock, job: Job): void => {
 *       job.count++;
 *     });
 *
 * `fn` must still not capture locals (pass them in `ctx`: a class instance for several).
 */
export function withLockCtx<T>(key: string, ttlMs: i32, ctx: T, fn: (lock: Lock, ctx: T) => void, flags: i32 = 0): TryResult {
  const r = tryLock(key, ttlMs, flags);
  const lock = r.lock;
  if (lock) {
    fn(lock, ctx);
    if (!lock.released) r.releaseError = lock.release();
  }
  return r;
}
