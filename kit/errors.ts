// Every error lockhost raises, in one place. A code is stable: callers and guests branch on
// it, so never rename one. Codes that cross the ABI map to their number in abi/status.ts.
import * as S from "../abi/status.js";

/** Codes that a guest can see, with their ABI status number. */
const ABI_CODES = {
  CONTENDED: S.CONTENDED,
  TIMEOUT: S.TIMEOUT,
  NOT_FOUND: S.NOT_FOUND,
  OWNERSHIP_MISMATCH: S.OWNERSHIP_MISMATCH,
  ALREADY_RELEASED: S.ALREADY_RELEASED,
  LOST: S.LOST,
  INVALID_ARGUMENT: S.INVALID_ARGUMENT,
  INVALID_HANDLE: S.INVALID_HANDLE,
  INVALID_MEMORY: S.INVALID_MEMORY,
  PERMISSION_DENIED: S.PERMISSION_DENIED,
  BACKEND_UNAVAILABLE: S.BACKEND_UNAVAILABLE,
  INTERNAL: S.INTERNAL,
  CANCELLED: S.CANCELLED,
} as const;

/** Codes that only the host side sees (config, guest lifecycle, CLI). */
const HOST_CODES = {
  /** The config file or an options object is invalid; the message names the field. */
  CONFIG_INVALID: "CONFIG_INVALID",
  /** A guest module does not meet the ABI (version marker, memory import, unknown import). */
  ABI_UNSUPPORTED: "ABI_UNSUPPORTED",
  /** The export named does not exist in the guest. */
  UNKNOWN_EXPORT: "UNKNOWN_EXPORT",
  /** The guest trapped (unreachable, abort, out-of-bounds access, stack overflow). */
  GUEST_TRAP: "GUEST_TRAP",
  /** The guest ran past its per-call time limit and was stopped. */
  GUEST_TIMEOUT: "GUEST_TIMEOUT",
  /** The guest's worker died outside of a trap or time limit. */
  GUEST_CRASHED: "GUEST_CRASHED",
  /** The host, guest or service was closed. */
  CLOSED: "CLOSED",
  /** The guest runtime asked for does not exist on this Node (inline without JSPI). */
  RUNTIME_UNAVAILABLE: "RUNTIME_UNAVAILABLE",
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
  constructor(
    /** The stable code to branch on ("LOST", "CLOSED", ...); never renamed between versions. */
    readonly code: ErrorCode,
    message: string,
    options?: { cause?: unknown; details?: Readonly<Record<string, number | string>> },
  ) {
    super(message, options);
    this.details = options?.details;
  }

  /** The ABI status number for this error (INTERNAL for host-only codes). */
  get status(): number {
    return abiStatusOf(this.code);
  }
}

/** The ABI status number of a code; host-only codes map to INTERNAL. */
export function abiStatusOf(code: ErrorCode): number {
  return code in ABI_CODES ? ABI_CODES[code as AbiErrorCode] : S.INTERNAL;
}

const NAME_BY_STATUS = new Map<number, AbiErrorCode>(
  (Object.entries(ABI_CODES) as [AbiErrorCode, number][]).map(([k, v]) => [v, k]),
);

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
 * its message matches `permanent`: what a backend's ping() rejects with for a wrong password, a
 * missing database or a host name that does not resolve.
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
