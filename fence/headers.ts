// The two request headers a fenced write carries, and the parser that reads them. A guest's
// http capability sends them; anything else may as well (curl, another service).
import type { IncomingMessage } from "node:http";
import { MAX_FENCE_DIGITS, fenceProblem, lockProblem } from "./rules.js";

/** Header carrying the full lock name the fence belongs to, e.g. `global:ledger`. */
export const LOCK_HEADER = "lockhost-lock";

/** Header carrying the holder's fence: decimal digits, a positive integer that may exceed 2^53. */
export const FENCE_HEADER = "lockhost-fence";

/**
 * Header carrying the lock's kind (`mutex`, `rw`, `semaphore`...): each kind of one name
 * counts its fences on its own, so fences are compared only within a kind. Optional: `mutex`
 * when absent.
 */
export const KIND_HEADER = "lockhost-kind";

/** A lock name, kind and fence read from a request, all checked. */
export interface Fence {
  /** The full lock name the fence was issued for. */
  readonly lock: string;
  /** The lock's kind ({@link KIND_HEADER}), "mutex" when not sent. */
  readonly lockKind: string;
  /** The fencing token, exact at any size (never a float). */
  readonly fence: bigint;
}

const KIND = /^[a-z][a-z0-9_-]{0,31}$/;

/**
 * What a request's fence headers say: a fence, none at all (`missing`: whether that is fine is
 * the caller's policy), or a reason they cannot be used (`malformed`).
 */
export type ParsedFence =
  | ({ readonly kind: "fenced" } & Fence)
  | { readonly kind: "missing" }
  | { readonly kind: "malformed"; readonly reason: string };

// Decoding the bytes as UTF-8 (Node hands header values over as latin1) lets a lock name
// with non-ASCII characters arrive as it was sent; fatal, so a mangled name is refused.
const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Reads {@link LOCK_HEADER} and {@link FENCE_HEADER} from a request. Both or neither must be
 * there; each at most once (`headersDistinct`, since Node would join repeats with ", ").
 * The fence is decimal digits only, at most {@link MAX_FENCE_DIGITS} of them, above zero.
 */
export function parseFenceHeaders(req: Pick<IncomingMessage, "headersDistinct">): ParsedFence {
  const locks = req.headersDistinct[LOCK_HEADER];
  const fences = req.headersDistinct[FENCE_HEADER];
  if (locks === undefined && fences === undefined) return { kind: "missing" };
  if (locks === undefined) return malformed(`${FENCE_HEADER} was sent without ${LOCK_HEADER}`);
  if (fences === undefined) return malformed(`${LOCK_HEADER} was sent without ${FENCE_HEADER}`);
  if (locks.length > 1) return malformed(`${LOCK_HEADER} was sent ${locks.length} times`);
  if (fences.length > 1) return malformed(`${FENCE_HEADER} was sent ${fences.length} times`);

  const lock = decodeLock(locks[0] ?? "");
  if (lock.kind === "malformed") return lock;
  const fence = parseFence(fences[0] ?? "");
  if (fence.kind === "malformed") return fence;
  const kinds = req.headersDistinct[KIND_HEADER];
  if (kinds !== undefined && kinds.length > 1) return malformed(`${KIND_HEADER} was sent ${kinds.length} times`);
  const lockKind = kinds?.[0] ?? "mutex";
  if (!KIND.test(lockKind)) return malformed(`${KIND_HEADER} must be a kind name such as mutex or rw, got ${JSON.stringify(lockKind.slice(0, 40))}`);
  return { kind: "fenced", lock: lock.value, lockKind, fence: fence.value };
}

type Part<T> = { readonly kind: "ok"; readonly value: T } | { readonly kind: "malformed"; readonly reason: string };

const malformed = (reason: string): { kind: "malformed"; reason: string } => ({ kind: "malformed", reason });

function decodeLock(raw: string): Part<string> {
  let lock: string;
  try {
    lock = utf8.decode(Buffer.from(raw, "latin1"));
  } catch {
    return malformed(`${LOCK_HEADER} is not valid UTF-8`);
  }
  const problem = lockProblem(lock);
  return problem === undefined ? { kind: "ok", value: lock } : malformed(`${LOCK_HEADER}: ${problem}`);
}

const DIGITS = /^[0-9]+$/;

function parseFence(raw: string): Part<bigint> {
  // Length first, so a megabyte of digits is refused before any BigInt is built from it.
  if (raw.length > MAX_FENCE_DIGITS) return malformed(`${FENCE_HEADER} is longer than ${MAX_FENCE_DIGITS} digits`);
  if (!DIGITS.test(raw)) return malformed(`${FENCE_HEADER} must be decimal digits only, got ${JSON.stringify(raw)}`);
  const fence = BigInt(raw);
  const problem = fenceProblem(fence);
  return problem === undefined ? { kind: "ok", value: fence } : malformed(`${FENCE_HEADER}: ${problem}`);
}
