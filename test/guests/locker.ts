// Test guest for the host's tests. Every export takes i32 arguments and returns a
// number, so tests can drive it without touching guest memory. A key id `n`
// names the key "k<n>".
//
// Raw results follow ABI.md: try gives a handle > 0, 0 when contended, -code on
// error. Exports marked "bad input" return the raw result and, on error, trace
// "error <code>: <last_error message>" with the positive status code.

import {
  tryLock,
  KEEP,
  keyStatus,
  ownerOf,
  lastError,
  lock_try,
  lock_renew,
  lock_release,
  lock_fence,
  lock_owner,
  lock_status,
  lock_last_error,
} from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

/** An address far outside any memory the host will allow. */
const BAD_PTR: usize = 0x7ffffff0;

function keyOf(keyId: i32): string {
  return "k" + keyId.toString();
}

/** Raw `lock.try` on the UTF-8 bytes of `key`. */
function rawTry(key: string, ttlMs: i32, flags: i32): i32 {
  const buf = String.UTF8.encode(key);
  return lock_try(changetype<usize>(buf), buf.byteLength, ttlMs, flags);
}

/** Returns `r`; if it is an error, traces "error <code>: <message>". */
function traced(r: i32): i32 {
  if (r < 0) trace("error " + (-r).toString() + ": " + lastError());
  return r;
}

// --- acquisition ---------------------------------------------------------

/** Raw try on "k<keyId>": handle > 0, 0 contended, -code. */
export function hold(keyId: i32, ttlMs: i32, flags: i32): i32 {
  return rawTry(keyOf(keyId), ttlMs, flags);
}

// The loop condition reads a mutable global and the body bumps a counter, so the
// optimizer keeps the loop as a real spin.
let spinning = true;
let spins: i32 = 0;

/** Acquires "k<keyId>", then spins forever (time-limit and worker-crash tests). */
export function holdSpin(keyId: i32, ttlMs: i32): void {
  rawTry(keyOf(keyId), ttlMs, 0);
  while (spinning) spins++;
}

/**
 * Acquires "k<keyId>", then aborts with "boom in holdTrap" and this file and
 * line. (`assert(false, msg)` is the AssemblyScript abort that carries the
 * location; a bare `abort(msg)` passes a null file name and line 0.)
 */
export function holdTrap(keyId: i32, ttlMs: i32): void {
  rawTry(keyOf(keyId), ttlMs, 0);
  assert(false, "boom in holdTrap");
}

/**
 * Acquires "k<keyId>", then calls a bare `abort("boom in holdAbort")`: env.abort
 * gets file name 0 and line 0, and asc emits no `unreachable` after it, so the
 * call traps only if the host's env.abort throws.
 */
export function holdAbort(keyId: i32, ttlMs: i32): void {
  rawTry(keyOf(keyId), ttlMs, 0);
  abort("boom in holdAbort");
}

/** Acquires "k<keyId>", then executes `unreachable`. */
export function holdUnreachable(keyId: i32, ttlMs: i32): void {
  rawTry(keyOf(keyId), ttlMs, 0);
  unreachable();
}

// --- raw handle operations ------------------------------------------------

/** Raw `lock.release`. */
export function release(handle: i32): i32 {
  return lock_release(handle);
}

/** Raw `lock.renew`. */
export function renew(handle: i32, ttlMs: i32): i32 {
  return lock_renew(handle, ttlMs);
}

/** Raw `lock.fence`. */
export function fence(handle: i32): i64 {
  return lock_fence(handle);
}

// --- through the SDK --------------------------------------------------------

/** SDK tryLock: 1 acquired (then released), 2 contended, 100 + code on error (and traces it). */
export function outcome(keyId: i32, ttlMs: i32, flags: i32): i32 {
  const r = tryLock(keyOf(keyId), ttlMs, flags);
  const lock = r.lock;
  if (lock) {
    lock.release();
    return 1;
  }
  if (r.contended) return 2;
  const err = r.error!;
  trace("error " + err.name + ": " + err.message);
  return 100 + err.code;
}

/** SDK tryLock, then lock.fence(), then release; -code if not acquired (-1000 if contended). */
export function fenceOf(keyId: i32, ttlMs: i32): i64 {
  const r = tryLock(keyOf(keyId), ttlMs, 0);
  const lock = r.lock;
  if (!lock) return r.contended ? -1000 : -(<i64>r.error!.code);
  const f = lock.fence();
  lock.release();
  return f;
}

/** SDK owner of a raw handle: traces "owner <token>", returns its length, or -code. */
export function ownerLen(handle: i32): i32 {
  const r = ownerOf(handle);
  if (r.error) {
    const err = r.error!;
    trace("error " + err.name + ": " + err.message);
    return -err.code;
  }
  trace("owner " + r.value);
  return r.value.length;
}

/** SDK keyStatus: traces "status <json>", returns its UTF-8 length, or -code. */
export function statusLen(keyId: i32, flags: i32): i32 {
  const r = keyStatus(keyOf(keyId), flags);
  if (r.error) {
    const err = r.error!;
    trace("error " + err.name + ": " + err.message);
    return -err.code;
  }
  trace("status " + r.value);
  return String.UTF8.byteLength(r.value);
}

// --- bad input (raw results) ----------------------------------------------

/** try with an empty key (len 0). */
export function tryEmptyKey(): i32 {
  const buf = new ArrayBuffer(1);
  return traced(lock_try(changetype<usize>(buf), 0, 10_000, 0));
}

/** try with a key of `len` 'a' bytes. */
export function tryLongKey(len: i32): i32 {
  const buf = new ArrayBuffer(len);
  memory.fill(changetype<usize>(buf), 0x61, <usize>len);
  return traced(lock_try(changetype<usize>(buf), len, 10_000, 0));
}

/** try with the invalid UTF-8 bytes 0xff 0xfe. */
export function tryInvalidUtf8(): i32 {
  const buf = new ArrayBuffer(2);
  store<u8>(changetype<usize>(buf), 0xff);
  store<u8>(changetype<usize>(buf) + 1, 0xfe);
  return traced(lock_try(changetype<usize>(buf), 2, 10_000, 0));
}

/** try "k0" with the given TTL. */
export function tryTtl(ttlMs: i32): i32 {
  return traced(rawTry("k0", ttlMs, 0));
}

/** try with a key pointer outside memory (ptr 0x7ffffff0, len 16). */
export function tryBadPointer(): i32 {
  return traced(lock_try(BAD_PTR, 16, 10_000, 0));
}

/** try "k0" with an unknown flag bit (0x100). */
export function tryBadFlags(): i32 {
  return traced(rawTry("k0", 10_000, 0x100));
}

/** owner with a buffer outside memory. */
export function ownerBadBuffer(handle: i32): i32 {
  return traced(lock_owner(handle, BAD_PTR, 64));
}

/** status of "k0" with a buffer outside memory. */
export function statusBadBuffer(): i32 {
  const key = String.UTF8.encode("k0");
  return traced(lock_status(changetype<usize>(key), key.byteLength, 0, BAD_PTR, 256));
}

/** last_error with a buffer outside memory. */
export function lastErrorBadBuffer(): i32 {
  return traced(lock_last_error(BAD_PTR, 256));
}

/** release of a handle never given out (0x12345). */
export function releaseForged(): i32 {
  return traced(lock_release(0x12345));
}

/** release of handle 0. */
export function releaseZero(): i32 {
  return traced(lock_release(0));
}

/** release of handle -5. */
export function releaseNegative(): i32 {
  return traced(lock_release(-5));
}

// --- memory and plumbing ----------------------------------------------------

/** memory.grow(pages): the previous size in pages, or -1 past the memory's maximum. */
export function growMemory(pages: i32): i32 {
  return memory.grow(pages);
}

/** Does nothing (call overhead). */
export function noop(): void {}

/** a + b. */
export function add(a: i32, b: i32): i32 {
  return a + b;
}

// --- host robustness ---------------------------------------------------------

/** Traces `n` lines (the host caps what one call may log). */
export function traceFlood(n: i32): void {
  for (let i = 0; i < n; i++) trace("flood " + i.toString());
}

/** Takes an i64, which the host cannot pass: it must refuse the call, not trap the guest. */
export function wide(x: i64): i64 {
  return x + 1;
}

/** Allocates 64 KiB blocks until the allocator cannot grow memory any more (it traps). */
export function exhaustMemory(): i32 {
  const kept = new Array<ArrayBuffer>();
  for (;;) kept.push(new ArrayBuffer(64 * 1024));
  return kept.length;
}

/**
 * Takes "m0", "m1", … "m<n-1>" with KEEP. Returns n when every one was taken, else
 * -(i * 100 + code) for the first that was not (code 99 when it was contended).
 */
export function holdMany(n: i32, ttlMs: i32): i32 {
  for (let i = 0; i < n; i++) {
    const h = rawTry("m" + i.toString(), ttlMs, KEEP);
    if (h <= 0) return -(i * 100 + (h == 0 ? 99 : -h));
  }
  return n;
}
