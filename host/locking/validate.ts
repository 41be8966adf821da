// Input checks shared by the host API and the guest ABI, so both reject the same inputs with
// the same codes and messages.
import { MAX_KEY_BYTES, MAX_TTL_MS } from "../../abi/status.js";
import { LockhostError } from "../errors.js";

const utf8 = new TextEncoder();

/** Throws INVALID_ARGUMENT unless `key` is a non-empty, well-formed string of at most MAX_KEY_BYTES UTF-8 bytes. */
export function validateKey(key: unknown, argName = "key"): string {
  if (typeof key !== "string") {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be a string, got ${typeof key}`);
  }
  if (key.length === 0) throw new LockhostError("INVALID_ARGUMENT", `${argName} must not be empty`);
  if (!key.isWellFormed()) {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} contains a lone surrogate (not valid Unicode)`);
  }
  // Every UTF-16 unit encodes to at most 3 bytes: short keys need no encoding to pass.
  if (key.length * 3 > MAX_KEY_BYTES) {
    const tooLong = keyLengthError(utf8.encode(key).byteLength, argName);
    if (tooLong) throw tooLong;
  }
  return key;
}

/** The error for a key of `bytes` UTF-8 bytes when that is over MAX_KEY_BYTES, else undefined. */
export function keyLengthError(bytes: number, argName = "key"): LockhostError | undefined {
  if (bytes <= MAX_KEY_BYTES) return undefined;
  return new LockhostError("INVALID_ARGUMENT", `${argName} is ${bytes} bytes of UTF-8; the maximum is ${MAX_KEY_BYTES}`);
}

/** Throws INVALID_ARGUMENT unless `ttlMs` is an integer in 1..MAX_TTL_MS. */
export function validateTtl(ttlMs: unknown, argName = "ttlMs"): number {
  if (typeof ttlMs !== "number" || !Number.isInteger(ttlMs)) {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be an integer number of milliseconds, got ${String(ttlMs)}`);
  }
  if (ttlMs <= 0) throw new LockhostError("INVALID_ARGUMENT", `${argName} must be > 0, got ${ttlMs}`);
  if (ttlMs > MAX_TTL_MS) {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be at most ${MAX_TTL_MS} (24 h), got ${ttlMs}`);
  }
  return ttlMs;
}
