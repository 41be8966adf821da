// What a fence and a lock name must look like, shared by the header parser and checkFence so
// a value sent over HTTP and one passed in code are held to the same rules and messages.

/**
 * Most decimal digits a fence may have: enough for every unsigned 64-bit number (lockhost's
 * fences are i64, so at most 19), and few enough that a parser never builds a huge BigInt.
 */
export const MAX_FENCE_DIGITS = 20;

/** The largest fence accepted: twenty nines (the pg store's column is numeric(20,0) for it). */
export const MAX_FENCE = 10n ** BigInt(MAX_FENCE_DIGITS) - 1n;

/**
 * Longest lock name, in UTF-8 bytes. lockhost's own longest fully qualified name is 577 bytes
 * (a 512-byte key behind a scope prefix); the margin keeps this layer from tracking that.
 */
export const MAX_LOCK_BYTES = 600;

// C0 controls, DEL and C1 controls: never part of a name a person or a log can read back.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/** Why `lock` is not an acceptable lock name, or undefined when it is. */
export function lockProblem(lock: string): string | undefined {
  if (lock.length === 0) return "the lock name is empty";
  if (!lock.isWellFormed()) return "the lock name is not well-formed Unicode";
  const bytes = Buffer.byteLength(lock, "utf8");
  if (bytes > MAX_LOCK_BYTES) return `the lock name is ${bytes} bytes long, over the limit of ${MAX_LOCK_BYTES}`;
  if (CONTROL.test(lock)) return "the lock name contains a control character";
  return undefined;
}

/** Why `fence` is not an acceptable fence, or undefined when it is. */
export function fenceProblem(fence: bigint): string | undefined {
  if (fence <= 0n) return `the fence must be positive, got ${fence}`;
  if (fence > MAX_FENCE) return `the fence has more than ${MAX_FENCE_DIGITS} digits`;
  return undefined;
}
