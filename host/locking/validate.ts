// Input checks shared by the host API and the guest ABI, so both reject the same inputs with
// the same codes and messages.
import type { LimitRule } from "../../kit/kinds.js";
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
  const value = validateString(name, argName, MAX_NAME_BYTES);
  // A full name starts with its scope; a control character there would reach into the namespace
  // a store keeps for another kind (KindRow.namespace).
  if (value.charCodeAt(0) < 0x20)
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must start with its scope ("global:" or a plugin name), got a control character`);
  return value;
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

/** The longest owner a caller may choose, in characters (a generated one is a 36-character UUID). */
export const MAX_OWNER_LENGTH = 128;

/**
 * What a caller-chosen owner must look like: printable ASCII without spaces, so it shows and
 * logs as written, and survives every backend's encoding unchanged.
 */
export const OWNER_PATTERN = new RegExp(`^[\\x21-\\x7e]{1,${MAX_OWNER_LENGTH}}$`);

/** Throws INVALID_ARGUMENT unless `owner` is a caller-chosen owner matching OWNER_PATTERN. */
export function validateOwner(owner: unknown, argName = "owner"): string {
  if (typeof owner !== "string" || !OWNER_PATTERN.test(owner)) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `${argName} must be 1 to ${MAX_OWNER_LENGTH} printable ASCII characters without spaces, ` +
        `got ${typeof owner === "string" ? JSON.stringify(owner) : typeof owner}`,
    );
  }
  return owner;
}

/** Throws INVALID_ARGUMENT unless `options` is an object (the options argument of `method`). */
export function validateOptions<T extends object>(options: T | undefined, argName: string, required: true): T;
export function validateOptions<T extends object>(options: T | undefined, argName: string, required?: false): T | undefined;
export function validateOptions<T extends object>(options: T | undefined, argName: string, required = false): T | undefined {
  if (options === undefined && !required) return undefined;
  if (typeof options !== "object" || options === null) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `${argName} must be an object${required ? "" : " when given"}, got ${options === null ? "null" : typeof options}`,
    );
  }
  return options;
}

/** Throws INVALID_ARGUMENT unless `value` is a boolean or undefined (an optional flag). */
export function validateFlag(value: unknown, argName: string): boolean | undefined {
  if (value !== undefined && typeof value !== "boolean") {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be true or false when given, got ${String(value)}`);
  }
  return value;
}

/** Throws INVALID_ARGUMENT unless `signal` is an AbortSignal or undefined. */
export function validateSignal(signal: unknown, argName: string): AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new LockhostError("INVALID_ARGUMENT", `${argName} must be an AbortSignal when given, got ${typeof signal}`);
  }
  return signal;
}

/** Throws INVALID_ARGUMENT unless `fn` is a function. */
export function validateFunction(fn: unknown, argName: string): void {
  if (typeof fn !== "function") throw new LockhostError("INVALID_ARGUMENT", `${argName} must be a function, got ${typeof fn}`);
}

/**
 * A limit under its kind's rule (a semaphore's permits: an integer from 1 to MAX_PERMITS), else
 * INVALID_ARGUMENT naming the rule's field.
 */
export function validateLimit(limit: unknown, rule: LimitRule): number {
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < rule.min || limit > rule.max) {
    throw new LockhostError("INVALID_ARGUMENT", `${rule.field} must be an integer from ${rule.min} to ${rule.max}, got ${String(limit)}`);
  }
  return limit;
}
