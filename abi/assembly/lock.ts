// The SDK's locks: results, errors, Lock and the calls that take one (the entry
// point, index.ts, re-exports all of it; the shapes built on it live beside it,
// in context.ts and key-status.ts, and import from here).

import {
  ABI_VERSION,
  OK,
  TRY_CONTENDED,
  CONTENDED,
  TIMEOUT,
  NOT_FOUND,
  OWNERSHIP_MISMATCH,
  ALREADY_RELEASED,
  LOST,
  INVALID_ARGUMENT,
  INVALID_HANDLE,
  INVALID_MEMORY,
  PERMISSION_DENIED,
  BACKEND_UNAVAILABLE,
  INTERNAL,
  CANCELLED,
  PERMITS_MISMATCH,
  CALL_FAILED,
  TOO_LARGE,
  FLAG_GLOBAL,
  FLAG_KEEP,
  FLAG_KEEPALIVE,
  FLAG_RW,
  FLAG_SEMAPHORE,
  FLAG_FAIR,
  STATE_HELD,
} from "../status";
import {
  lock_try,
  lock_acquire,
  lock_state,
  lock_restore,
  lock_renew,
  lock_release,
  lock_fence,
  lock_owner,
  lock_status,
  lock_last_error,
  lock_try_read,
  lock_try_write,
  lock_acquire_read,
  lock_acquire_write,
  lock_try_permit,
  lock_acquire_permit,
} from "./bindings";


/** Short alias of `FLAG_GLOBAL`: the key is shared across plugins (`global:<key>`), if the config allows it. */
export const GLOBAL: i32 = FLAG_GLOBAL;
/** Short alias of `FLAG_KEEP`: keep the lock after the current export call returns. */
export const KEEP: i32 = FLAG_KEEP;
/**
 * Short alias of `FLAG_KEEPALIVE`: the host renews the lock (batched, at half its
 * TTL) until it is released; if a renewal is refused or cannot be confirmed in
 * time, the lock is lost (`Lock.state()`, `lockhost_on_lost`).
 */
export const KEEPALIVE: i32 = FLAG_KEEPALIVE;
/**
 * Short alias of `FLAG_FAIR`, for `tryLock` and `acquire`: the key's fair mutex, whose
 * waiters on every host take it first come, first served (a try is refused while one
 * waits). A fair mutex and a plain mutex of one key are two locks: agree on one.
 */
export const FAIR: i32 = FLAG_FAIR;

/**
 * The ABI version this guest was built against. Every guest must re-export it
 * from its entry file: `export { lockhost_abi_version } from "lockhost";`
 */
export function lockhost_abi_version(): i32 {
  return ABI_VERSION;
}

/** The name of a (positive) status code, e.g. `statusName(7)` is `"INVALID_ARGUMENT"`. */
export function statusName(code: i32): string {
  switch (code) {
    case OK: return "OK";
    case CONTENDED: return "CONTENDED";
    case TIMEOUT: return "TIMEOUT";
    case NOT_FOUND: return "NOT_FOUND";
    case OWNERSHIP_MISMATCH: return "OWNERSHIP_MISMATCH";
    case ALREADY_RELEASED: return "ALREADY_RELEASED";
    case LOST: return "LOST";
    case INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case INVALID_HANDLE: return "INVALID_HANDLE";
    case INVALID_MEMORY: return "INVALID_MEMORY";
    case PERMISSION_DENIED: return "PERMISSION_DENIED";
    case BACKEND_UNAVAILABLE: return "BACKEND_UNAVAILABLE";
    case INTERNAL: return "INTERNAL";
    case CANCELLED: return "CANCELLED";
    case PERMITS_MISMATCH: return "PERMITS_MISMATCH";
    case CALL_FAILED: return "CALL_FAILED";
    case TOO_LARGE: return "TOO_LARGE";
    default: return "UNKNOWN_" + code.toString();
  }
}

/** A failed call: the status code and the host's message. */
export class LockError {
  /** The status code, positive (e.g. `INVALID_ARGUMENT`); the raw call returned `-code`. */
  readonly code: i32;
  /** The host's human-readable message (from `last_error`), naming the argument at fault. */
  readonly message: string;

  constructor(code: i32, message: string) {
    this.code = code;
    this.message = message;
  }

  /** The code's name, e.g. `"INVALID_ARGUMENT"`. */
  get name(): string {
    return statusName(this.code);
  }

  /** `"NAME (code): message"`. */
  toString(): string {
    return this.name + " (" + this.code.toString() + "): " + this.message;
  }
}

/**
 * The error for a raw result `-code` that a lock import just returned: reads
 * the message with `lastError()`. Call it right after the failed call.
 * `code` may be given negated (raw) or positive.
 */
export function errorFromCode(code: i32): LockError {
  return new LockError(code < 0 ? -code : code, lastError());
}

/** A lock this guest holds (or held): obtained from `tryLock` or `withLock`. */
export class Lock {
  /** The key as the guest named it (without the plugin/global namespace). */
  readonly key: string;
  /** The raw handle (`> 0`) for the `lock_*` bindings. */
  readonly handle: i32;
  /** The flags the lock was taken with (`GLOBAL`, `KEEP`, `KEEPALIVE`). */
  readonly flags: i32;
  private _released: bool = false;

  /**
   * Wraps a raw handle. Normally you get a `Lock` from `tryLock`; this is for
   * code that took the lock with the raw `lock_try`.
   */
  constructor(key: string, handle: i32, flags: i32 = 0) {
    this.key = key;
    this.handle = handle;
    this.flags = flags;
  }

  /** True once `release()` has succeeded through this object. */
  get released(): bool {
    return this._released;
  }

  /**
   * Extends the lease to `ttlMs` from now on the server's clock; `0` (the
   * default) reuses the TTL the lock was taken with. Returns null on success,
   * else the error (`LOST` if the lease already ended or changed hands).
   */
  renew(ttlMs: i32 = 0): LockError | null {
    const r = lock_renew(this.handle, ttlMs);
    return r < 0 ? errorFromCode(r) : null;
  }

  /**
   * Releases the lock. Returns null on success, else the error
   * (`ALREADY_RELEASED`, `INVALID_HANDLE`, or `LOST` when the lease had
   * already ended: then nothing was deleted).
   */
  release(): LockError | null {
    const r = lock_release(this.handle);
    if (r < 0) return errorFromCode(r);
    this._released = true;
    return null;
  }

  /**
   * The fencing token of this acquisition: `> 0`, strictly increasing per key
   * across holders. Pass it to any resource that checks fences, so it can
   * reject a stale holder. Never aborts: when the host cannot answer (handle
   * released, lease lost, backend down) it returns `-code` (a value `< 0`);
   * `lastError()` then has the message.
   */
  fence(): i64 {
    return lock_fence(this.handle);
  }

  /**
   * Where the lock stands: `STATE_HELD`, `STATE_LOST` (the lease ended while
   * held: expired, force-released, or a keepalive renewal was refused) or
   * `STATE_RELEASED`; `-code` (e.g. `-INVALID_HANDLE`) if the host cannot say.
   * Cheap enough to poll in a long job before each step that needs the lock.
   */
  state(): i32 {
    return lock_state(this.handle);
  }

  /** True while the lock is held (`state() == STATE_HELD`). */
  isHeld(): bool {
    return this.state() == STATE_HELD;
  }

  /**
   * The owner token (a UUID) of this acquisition, or `""` if the host cannot
   * give it (e.g. the handle was released; `lastError()` says why). Use
   * `ownerOf(handle)` for a result carrying the error.
   */
  owner(): string {
    return ownerOf(this.handle).value;
  }
}

/**
 * The outcome of `tryLock` / `acquire` / `withLock` / `restore`. Exactly one of
 * these holds:
 * - acquired: `lock` is non-null (`acquired` is true);
 * - contended: `contended` is true (someone else holds the key; not an error).
 *   From `acquire`, `timedOut` is true too: the key stayed held for the whole
 *   wait (`lastError()` says how long this guest waited);
 * - failed: `error` is non-null (bad input, permission, backend down, ...).
 *
 * AssemblyScript narrows nullable locals, not fields: read `r.lock` into a
 * local (`const lock = r.lock; if (lock) { ... }`) or use `r.lock!` after
 * checking `r.acquired`.
 */
export class TryResult {
  /** The lock when acquired, else null. */
  readonly lock: Lock | null;
  /** True when another holder has the key. */
  readonly contended: bool;
  /** True when `acquire` waited its whole `waitMs` and the key stayed held (then `contended` is true too). */
  readonly timedOut: bool;
  /** The error when the call failed, else null. */
  readonly error: LockError | null;
  /**
   * Set by `withLock` only: the error of its automatic release after the
   * callback (e.g. `LOST`: the lease ended while the callback ran, so its work
   * may not have been exclusive). Null otherwise.
   */
  releaseError: LockError | null = null;

  constructor(lock: Lock | null, contended: bool, error: LockError | null, timedOut: bool = false) {
    this.lock = lock;
    this.contended = contended;
    this.error = error;
    this.timedOut = timedOut;
  }

  /** True when the lock was acquired (`lock` is non-null). */
  get acquired(): bool {
    return this.lock != null;
  }
}

/** A string the host wrote back (owner token, status JSON), or the error. */
export class TextResult {
  /** The string; `""` when `error` is set. */
  readonly value: string;
  /** The error, or null on success. */
  readonly error: LockError | null;

  constructor(value: string, error: LockError | null) {
    this.value = value;
    this.error = error;
  }

  /** True when there is no error. */
  get ok(): bool {
    return this.error == null;
  }
}

/**
 * Tries once to take the lock on `key` (1 to `MAX_KEY_BYTES` UTF-8 bytes) for
 * `ttlMs` milliseconds (1 to `MAX_TTL_MS`). `flags`: `0` or an OR of `GLOBAL`,
 * `KEEP`, `KEEPALIVE` and `FAIR` (the key's fair mutex). Never waits and never aborts: see `TryResult`.
 * Without `KEEP` the host releases the lock when the current export returns.
 */
export function tryLock(key: string, ttlMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  const r = lock_try(changetype<usize>(buf), buf.byteLength, ttlMs, flags);
  if (r > 0) return new TryResult(new Lock(key, r, flags), false, null);
  if (r == TRY_CONTENDED) return new TryResult(null, true, null);
  return new TryResult(null, false, errorFromCode(r));
}

/**
 * Takes the lock on `key` for `ttlMs`, waiting up to `waitMs` milliseconds (0 to
 * `MAX_WAIT_MS`) for its holder to let go: it returns as soon as the key is
 * released, not at the end of the wait. `flags` as for `tryLock` (`GLOBAL`,
 * `KEEP`, `KEEPALIVE`, `FAIR`: wait in the fair mutex's queue, in arrival order across hosts). When the key stays held, the result is contended with
 * `timedOut` set. While it waits only this guest is blocked. A wait longer than
 * what is left of the call's time limit is cut short, so the guest still gets
 * its timeout (`lastError()` says so) before the host stops the call.
 */
export function acquire(key: string, ttlMs: i32, waitMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  const r = lock_acquire(changetype<usize>(buf), buf.byteLength, ttlMs, waitMs, flags);
  if (r > 0) return new TryResult(new Lock(key, r, flags), false, null);
  if (r == -TIMEOUT) return new TryResult(null, true, null, true);
  return new TryResult(null, false, errorFromCode(r));
}

/**
 * A `Lock` for a lock taken elsewhere (another process or guest, which handed
 * over its owner token: `Lock.owner()`), so this guest can renew or release it.
 * `ttlMs` 0 (the default) renews with the TTL the lock's current lease was set with;
 * `flags` as for `tryLock` (`KEEP` to keep it after this call, `KEEPALIVE`).
 * Never contended: the result has `lock`, or `error` (`NOT_FOUND`: nobody holds
 * the key; `OWNERSHIP_MISMATCH`: someone else does; `ALREADY_RELEASED`: this
 * host already released that owner's lock).
 */
export function restore(key: string, owner: string, ttlMs: i32 = 0, flags: i32 = 0): TryResult {
  const k = String.UTF8.encode(key);
  const o = String.UTF8.encode(owner);
  const r = lock_restore(changetype<usize>(k), k.byteLength, changetype<usize>(o), o.byteLength, ttlMs, flags);
  if (r > 0) return new TryResult(new Lock(key, r, flags), false, null);
  return new TryResult(null, false, errorFromCode(r));
}

/**
 * The state of the schedule's lock during a scheduled call (handle 0):
 * `STATE_HELD`, `STATE_LOST` or `STATE_RELEASED`; `-INVALID_HANDLE` outside a
 * scheduled call. A long scheduled job polls it to stop early once the lock is
 * lost (another node may run the same tick).
 */
export function scheduleLockState(): i32 {
  return lock_state(0);
}

/**
 * Takes the lock like `tryLock`, and if acquired runs `fn(lock)` and then
 * always releases the lock (unless `fn` already released it); a failed
 * automatic release is reported in `releaseError`. If not acquired, `fn` is not
 * called: check `contended` / `error` on the result.
 *
 * `fn` is a plain function (AssemblyScript closures cannot capture locals):
 * pass state through globals or through the `Lock`. If `fn` traps (abort,
 * `unreachable`, out-of-bounds access), the call ends there and the host
 * releases every lock this instance holds (auto-release on trap).
 */
export function withLock(key: string, ttlMs: i32, fn: (lock: Lock) => void, flags: i32 = 0): TryResult {
  const r = tryLock(key, ttlMs, flags);
  const lock = r.lock;
  if (lock) {
    fn(lock);
    if (!lock.released) r.releaseError = lock.release();
  }
  return r;
}

/**
 * The status JSON of `key` (see ABI.md: `{"key":…,"held":…,…}`), or the error.
 * `flags`: `0` or `GLOBAL`.
 */
export function keyStatus(key: string, flags: i32 = 0): TextResult {
  return readText(OP_STATUS, 256, 0, String.UTF8.encode(key), flags);
}

// --- Read/write locks and semaphores. Each kind has its own names: a read/write
// lock "a", a semaphore "a" and a lock "a" are three locks. What they return is a
// `TryResult` with a `Lock`, as `tryLock`'s: renew, release, fence, state, KEEP,
// KEEPALIVE, auto-release and `lockhost_on_lost` work the same.

/**
 * A read lock on `key`: readers share it. Contended while a writer holds the
 * key or waits for it (writers are preferred, so they are not starved).
 */
export function tryRead(key: string, ttlMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_try_read(changetype<usize>(buf), buf.byteLength, ttlMs, flags));
}

/** The write lock on `key`: contended while anyone reads or writes it, or another writer waits before. */
export function tryWrite(key: string, ttlMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_try_write(changetype<usize>(buf), buf.byteLength, ttlMs, flags));
}

/** `tryRead`, waiting up to `waitMs` (woken by releases); `timedOut` when no read lock came. */
export function read(key: string, ttlMs: i32, waitMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_acquire_read(changetype<usize>(buf), buf.byteLength, ttlMs, waitMs, flags));
}

/**
 * `tryWrite`, waiting up to `waitMs` in the key's writer queue: readers arriving
 * after this writer wait behind it, and writers are served in arrival order.
 */
export function write(key: string, ttlMs: i32, waitMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_acquire_write(changetype<usize>(buf), buf.byteLength, ttlMs, waitMs, flags));
}

/**
 * One of the `permits` permits (1 to 1,000,000) of the semaphore `key`:
 * contended when all are taken. Every holder of a key must name the same
 * number: another is an error `PERMITS_MISMATCH` until its holders let go.
 */
export function trySemaphore(key: string, permits: i32, ttlMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_try_permit(changetype<usize>(buf), buf.byteLength, permits, ttlMs, flags));
}

/** `trySemaphore`, waiting up to `waitMs` for a permit; `timedOut` when none came. */
export function semaphore(key: string, permits: i32, ttlMs: i32, waitMs: i32, flags: i32 = 0): TryResult {
  const buf = String.UTF8.encode(key);
  return taken(key, flags, lock_acquire_permit(changetype<usize>(buf), buf.byteLength, permits, ttlMs, waitMs, flags));
}

/** `withLock` with a read lock: runs `fn(lock)` holding it, then releases it. */
export function withRead(key: string, ttlMs: i32, fn: (lock: Lock) => void, flags: i32 = 0): TryResult {
  return runHolding(tryRead(key, ttlMs, flags), fn);
}

/** `withLock` with the write lock. */
export function withWrite(key: string, ttlMs: i32, fn: (lock: Lock) => void, flags: i32 = 0): TryResult {
  return runHolding(tryWrite(key, ttlMs, flags), fn);
}

/** `withLock` holding one permit of the semaphore `key` with `permits` permits. */
export function withPermit(key: string, permits: i32, ttlMs: i32, fn: (lock: Lock) => void, flags: i32 = 0): TryResult {
  return runHolding(trySemaphore(key, permits, ttlMs, flags), fn);
}

/** The status JSON of the read/write lock `key` (`kind`, `held`, `holders` with `mode`, `queued`). `flags`: `0` or `GLOBAL`. */
export function rwStatus(key: string, flags: i32 = 0): TextResult {
  return readText(OP_STATUS, 512, 0, String.UTF8.encode(key), flags | FLAG_RW);
}

/** The status JSON of the semaphore `key` (`kind`, `held`, `limit`, `holders`). `flags`: `0` or `GLOBAL`. */
export function semaphoreStatus(key: string, flags: i32 = 0): TextResult {
  return readText(OP_STATUS, 512, 0, String.UTF8.encode(key), flags | FLAG_SEMAPHORE);
}

/** The status JSON of the fair mutex `key` (`kind` "fair", `held`, `holders`, `queued`). `flags`: `0` or `GLOBAL`. */
export function fairStatus(key: string, flags: i32 = 0): TextResult {
  return readText(OP_STATUS, 512, 0, String.UTF8.encode(key), flags | FLAG_FAIR);
}

/** A TryResult from a take's raw result (a handle, TRY_CONTENDED, -TIMEOUT from a wait, or -code). */
function taken(key: string, flags: i32, r: i32): TryResult {
  if (r > 0) return new TryResult(new Lock(key, r, flags), false, null);
  if (r == TRY_CONTENDED) return new TryResult(null, true, null);
  if (r == -TIMEOUT) return new TryResult(null, true, null, true);
  return new TryResult(null, false, errorFromCode(r));
}

/** Runs `fn` with the lock of `r` if it has one, then releases it (its error in `releaseError`). */
function runHolding(r: TryResult, fn: (lock: Lock) => void): TryResult {
  const lock = r.lock;
  if (lock) {
    fn(lock);
    if (!lock.released) r.releaseError = lock.release();
  }
  return r;
}

/** The owner token of a raw handle, or the error (e.g. `INVALID_HANDLE`). */
export function ownerOf(handle: i32): TextResult {
  return readText(OP_OWNER, 64, handle, null, 0);
}

/**
 * The message about this guest instance's last lock call: its error when it
 * failed, whose key it was when `tryLock` found it contended (e.g.
 * `"CONTENDED: lock report:nightly is held by another owner"`), and `""` after
 * any other success. Read it right after the call it is about.
 */
export function lastError(): string {
  return readText(OP_LAST_ERROR, 256, 0, null, 0).value;
}

// --- buffer protocol: call with a buffer; if the answer is longer than the
// buffer (then nothing was written), retry with a buffer of that length.

// @ts-ignore: decorator
@inline const OP_OWNER = 0;
// @ts-ignore: decorator
@inline const OP_STATUS = 1;
// @ts-ignore: decorator
@inline const OP_LAST_ERROR = 2;

function callText(op: i32, handle: i32, key: ArrayBuffer | null, flags: i32, buf: ArrayBuffer): i32 {
  const bufPtr = changetype<usize>(buf);
  const cap = buf.byteLength;
  if (op == OP_OWNER) return lock_owner(handle, bufPtr, cap);
  if (op == OP_STATUS) {
    // `key` is a parameter so it stays reachable (GC) while buffers are allocated.
    return lock_status(changetype<usize>(key), key!.byteLength, flags, bufPtr, cap);
  }
  return lock_last_error(bufPtr, cap);
}

function readText(op: i32, initialCap: i32, handle: i32, key: ArrayBuffer | null, flags: i32): TextResult {
  let cap = initialCap;
  // The answer can change between two calls (a status JSON), so retry a few times.
  for (let attempt = 0; attempt < 4; attempt++) {
    const buf = new ArrayBuffer(cap);
    const n = callText(op, handle, key, flags, buf);
    if (n < 0) {
      // Reading last_error cannot itself go through lastError() (it just failed).
      const message = op == OP_LAST_ERROR ? "" : lastError();
      return new TextResult("", new LockError(-n, message));
    }
    if (n <= cap) return new TextResult(String.UTF8.decodeUnsafe(changetype<usize>(buf), <usize>n), null);
    cap = n;
  }
  return new TextResult("", new LockError(INTERNAL, "lockhost SDK: the host's answer kept growing past the buffer"));
}
