// Decoding and checking of lock-call arguments that arrive as raw numbers and bytes, and the
// ABI's encoding of a lease's state: shared by every runtime's view of the lock ABI.
import { STATE_HELD, STATE_LOST, STATE_RELEASED } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import type { Lease } from "../locking/lease.js";
import { keyLengthError } from "../locking/validate.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Throws INVALID_ARGUMENT when `flags` has a bit outside `allowed`. */
export function checkFlags(flags: number, allowed: number, call: string): void {
  if ((flags & ~allowed) !== 0) {
    throw new LockhostError("INVALID_ARGUMENT", `flags 0x${(flags >>> 0).toString(16)} of ${call} has unknown bits (allowed: 0x${allowed.toString(16)})`);
  }
}

/** What lock.state answers for a lease; a lease past the host's own deadline is lost. */
export function stateOf(lease: Lease): number {
  if (lease.state === "released") return STATE_RELEASED;
  return lease.state === "lost" || performance.now() >= lease.deadline ? STATE_LOST : STATE_HELD;
}

/** A key from guest memory: 1 to MAX_KEY_BYTES bytes of valid UTF-8. */
export function decodeKey(bytes: Uint8Array): string {
  return decodeUtf8(bytes, "key");
}

/**
 * A text argument from guest memory: `minBytes` (default 1) to `maxBytes` (default
 * MAX_KEY_BYTES) bytes of valid UTF-8, named `argName` in errors.
 */
export function decodeUtf8(bytes: Uint8Array, argName: string, maxBytes?: number, minBytes = 1): string {
  if (bytes.byteLength < minBytes) throw new LockhostError("INVALID_ARGUMENT", `${argName} must not be empty`);
  const tooLong = maxBytes === undefined ? keyLengthError(bytes.byteLength, argName) : bytes.byteLength > maxBytes ? new LockhostError("INVALID_ARGUMENT", `${argName} is ${bytes.byteLength} bytes of UTF-8; the maximum is ${maxBytes}`) : undefined;
  if (tooLong) throw tooLong;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} is not valid UTF-8`);
  }
}
