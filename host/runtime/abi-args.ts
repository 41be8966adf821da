// Decoding and checking of lock-call arguments that arrive as raw numbers and bytes, and the
// ABI's encoding of a lease's state: shared by every runtime's view of the lock ABI.
import { STATE_HELD, STATE_LOST, STATE_RELEASED } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import type { Lease } from "../locking/lease.js";

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

/**
 * A text argument whose length was checked where it was read off guest memory (OpImport.read,
 * against its form's limit): at least `minBytes` (default 1) bytes of valid UTF-8, named
 * `argName` in errors. The boundary's one decoding of a key (lock-ops.ts).
 */
export function decodeText(bytes: Uint8Array, argName: string, minBytes = 1): string {
  if (bytes.byteLength < minBytes) throw new LockhostError("INVALID_ARGUMENT", `${argName} must not be empty`);
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} is not valid UTF-8`);
  }
}
