// Every error lockhost raises, in one place. A code is stable: callers and guests branch on
// it, so never rename one. Codes that cross the ABI map to their number in abi/status.ts.
import * as S from "../abi/status.js";

/**
 * Codes that a guest can see: their ABI status number, and whether the same call may succeed
 * if made again (the `retryable` of every LockhostError with the code).
 */
const ABI_CODES = {
  /** Someone else holds the key: it may be free on a later try. */
  CONTENDED: { status: S.CONTENDED, retryable: true },
  /** A wait ran out with the key still held: a later wait may get it. */
  TIMEOUT: { status: S.TIMEOUT, retryable: true },
  NOT_FOUND: { status: S.NOT_FOUND, retryable: false },
  OWNERSHIP_MISMATCH: { status: S.OWNERSHIP_MISMATCH, retryable: false },
  ALREADY_RELEASED: { status: S.ALREADY_RELEASED, retryable: false },
  /** The lease ended: no retry of a call on it brings it back (acquire anew instead). */
  LOST: { status: S.LOST, retryable: false },
  INVALID_ARGUMENT: { status: S.INVALID_ARGUMENT, retryable: false },
  INVALID_HANDLE: { status: S.INVALID_HANDLE, retryable: false },
  INVALID_MEMORY: { status: S.INVALID_MEMORY, retryable: false },
  PERMISSION_DENIED: { status: S.PERMISSION_DENIED, retryable: false },
  /** The store did not answer: it may on a later try (not when `details.permanent` is 1). */
  BACKEND_UNAVAILABLE: { status: S.BACKEND_UNAVAILABLE, retryable: true },
  INTERNAL: { status: S.INTERNAL, retryable: false },
  /** The caller cancelled: repeating its own cancellation is its choice, not a retry. */
  CANCELLED: { status: S.CANCELLED, retryable: false },
  /**
   * A semaphore is held with another number of permits than the call names: a disagreement
   * between callers (the key keeps its holders' N until the last one lets go), not a busy key.
   */
  PERMITS_MISMATCH: { status: S.PERMITS_MISMATCH, retryable: false },
  /**
   * A host function threw, or an HTTP request failed on the way (connection refused or reset,
   * a name that does not resolve): the remote may answer a later call.
   */
  CALL_FAILED: { status: S.CALL_FAILED, retryable: true },
  /** A reply was over its size limit: the same call gets the same reply. */
  TOO_LARGE: { status: S.TOO_LARGE, retryable: false },
} as const;

/** Codes that only the host side sees (config, guest lifecycle, CLI), with `retryable` as above. */
const HOST_CODES = {
  /** The config file or an options object is invalid; the message names the field. */
  CONFIG_INVALID: { retryable: false },
  /** A guest module does not meet the ABI (version marker, memory import, unknown import). */
  ABI_UNSUPPORTED: { retryable: false },
  /** The export named does not exist in the guest. */
  UNKNOWN_EXPORT: { retryable: false },
  /** The guest trapped (unreachable, abort, out-of-bounds access, stack overflow). */
  GUEST_TRAP: { retryable: false },
  /** The guest ran past its per-call time limit and was stopped: a call under less load may not. */
  GUEST_TIMEOUT: { retryable: true },
  /** The guest's worker died outside of a trap or time limit: the next call gets a new worker. */
  GUEST_CRASHED: { retryable: true },
  /** The host, guest or service was closed. */
  CLOSED: { retryable: false },
  /** The guest runtime asked for does not exist on this Node (inline without JSPI). */
  RUNTIME_UNAVAILABLE: { retryable: false },
  /**
   * A reload's config changes what a running host cannot change (backend, node name, admin
   * listener); the message names each key, and the running config is kept: restart to apply it.
   */
  NOT_RELOADABLE: { retryable: false },
} as const;

/** Every stable error code. */
export type ErrorCode = keyof typeof ABI_CODES | keyof typeof HOST_CODES;

/** Error codes that a guest can receive, with their ABI number. */
export type AbiErrorCode = keyof typeof ABI_CODES;

/** The one error class of lockhost: branch on `code`, show `message`. */
export class LockhostError extends Error {
  /** Always "LockhostError". */
  override readonly name = "LockhostError";
  /** Facts a caller may branch on beside the code, e.g. `waitedMs` of a TIMEOUT. */
  readonly details: Readonly<Record<string, number | string>> | undefined;
  /**
   * Whether making the same call again may succeed: from the code (see isRetryable), so
   * CONTENDED, TIMEOUT and BACKEND_UNAVAILABLE are and INVALID_ARGUMENT or LOST are not; a
   * BACKEND_UNAVAILABLE with `details.permanent` = 1 (a wrong password...) is not either.
   */
  readonly retryable: boolean;
  constructor(
    /** The stable code to branch on ("LOST", "CLOSED", ...); never renamed between versions. */
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Readonly<Record<string, number | string>> },
  ) {
    super(message, options);
    this.details = options?.details;
    this.retryable = isRetryable(code) && this.details?.permanent !== 1;
  }

  /** The ABI status number for this error (INTERNAL for host-only codes). */
  get status(): number {
    return abiStatusOf(this.code);
  }
}

/** The ABI status number of a code; host-only codes map to INTERNAL. */
export function abiStatusOf(code: ErrorCode): number {
  return code in ABI_CODES ? ABI_CODES[code as AbiErrorCode].status : S.INTERNAL;
}

/** Whether an error with this code may go away if the same call is made again (see LockhostError.retryable). */
export function isRetryable(code: ErrorCode): boolean {
  return (code in ABI_CODES ? ABI_CODES[code as AbiErrorCode] : HOST_CODES[code as keyof typeof HOST_CODES]).retryable;
}

const NAME_BY_STATUS = new Map<number, AbiErrorCode>((Object.entries(ABI_CODES) as [AbiErrorCode, { status: number }][]).map(([k, v]) => [v.status, k]));

/** The code name of an ABI status number ("INVALID_ARGUMENT" for 7), or undefined. */
export function codeOfStatus(status: number): AbiErrorCode | undefined {
  return NAME_BY_STATUS.get(Math.abs(status));
}

/** Wraps anything thrown into a LockhostError, keeping LockhostErrors as they are. */
export function toLockhostError(err: unknown, fallback: ErrorCode = "INTERNAL"): LockhostError {
  if (err instanceof LockhostError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new LockhostError(fallback, message, { cause: err });
}

/** True when `err` is a LockhostError with that code. */
export function isCode(err: unknown, code: ErrorCode): boolean {
  return err instanceof LockhostError && err.code === code;
}

/**
 * `err` as a BACKEND_UNAVAILABLE that says retrying cannot help (`details.permanent` = 1) when
 * its message matches `permanent`: what a backend's ping() rejects with when the server itself
 * refuses for good (a wrong password, a missing database). A fault on the way to the server (a
 * host name that does not resolve yet, a refused connection) is never permanent: it may clear.
 */
export function markPermanent(err: unknown, permanent: RegExp): LockhostError {
  const e = toLockhostError(err, "BACKEND_UNAVAILABLE");
  if (!permanent.test(e.message) || e.details?.permanent === 1) return e;
  return new LockhostError(e.code, e.message, { details: { ...e.details, permanent: 1 } });
}

/** Whether `err` says retrying cannot help (see markPermanent). */
export function isPermanent(err: unknown): boolean {
  return err instanceof LockhostError && err.details?.permanent === 1;
}
