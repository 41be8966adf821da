// ABI v1 constants: the one source for the host (compiled by tsc) and the guest SDK
// (compiled by asc). Plain integer literals only, so both compilers accept the file:
// asc infers i32 for each, tsc infers number. Never renumber a code; only append.

/** The ABI version this file describes; guests export `lockhost_abi_version()` returning it. */
export const ABI_VERSION = 1;

/** Success (renew, release). */
export const OK = 0;
/** `try` result when another holder has the key: not an error. */
export const TRY_CONTENDED = 0;

// Status codes. Calls return them negated (-code) on failure.
/** Someone else holds the key (used by host APIs; `try` itself returns TRY_CONTENDED). */
export const CONTENDED = 1;
/** A wait or a call ran out of time. */
export const TIMEOUT = 2;
/** No lock exists under that key or owner. */
export const NOT_FOUND = 3;
/** The lock exists but belongs to another owner token. */
export const OWNERSHIP_MISMATCH = 4;
/** The handle was already released by this guest. */
export const ALREADY_RELEASED = 5;
/** The lease ended (expired or taken over) while the handle was held. */
export const LOST = 6;
/** A key, TTL or flag is outside what the ABI allows. */
export const INVALID_ARGUMENT = 7;
/** The handle was never issued to this guest, or belongs to a recycled slot. */
export const INVALID_HANDLE = 8;
/** A (pointer, length) pair lies outside guest memory. */
export const INVALID_MEMORY = 9;
/** The plugin's config does not grant this global key. */
export const PERMISSION_DENIED = 10;
/** The configured backend cannot be reached or answered with an error. */
export const BACKEND_UNAVAILABLE = 11;
/** A host bug; the message says what happened. */
export const INTERNAL = 12;
/** The call was cancelled because the host is shutting down (a wait ends at once with it). */
export const CANCELLED = 13;
/** A semaphore's live holders took it with another number of permits than this call names. */
export const PERMITS_MISMATCH = 14;
/** A host function threw, or an HTTP request could not be completed (refused, reset, DNS); last_error says what. */
export const CALL_FAILED = 15;
/** A reply (an HTTP response, a host function's result) was over its size limit; nothing of it is kept. */
export const TOO_LARGE = 16;

// Flags for `try` (bitwise OR) and `status`.
/** The key is global (shared across plugins) instead of namespaced by plugin. */
export const FLAG_GLOBAL = 1;
/** Keep the lock after the current export call returns (it is still released on trap/crash). */
export const FLAG_KEEP = 2;
/** Renew the lock automatically while it is held (the host's renewal manager), until released. */
export const FLAG_KEEPALIVE = 4;
/** `status` only: the key's read/write lock (not its mutex). */
export const FLAG_RW = 8;
/** `status` only: the key's semaphore (not its mutex). */
export const FLAG_SEMAPHORE = 16;
/** `http.request` only: send the fence of the lock `handle` names, so the resource can refuse a stale holder. */
export const FLAG_FENCE = 32;
/**
 * `try` / `acquire`: a fair mutex, whose waiters are served first come, first served across
 * hosts (a try is refused while anyone waits); `status`: the key's fair mutex.
 */
export const FLAG_FAIR = 64;

// Levels of `log.write`, least to most severe.
export const LOG_DEBUG = 0;
export const LOG_INFO = 1;
export const LOG_WARN = 2;
export const LOG_ERROR = 3;

// Handle states, as `state` returns them.
/** The lock is held (as far as the host knows: renewals, if any, are being confirmed). */
export const STATE_HELD = 1;
/** The lease ended while held: a renewal was refused or not confirmed in time, or it ran out. */
export const STATE_LOST = 2;
/** The handle was released by the guest (or by the host's auto-release). */
export const STATE_RELEASED = 3;

// Limits.
/** Longest key, in UTF-8 bytes, before namespacing. */
export const MAX_KEY_BYTES = 512;
/** Longest TTL in milliseconds (24 hours). */
export const MAX_TTL_MS = 86400000;
/** Longest wait of `acquire`, in milliseconds (24 hours). */
export const MAX_WAIT_MS = 86400000;
/** Longest input of a host function, or body of an HTTP request, in bytes (16 MiB). */
export const MAX_INPUT_BYTES = 16777216;
/** Longest reply of a host function, in bytes (16 MiB); an HTTP response has its plugin's own cap. */
export const MAX_REPLY_BYTES = 16777216;
/** Longest head of an HTTP request (method, URL and header lines), in bytes. */
export const MAX_REQUEST_HEAD_BYTES = 16384;
/** Longest `log.write` message, in bytes: a longer one is cut there. */
export const MAX_LOG_BYTES = 8192;
/** Longest value a leader proclaims (`lock.campaign`, `lock.proclaim`), in UTF-8 bytes. */
export const MAX_LEADER_VALUE_BYTES = 4096;
