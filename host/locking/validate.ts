// Input checks shared by the host API and the guest ABI, so both reject the same inputs with
// the same codes and messages.
import { MAX_KEY_BYTES, MAX_TTL_MS, MAX_WAIT_MS } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import { MAX_SCOPE_PREFIX_BYTES } from "./scope.js";

const utf8 = new TextEncoder();

/**
 * Longest fully qualified lock name ("<scope>:<key>"), in UTF-8 bytes: MAX_KEY_BYTES plus the
 * longest scope prefix (a 64-character plugin name and ':'). status() and forceRelease() take
 * such names, so every lock tryLock can take can also be inspected and force-released.
 */
export const MAX_NAME_BYTES = MAX_KEY_BYTES + MAX_SCOPE_PREFIX_BYTES;

/** Throws INVALID_ARGUMENT unless `key` is a non-empty, well-formed string of at most MAX_KEY_BYTES UTF-8 bytes. */
export function validateKey(key: unknown, argName = "key"): string {
  return validateString(key, argName, MAX_KEY_BYTES);
}

/**
 * Throws INVALID_ARGUMENT unless `name` is a non-empty, well-formed fully qualified lock name
 * (scope prefix included) of at most MAX_NAME_BYTES UTF-8 bytes.
 */
export function validateName(name: unknown, argName = "name"): string {
  return validateString(name, argName, MAX_NAME_BYTES);
}

/** The error for a key of `bytes` UTF-8 bytes when that is over MAX_KEY_BYTES, else undefined. */
export function keyLengthError(bytes: number, argName = "key"): LockhostError | undefined {
  return lengthError(bytes, argName, MAX_KEY_BYTES);
}

function validateString(value: unknown, argName: string, maxBytes: number): string {
  if (typeof value !== "string") {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be a string, got ${typeof value}`);
  }
  if (value.length === 0) throw new LockhostError("INVALID_ARGUMENT", `${argName} must not be empty`);
  if (!value.isWellFormed()) {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} contains a lone surrogate (not valid Unicode)`);
  }
  // Every UTF-16 unit encodes to at most 3 bytes: short strings need no encoding to pass.
  if (value.length * 3 > maxBytes) {
    const tooLong = lengthError(utf8.encode(value).byteLength, argName, maxBytes);
    if (tooLong) throw tooLong;
  }
  return value;
}

function lengthError(bytes: number, argName: string, maxBytes: number): LockhostError | undefined {
  if (bytes <= maxBytes) return undefined;
  return new LockhostError("INVALID_ARGUMENT", `${argName} is ${bytes} bytes of UTF-8; the maximum is ${maxBytes}`);
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

/**
 * Throws INVALID_ARGUMENT unless `waitMs` is an integer in 0..MAX_WAIT_MS, or Infinity: a wait
 * with no limit must be asked for by name, so a unit slip (seconds for ms) still fails loudly.
 */
export function validateWaitMs(waitMs: unknown, argName = "waitMs"): number {
  if (waitMs === Infinity) return waitMs;
  if (typeof waitMs !== "number" || !Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_MS) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `${argName} must be an integer number of milliseconds from 0 to ${MAX_WAIT_MS} (24 h), or Infinity to wait with no limit, got ${String(waitMs)}`,
    );
  }
  return waitMs;
}
