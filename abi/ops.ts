// The guest ABI's operations, each declared once: its import module and name, its arguments and
// how they cross the boundary, its result, the error codes it returns, the flags it takes and
// the runtimes that serve it. The guest import table, the worker channel's encoding, the host's
// dispatch, the loader's list of provided imports and the operation tables of abi/ABI.md and
// docs/abi.md all derive from this table (test/docs.test.ts holds the docs and the
// AssemblyScript bindings to it). Adding an operation touches this table, its implementation
// in host/runtime/lock-ops.ts (or the runtime's local imports), and its tests.
import {
  FLAG_FAIR,
  FLAG_FENCE,
  FLAG_GLOBAL,
  FLAG_KEEP,
  FLAG_KEEPALIVE,
  FLAG_RW,
  FLAG_SEMAPHORE,
  MAX_INPUT_BYTES,
  MAX_LEADER_VALUE_BYTES,
  MAX_KEY_BYTES,
  MAX_LOG_BYTES,
  MAX_REQUEST_HEAD_BYTES,
} from "./status.js";

/** How one kind of argument crosses the boundary. */
export interface ArgForm {
  /** The wasm parameters it stands for, in order. */
  readonly params: readonly string[];
  /**
   * `number`: one i32 as given. `text`: (ptr, len) of UTF-8 the runtime bounds-checks and
   * decodes strictly, `minBytes` to `maxBytes` long. `bytes`: (ptr, len) passed through as
   * bytes, up to `maxBytes`. `out`: a guest buffer (ptr, cap) the reply is written into when it fits.
   */
  readonly form: "number" | "text" | "bytes" | "out";
  readonly minBytes?: number;
  readonly maxBytes?: number;
}

const text = (params: readonly string[], maxBytes: number, minBytes = 1) => ({ params, form: "text" as const, minBytes, maxBytes });
const num = (param: string) => ({ params: [param], form: "number" as const });

/** Every kind of argument an operation can take. */
export const ARG_FORMS = {
  key: text(["key_ptr", "key_len"], MAX_KEY_BYTES),
  owner: text(["owner_ptr", "owner_len"], MAX_KEY_BYTES),
  /** A capability's or a config key's name. */
  name: text(["name_ptr", "name_len"], MAX_KEY_BYTES),
  /** An HTTP request's head: `METHOD URL` then `Name: value` lines. */
  request: text(["req_ptr", "req_len"], MAX_REQUEST_HEAD_BYTES),
  /** A log line: may be empty; a longer one is cut at MAX_LOG_BYTES (not refused). */
  message: text(["msg_ptr", "msg_len"], MAX_LOG_BYTES, 0),
  body: { params: ["body_ptr", "body_len"], form: "bytes", maxBytes: MAX_INPUT_BYTES },
  input: { params: ["in_ptr", "in_len"], form: "bytes", maxBytes: MAX_INPUT_BYTES },
  handle: num("handle"),
  ttl: num("ttl_ms"),
  wait: num("wait_ms"),
  permits: num("permits"),
  flags: num("flags"),
  level: num("level"),
  out: { params: ["buf_ptr", "buf_cap"], form: "out" },
  /** What a leader proclaims: may be empty. */
  value: text(["value_ptr", "value_len"], MAX_LEADER_VALUE_BYTES, 0),
} as const satisfies Record<string, ArgForm>;

/** The kinds of argument an operation can take. */
export type ArgKind = keyof typeof ARG_FORMS;

/** The runtimes a guest can run in: its own worker thread, or the host's thread through JSPI. */
export type Runtime = "worker" | "inline";

/**
 * The import modules of the ABI: `lock` (locks), `lockhost` (what the host granted, replies),
 * `http`, `config` and `log`. A host function's module is the namespace its embedder registered
 * it under (FUNCTION_MODULE stands for it in the table).
 */
export type ModuleName = "lock" | "lockhost" | "http" | "config" | "log" | typeof FUNCTION_MODULE;

/** The table's stand-in for an embedder's namespace and function name. */
export const FUNCTION_MODULE = "<namespace>";
export const FUNCTION_NAME = "<function>";

/** One operation: an import the host provides. */
export interface OpSpec {
  /** The import module. */
  readonly module: ModuleName;
  /** The import name in its module. */
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
   * Served inside the guest's runtime without asking the host (last_error, config, log...):
   * no channel round trip.
   */
  readonly local?: boolean;
  /**
   * Its reply is kept after the call, so `lockhost.last_reply` can read one that did not fit
   * the call's buffer without making the call again (the call has effects).
   */
  readonly keepsReply?: boolean;
  /** It takes a lock (a new lease and handle): named by a row of the kind table (kit/kinds.ts) or by leader election's operations. */
  readonly takesLock?: boolean;
  /** The result, as ABI.md's operation table says it. */
  readonly doc: string;
  /** The result in a few words, for the brief table of docs/abi.md. */
  readonly brief: string;
}

const TAKE_FLAGS = FLAG_GLOBAL | FLAG_KEEP | FLAG_KEEPALIVE;
/** A mutex's try and acquire also take FLAG_FAIR: the fair mutex (kit/kinds.ts) rides them. */
const MUTEX_FLAGS = TAKE_FLAGS | FLAG_FAIR;
/** Every operation runs in both runtimes (one guest suite holds them to the same behaviour). */
const RUNTIMES: readonly Runtime[] = ["worker", "inline"];

/** What a try of any kind can return besides its result. */
const TRY_CODES = ["INVALID_ARGUMENT", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE"] as const;
/** What a waiting acquire of any kind can return: a try's codes, the wait running out, the host shutting down. */
const WAIT_CODES = ["TIMEOUT", ...TRY_CODES, "CANCELLED"] as const;
/** What a call on a held handle that reaches the backend returns (renew, proclaim). */
const RENEW_CODES = ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE", "INVALID_ARGUMENT", "BACKEND_UNAVAILABLE"] as const;
/** What letting go of a handle returns (release, resign). */
const RELEASE_CODES = ["LOST", "ALREADY_RELEASED", "INVALID_HANDLE", "BACKEND_UNAVAILABLE"] as const;

/** Every operation of ABI version 1, in the order the docs list them. */
export const OPS = [
  {
    module: "lock",
    name: "try",
    takesLock: true,
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: MUTEX_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc: "handle `> 0` when acquired; `TRY_CONTENDED` (0) when someone else holds the key; `-code` on error",
    brief: "handle `> 0`, `0` contended, `-code`",
  },
  {
    module: "lock",
    name: "acquire",
    takesLock: true,
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: MUTEX_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc:
      'handle `> 0` when acquired, waiting up to `wait_ms` for the key (it returns as soon as the holder lets go, see "Waiting"); `-TIMEOUT` when ' +
      "the key stayed held (`last_error` says how long this guest waited); `-code` on error. Never returns 0: with `wait_ms = 0` a held key is " +
      "`-TIMEOUT` at once.",
    brief: "handle `> 0` once the key is free, `-TIMEOUT` after `wait_ms`, `-code`",
  },
  {
    module: "lock",
    name: "renew",
    args: ["handle", "ttl"],
    result: "i32",
    flags: 0,
    codes: RENEW_CODES,
    runtimes: RUNTIMES,
    doc:
      "`OK` (0), or `-code`. Sets the lease to `ttl_ms` from now on the server's clock; `ttl_ms = 0` reuses the TTL the lock was taken with. " +
      "`-LOST` if the lock expired or changed hands.",
    brief: "`0` or `-code`",
  },
  {
    module: "lock",
    name: "release",
    args: ["handle"],
    result: "i32",
    flags: 0,
    codes: RELEASE_CODES,
    runtimes: RUNTIMES,
    doc: "`OK`, or `-code` (`-ALREADY_RELEASED`, `-INVALID_HANDLE`, `-LOST` when the lease had already ended: then nothing is deleted).",
    brief: "`0` or `-code`",
  },
  {
    module: "lock",
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
    module: "lock",
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
    module: "lock",
    name: "status",
    args: ["key", "flags", "out"],
    result: "i32",
    flags: FLAG_GLOBAL | FLAG_RW | FLAG_SEMAPHORE | FLAG_FAIR,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc:
      "length of the status JSON of the key, or `-code`: a mutex's (`held`, `holder`, `fence`, times), or with `FLAG_RW` / `FLAG_SEMAPHORE` / " +
      "`FLAG_FAIR` a read/write lock's, semaphore's or fair mutex's (`kind`, `limit`, `holders` each with `mode`, `fence`, holder and times, `queued`).",
    brief: "length of the status JSON",
  },
  {
    module: "lock",
    name: "state",
    args: ["handle"],
    result: "i32",
    flags: 0,
    codes: ["INVALID_HANDLE"],
    runtimes: RUNTIMES,
    doc:
      '`STATE_HELD`, `STATE_LOST` or `STATE_RELEASED` (see "Handle states"), or `-INVALID_HANDLE`. Answered from the host\'s own bookkeeping: no ' +
      "backend round trip.",
    brief: "`1` held, `2` lost, `3` released, or `-code`; handle `0` is the schedule's lock during a scheduled call",
  },
  {
    module: "lock",
    name: "restore",
    args: ["key", "owner", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["NOT_FOUND", "OWNERSHIP_MISMATCH", "ALREADY_RELEASED", "INVALID_ARGUMENT", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE"],
    runtimes: RUNTIMES,
    doc:
      "a handle `> 0` for a lock taken elsewhere (another process, another guest) whose owner token (`owner`) this guest was handed, so it can " +
      "renew or release it; or `-code`: `-NOT_FOUND` (nobody holds the key), `-OWNERSHIP_MISMATCH` (someone else does; nothing is changed), " +
      "`-ALREADY_RELEASED` (this host released that owner's lock), `-INVALID_ARGUMENT`, `-INVALID_MEMORY`, `-PERMISSION_DENIED`. `ttl_ms = 0` renews " +
      "with the TTL the lock's current lease was set with (by its acquire or latest renew); otherwise 1 to `MAX_TTL_MS`. The owner token is 1 to 512 " +
      "bytes of UTF-8.",
    brief: "handle for a lock taken elsewhere, by owner token, or `-code`",
  },
  {
    module: "lock",
    name: "last_error",
    args: ["out"],
    result: "i32",
    flags: 0,
    codes: [],
    runtimes: RUNTIMES,
    local: true,
    doc:
      "length of the message about this guest instance's last lock call: its error when it failed, whose key it was when a `try` found it " +
      "contended, 0 after any other success (or before any call). `last_error` itself changes nothing, unless its buffer is bad: that is a failed " +
      "call and replaces it.",
    brief: "length of the last error message",
  },
  // Read/write locks and semaphores (appended in v1: a guest importing them needs a host that has them).
  {
    module: "lock",
    name: "try_read",
    takesLock: true,
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc:
      "handle `> 0` for a read lock on the key (readers share it); `TRY_CONTENDED` (0) while a writer holds it or waits for it; `-code` on error. " +
      "The handle works with every handle operation.",
    brief: "read-lock handle `> 0`, `0` contended, `-code`",
  },
  {
    module: "lock",
    name: "try_write",
    takesLock: true,
    args: ["key", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc:
      "handle `> 0` for the write lock on the key (exclusive: no reader, no other writer); `TRY_CONTENDED` (0) while anyone holds it or a writer " +
      "waits for it; `-code` on error.",
    brief: "write-lock handle `> 0`, `0` contended, `-code`",
  },
  {
    module: "lock",
    name: "acquire_read",
    takesLock: true,
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc: "as `try_read`, waiting up to `wait_ms` (woken by releases); `-TIMEOUT` when no read lock came in time.",
    brief: "read-lock handle once free, `-TIMEOUT`, `-code`",
  },
  {
    module: "lock",
    name: "acquire_write",
    takesLock: true,
    args: ["key", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc:
      "as `try_write`, waiting up to `wait_ms`. A waiting writer queues: readers arriving after it wait behind it, and writers are served in " +
      "arrival order. `-TIMEOUT` when the key stayed held.",
    brief: "write-lock handle once free, `-TIMEOUT`, `-code`",
  },
  {
    module: "lock",
    name: "try_permit",
    takesLock: true,
    args: ["key", "permits", "ttl", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["PERMITS_MISMATCH", ...TRY_CODES],
    runtimes: RUNTIMES,
    doc:
      "handle `> 0` for one of the `permits` (1 to 1,000,000) permits of the semaphore on the key; `TRY_CONTENDED` (0) when all are taken; " +
      "`-PERMITS_MISMATCH` when its holders took it with another number; `-code` on error.",
    brief: "permit handle `> 0`, `0` all taken, `-code`",
  },
  {
    module: "lock",
    name: "acquire_permit",
    takesLock: true,
    args: ["key", "permits", "ttl", "wait", "flags"],
    result: "i32",
    flags: TAKE_FLAGS,
    codes: ["PERMITS_MISMATCH", ...WAIT_CODES],
    runtimes: RUNTIMES,
    doc: "as `try_permit`, waiting up to `wait_ms` for a permit; `-TIMEOUT` when none came in time.",
    brief: "permit handle once one is free, `-TIMEOUT`, `-code`",
  },
  // What a guest can do under its lock (appended in v1): ask what it was granted, read a kept
  // reply, read its config, log, make HTTP requests, call the embedder's functions.
  {
    module: "lockhost",
    name: "capability",
    args: ["name"],
    result: "i32",
    flags: 0,
    codes: ["INVALID_ARGUMENT"],
    runtimes: RUNTIMES,
    local: true,
    doc:
      "`1` when this plugin may use the capability `name`: `http` when its `[plugins.http]` grants requests, a host function namespace its " +
      "`functions` grants and the embedder registered; `config` and `log` always. `0` when not (an `http.request` then returns `-PERMISSION_DENIED`).",
    brief: "`1` granted, `0` not",
  },
  {
    module: "lockhost",
    name: "last_reply",
    args: ["out"],
    result: "i32",
    flags: 0,
    codes: [],
    runtimes: RUNTIMES,
    local: true,
    doc:
      "length of the reply of this guest's last `http.request` or host function call, written into the buffer when it fits: a reply too long for " +
      "that call's own buffer is read here, without making the call (and its effects) again. 0 when the last such call failed.",
    brief: "length of the last call's reply",
  },
  {
    module: "config",
    name: "get",
    args: ["name", "out"],
    result: "i32",
    flags: 0,
    codes: ["NOT_FOUND", "INVALID_ARGUMENT"],
    runtimes: RUNTIMES,
    local: true,
    doc:
      "length of the UTF-8 value of key `name` in the plugin's `[plugins.config]` table, written into the buffer when it fits; `-NOT_FOUND` when " +
      "the table has no such key (a value to test, not a trap).",
    brief: "length of the config value, `-NOT_FOUND`",
  },
  {
    module: "log",
    name: "write",
    args: ["level", "message"],
    result: "i32",
    flags: 0,
    codes: ["INVALID_ARGUMENT"],
    runtimes: RUNTIMES,
    local: true,
    doc:
      "`OK`: logs the UTF-8 message at `level` (`LOG_DEBUG` 0, `LOG_INFO` 1, `LOG_WARN` 2, `LOG_ERROR` 3) through the host's logger, tagged with " +
      "the plugin. A level below the plugin's `log_level` costs nothing. Shares `trace`'s budget of 100 lines per call (the rest are counted in one " +
      "line); a message over `MAX_LOG_BYTES` is cut.",
    brief: "`0` or `-code`",
  },
  {
    module: "http",
    name: "request",
    args: ["request", "body", "handle", "flags", "out"],
    result: "i32",
    flags: FLAG_FENCE,
    codes: ["PERMISSION_DENIED", "INVALID_ARGUMENT", "TIMEOUT", "TOO_LARGE", "CALL_FAILED", "CANCELLED", "LOST", "INVALID_HANDLE", "ALREADY_RELEASED"],
    runtimes: RUNTIMES,
    keepsReply: true,
    doc:
      "length of the response, written into the buffer when it fits (else read it with `lockhost.last_reply`): the status code, a `\\n`, each " +
      "header as `name: value\\n` (names lowercase), a `\\n`, then the body. The request is `METHOD URL` then one `Name: value` line per header, " +
      "`\\n`-separated; `body` may be empty. With `FLAG_FENCE` the host adds `lockhost-lock` (or, for a name a header value would not keep as it is, " +
      "`lockhost-lock-encoded`, percent-encoded), `lockhost-fence` and `lockhost-kind` headers naming the lock `handle` (0: the schedule's lock in a " +
      "scheduled call), its fence and kind (`-LOST` once it is no longer held). Only hosts, methods and sizes the plugin's `[plugins.http]` allows; " +
      "bounded by its `timeout_ms` and the call's time limit.",
    brief: "length of the response (status, headers, body), or `-code`",
  },
  {
    module: FUNCTION_MODULE,
    name: FUNCTION_NAME,
    args: ["input", "out"],
    result: "i32",
    flags: 0,
    codes: ["CALL_FAILED", "TOO_LARGE", "CANCELLED", "INVALID_ARGUMENT", "PERMISSION_DENIED"],
    runtimes: RUNTIMES,
    keepsReply: true,
    doc:
      "a function the embedder registered under a namespace the plugin's `functions` grants: bytes in, bytes out. Length of its reply, written " +
      "into the buffer when it fits (else read it with `lockhost.last_reply`), or `-code`: what the function threw (a LockhostError's own code, else " +
      "`CALL_FAILED`), `CANCELLED` at shutdown, `TOO_LARGE` for a reply over `MAX_REPLY_BYTES`. A function still running at the call's time limit " +
      "(worker runtime) ends the call as a spinning guest does (the host restarts the guest).",
    brief: "length of the function's reply, or `-code`",
  },
  // Leader election (appended in v1: a guest importing them needs a host that has them). The
  // leader holds the key in the lock kind `leader` with keepalive; its handle works with every handle
  // operation (fence is the term), and its loss calls lockhost_on_lost like any lock's.
  {
    module: "lock",
    name: "try_campaign",
    takesLock: true,
    args: ["key", "value", "ttl", "flags"],
    result: "i32",
    flags: FLAG_GLOBAL | FLAG_KEEP,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc:
      "a leadership handle `> 0` when this guest now leads the election named by the key, proclaiming `value` (0 to `MAX_LEADER_VALUE_BYTES` " +
      "bytes); `TRY_CONTENDED` (0) while another leads; `-code` on error. The lease is kept alive until `resign`, `release` or auto-release; `fence` " +
      "of the handle is the term (strictly increasing per election).",
    brief: "leadership handle `> 0`, `0` another leads, `-code`",
  },
  {
    module: "lock",
    name: "campaign",
    takesLock: true,
    args: ["key", "value", "ttl", "wait", "flags"],
    result: "i32",
    flags: FLAG_GLOBAL | FLAG_KEEP,
    codes: WAIT_CODES,
    runtimes: RUNTIMES,
    doc:
      "as `try_campaign`, waiting up to `wait_ms` for the leader to resign or lose its lease (woken by the release, not polling); `-TIMEOUT` when " +
      "another led all along.",
    brief: "leadership handle once this guest leads, `-TIMEOUT`, `-code`",
  },
  {
    module: "lock",
    name: "proclaim",
    args: ["handle", "value"],
    result: "i32",
    flags: 0,
    codes: RENEW_CODES,
    runtimes: RUNTIMES,
    doc:
      "`OK`: the leader's value is now `value` (what `leader` and observers read); `-LOST` when this guest no longer leads; `-INVALID_HANDLE` for " +
      "a handle that is not a leadership.",
    brief: "`0` or `-code`",
  },
  {
    module: "lock",
    name: "resign",
    args: ["handle"],
    result: "i32",
    flags: 0,
    codes: RELEASE_CODES,
    runtimes: RUNTIMES,
    doc:
      "`OK`: the leadership is released, so a waiting campaigner takes over at once; `-code` as `release` (`-INVALID_HANDLE` for a handle that is " +
      "not a leadership).",
    brief: "`0` or `-code`",
  },
  {
    module: "lock",
    name: "leader",
    args: ["key", "flags", "out"],
    result: "i32",
    flags: FLAG_GLOBAL,
    codes: TRY_CODES,
    runtimes: RUNTIMES,
    doc:
      'length of the JSON of who leads the election now: `{"key", "held": false}`, or with `held` true the leader\'s `node`, `plugin`, `value`, ' +
      "`term` and `since_ms`.",
    brief: "length of the leader JSON",
  },
] as const satisfies readonly OpSpec[];

/** An operation's import name. */
export type OpName = (typeof OPS)[number]["name"];

/** The operations that cross to the host's lock service (all but the local ones). */
export type RemoteOpName = Exclude<OpName, Extract<(typeof OPS)[number], { local: true }>["name"]>;

/** The wasm parameter names an argument kind stands for, in order. */
export const PARAMS_OF: Readonly<Record<ArgKind, readonly string[]>> = Object.fromEntries(
  Object.entries(ARG_FORMS).map(([kind, form]) => [kind, form.params]),
) as Record<ArgKind, readonly string[]>;

/** Whether an argument kind is a (ptr, len) the runtime reads from guest memory: text or bytes. */
export const isString = (kind: ArgKind): boolean => ARG_FORMS[kind].form === "text" || ARG_FORMS[kind].form === "bytes";

/** The import names of a module's operations (a host function's are its embedder's). */
export const opsOf = (module: ModuleName): readonly OpSpec[] => (OPS as readonly OpSpec[]).filter((op) => op.module === module);

/** The table's row for every embedder function. */
export const FUNCTION_OP: OpSpec = (OPS as readonly OpSpec[]).find((op) => op.module === FUNCTION_MODULE)!;

/** An operation's signature as the docs write it: `(key_ptr, key_len, ttl_ms, flags) -> i32`. */
export function signatureOf(op: OpSpec): string {
  return `(${op.args.flatMap((a) => PARAMS_OF[a]).join(", ")}) -> ${op.result}`;
}
