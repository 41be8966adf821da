// The lock ABI's operations, each declared once: its import name, its arguments and how they
// cross the boundary, its result, the error codes it returns, the flags it takes and the
// runtimes that serve it. The guest import table, the worker channel's encoding, the host's
// dispatch, the loader's list of provided imports and the operation tables of abi/ABI.md and
// the README all derive from this table (test/abi-ops.test.ts holds the docs and the
// AssemblyScript bindings to it). Adding an operation touches this table, its implementation
// in host/runtime/lock-ops.ts, and its tests.
import { FLAG_GLOBAL, FLAG_KEEP, FLAG_KEEPALIVE, FLAG_RW, FLAG_SEMAPHORE } from "./status.js";

/**
 * How one argument crosses the boundary. A string kind is two wasm params (ptr, len) that the
 * runtime bounds-checks and decodes (strict UTF-8, 1 to MAX_KEY_BYTES bytes) once; `out` is a
 * guest buffer (ptr, cap) the string result is written into when it fits.
 */
export type ArgKind = "key" | "owner" | "handle" | "ttl" | "wait" | "permits" | "flags" | "out";

/** The runtimes a guest can run in: its own worker thread, or the host's thread through JSPI. */
export type Runtime = "worker" | "inline";

/** One operation of the `lock` import module. */
export interface OpSpec {
  /** The import name in module `lock`. */
  readonly name: string;
  /** Arguments in ABI order. */
  readonly args: readonly ArgKind[];
  /** The wasm result type: i64 only for fences, which need more than 31 bits. */
  readonly result: "i32" | "i64";
  /** Flag bits the operation accepts (0: it takes no flags argument). */
  readonly flags: number;
  /** Status codes (names in abi/status.ts) it can return negated, besides INVALID_MEMORY for bad pointers. */
  readonly codes: readonly string[];
  /** Runtimes that provide it. */
  readonly runtimes: readonly Runtime[];
  /**
   * Served inside the guest's runtime without asking the host's lock service (last_error):
   * no channel round trip.
   */
  readonly local?: boolean;
  /** The result, as ABI.md's operation table says it. */
  readonly doc: string;
  /** The result in a few words, for the README's table. */
  readonly brief: string;
}

const TAKE_FLAGS = FLAG_GLOBAL | FLAG_KEEP | FLAG_KEEPALIVE;
/** Every operation runs in both runtimes (one guest suite holds them to the same behaviour). */
const RUNTIMES: readonly Runtime[] = ["worker", "inline"];

/** What a try of any kind can return besides its result. */
const TRY_CODES = ["INVALID_ARGUMENT", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE"] as const;
/** What a waiting acquire of any kind can return: a try's codes, the wait running out, the host shutting down. */
const WAIT_CODES = ["TIMEOUT", ...TRY_CODES, "CANCELLED"] as const;

/** Every operation of ABI version 1, in the order the docs list them. */
export const OPS = [
  {
    name: "try",
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc: "handle `> 0` when acquired; `TRY_CONTENDED` (0) when someone else holds the key; `-code` on error",
    brief: "handle `> 0`, `0` contended, `-code`",
  },
  {
    name: "acquire",
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc: 'handle `> 0` when acquired, waiting up to `wait_ms` for the key (it returns as soon as the holder lets go, see "Waiting"); `-TIMEOUT` when the key stayed held (`last_error` says how long this guest waited); `-code` on error. Never returns 0: with `wait_ms = 0` a held key is `-TIMEOUT` at once.',
    brief: "handle `> 0` once the key is free, `-TIMEOUT` after `wait_ms`, `-code`",
  },
  {
    name: "renew",
    args: ["handle", "ttl"],
    result: "i32",
    flags: 0,
    codes: ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE", "INVALID_ARGUMENT", "BACKEND_UNAVAILABLE"],
    runtimes: RUNTIMES,
    doc: "`OK` (0), or `-code`. Sets the lease to `ttl_ms` from now on the server's clock; `ttl_ms = 0` reuses the TTL the lock was taken with. `-LOST` if the lock expired or changed hands.",
    brief: "`0` or `-code`",
  },
  {
    name: "release",
    args: ["handle"],
    result: "i32",
    flags: 0,
    codes: ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE", "BACKEND_UNAVAILABLE"],
    runtimes: RUNTIMES,
    doc: "`OK`, or `-code` (`-ALREADY_RELEASED`, `-INVALID_HANDLE`, `-LOST` when the lease had already ended: then nothing is deleted).",
    brief: "`0` or `-code`",
  },
  {
    name: "fence",
    args: ["handle"],
    result: "i64",
    flags: 0,
    codes: ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE"],
    runtimes: RUNTIMES,
    doc: "the lock's fencing token (`> 0`), or `-code`.",
    brief: "fencing token or `-code`",
  },
  {
    name: "owner",
    args: ["handle", "out"],
    result: "i32",
    flags: 0,
    codes: ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE"],
    runtimes: RUNTIMES,
    doc: "length of the owner token (a UUID), or `-code`.",
    brief: "length of the owner token",
  },
  {
    name: "status",
    args: ["key", "flags", "out"],
    result: "i32",
    flags: FLAG_GLOBAL | FLAG_RW | FLAG_SEMAPHORE,
    codes: ["INVALID_ARGUMENT", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE"],
    runtimes: RUNTIMES,
    doc: "length of the status JSON of the key, or `-code`: a mutex's (`held`, `holder`, `fence`, times), or with `FLAG_RW` / `FLAG_SEMAPHORE` a read/write lock's or semaphore's (`kind`, `limit`, `holders` each with `mode`, `fence`, holder and times, `queued`).",
    brief: "length of the status JSON",
  },
  {
    name: "state",
    args: ["handle"],
    result: "i32",
    flags: 0,
    codes: ["INVALID_HANDLE"],
    runtimes: RUNTIMES,
    doc: '`STATE_HELD`, `STATE_LOST` or `STATE_RELEASED` (see "Handle states"), or `-INVALID_HANDLE`. Answered from the host\'s own bookkeeping: no backend round trip.',
    brief: "`1` held, `2` lost, `3` released, or `-code`; handle `0` is the schedule's lock during a scheduled call",
  },
  {
    name: "restore",
    args: ["key", "owner", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["NOT_FOUND", "OWNERSHIP_MISMATCH", "ALREADY_RELEASED", "INVALID_ARGUMENT", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE"],
    runtimes: RUNTIMES,
    doc: "a handle `> 0` for a lock taken elsewhere (another process, another guest) whose owner token (`owner`) this guest was handed, so it can renew or release it; or `-code`: `-NOT_FOUND` (nobody holds the key), `-OWNERSHIP_MISMATCH` (someone else does; nothing is changed), `-ALREADY_RELEASED` (this host released that owner's lock), `-INVALID_ARGUMENT`, `-INVALID_MEMORY`, `-PERMISSION_DENIED`. `ttl_ms = 0` renews with the TTL the lock's current lease was set with (by its acquire or latest renew); otherwise 1 to `MAX_TTL_MS`. The owner token is 1 to 512 bytes of UTF-8.",
    brief: "handle for a lock taken elsewhere, by owner token, or `-code`",
  },
  {
    name: "last_error",
    args: ["out"],
    result: "i32",
    flags: 0,
    codes: [],
    runtimes: RUNTIMES,
    local: true,
    doc: "length of the message about this guest instance's last lock call: its error when it failed, whose key it was when a `try` found it contended, 0 after any other success (or before any call). `last_error` itself changes nothing, unless its buffer is bad: that is a failed call and replaces it.",
    brief: "length of the last error message",
  },
  // Read/write locks and semaphores (appended in v1: a guest importing them needs a host that has them).
  {
    name: "try_read",
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc: "handle `> 0` for a read lock on the key (readers share it); `TRY_CONTENDED` (0) while a writer holds it or waits for it; `-code` on error. The handle works with every handle operation.",
    brief: "read-lock handle `> 0`, `0` contended, `-code`",
  },
  {
    name: "try_write",
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc: "handle `> 0` for the write lock on the key (exclusive: no reader, no other writer); `TRY_CONTENDED` (0) while anyone holds it or a writer waits for it; `-code` on error.",
    brief: "write-lock handle `> 0`, `0` contended, `-code`",
  },
  {
    name: "acquire_read",
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc: "as `try_read`, waiting up to `wait_ms` (woken by releases); `-TIMEOUT` when no read lock came in time.",
    brief: "read-lock handle once free, `-TIMEOUT`, `-code`",
  },
  {
    name: "acquire_write",
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc: "as `try_write`, waiting up to `wait_ms`. A waiting writer queues: readers arriving after it wait behind it, and writers are served in arrival order. `-TIMEOUT` when the key stayed held.",
    brief: "write-lock handle once free, `-TIMEOUT`, `-code`",
  },
  {
    name: "try_permit",
    args: ["key", "permits", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["PERMITS_MISMATCH", ...TRY_CODES],
    runtimes: RUNTIMES,
    doc: "handle `> 0` for one of the `permits` (1 to 1,000,000) permits of the semaphore on the key; `TRY_CONTENDED` (0) when all are taken; `-PERMITS_MISMATCH` when its holders took it with another number; `-code` on error.",
    brief: "permit handle `> 0`, `0` all taken, `-code`",
  },
  {
    name: "acquire_permit",
    args: ["key", "permits", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["PERMITS_MISMATCH", ...WAIT_CODES],
    runtimes: RUNTIMES,
    doc: "as `try_permit`, waiting up to `wait_ms` for a permit; `-TIMEOUT` when none came in time.",
    brief: "permit handle once one is free, `-TIMEOUT`, `-code`",
  },
] as const satisfies readonly OpSpec[];

/** An operation's import name. */
export type OpName = (typeof OPS)[number]["name"];

/** The operations that cross to the host's lock service (all but the local ones). */
export type RemoteOpName = Exclude<OpName, Extract<(typeof OPS)[number], { local: true }>["name"]>;

/** The wasm parameter names an argument kind stands for, in order. */
export const PARAMS_OF: Readonly<Record<ArgKind, readonly string[]>> = {
  key: ["key_ptr", "key_len"],
  owner: ["owner_ptr", "owner_len"],
  handle: ["handle"],
  ttl: ["ttl_ms"],
  wait: ["wait_ms"],
  permits: ["permits"],
  flags: ["flags"],
  out: ["buf_ptr", "buf_cap"],
};

/** Whether an argument kind is a (ptr, len) string the runtime decodes. */
export const isString = (kind: ArgKind): kind is "key" | "owner" => kind === "key" || kind === "owner";

/** An operation's signature as the docs write it: `(key_ptr, key_len, ttl_ms, flags) -> i32`. */
export function signatureOf(op: OpSpec): string {
  return `(${op.args.flatMap((a) => PARAMS_OF[a]).join(", ")}) -> ${op.result}`;
}
