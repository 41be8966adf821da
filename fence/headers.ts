// The two request headers a fenced write carries, and the parser that reads them. A guest's
// http capability sends them; anything else may as well (curl, another service).
import type { IncomingMessage } from "node:http";
import { MAX_FENCE_DIGITS, fenceProblem, lockProblem } from "./rules.js";

/** Header carrying the full lock name the fence belongs to, e.g. `global:ledger`. */
export const LOCK_HEADER = "lockhost-lock";

/** Header carrying the holder's fence: decimal digits, a positive integer that may exceed 2^53. */
export const FENCE_HEADER = "lockhost-fence";

/**
 * Header carrying the full lock name percent-encoded, sent instead of {@link LOCK_HEADER} when a
 * header value cannot carry the name as it is: a name that ends (or starts) with a space, which
 * HTTP trims from a value, or has a control character (CR, LF, a tab...), which a value cannot
 * hold. The value is the name's UTF-8 bytes, every byte outside visible ASCII and every `%` as
 * `%XX` (so `global:ledger ` is `global:ledger%20`); `decodeURIComponent` reads it back.
 */
export const ENCODED_LOCK_HEADER = "lockhost-lock-encoded";

/**
 * Header carrying the lock's kind (`mutex`, `rw`, `semaphore`...): each kind of one name
 * counts its fences on its own, so fences are compared only within a kind. Optional: `mutex`
 * when absent.
 */
export const KIND_HEADER = "lockhost-kind";

/**
 * The lock kinds whose fences a resource accepts, as {@link KIND_HEADER} names them (lockhost's
 * kind table: a test holds the two the same). A kind not in it is refused, so a typo or a kind
 * this version does not know never gets a counter of its own.
 */
export const FENCE_KINDS = Object.freeze(["mutex", "rw", "semaphore", "fair", "leader"] as const);

/** A lock kind a resource accepts fences of. */
export type FenceKind = (typeof FENCE_KINDS)[number];

const isFenceKind = (kind: string): kind is FenceKind => (FENCE_KINDS as readonly string[]).includes(kind);

/** A lock name, kind and fence read from a request, all checked. */
export interface Fence {
  /** The full lock name the fence was issued for. */
  readonly lock: string;
  /** The lock's kind ({@link KIND_HEADER}), "mutex" when not sent. */
  readonly lockKind: FenceKind;
  /** The fencing token, exact at any size (never a float). */
  readonly fence: bigint;
}

/**
 * What a request's fence headers say: a fence, none at all (`missing`: whether that is fine is
 * the caller's policy), or a reason they cannot be used (`malformed`).
 */
export type ParsedFence = ({ readonly kind: "fenced" } & Fence) | { readonly kind: "missing" } | { readonly kind: "malformed"; readonly reason: string };

// Decoding the bytes as UTF-8 (Node hands header values over as latin1) lets a lock name
// with non-ASCII characters arrive as it was sent; fatal, so a mangled name is refused.
const utf8 = new TextDecoder("utf-8", { fatal: true });

// What survives as a header value unchanged: no control character (a value cannot hold CR or
// LF, and a tab is trimmed at its edges) and no space at either edge (HTTP trims it).
const PLAIN_NAME = /^(?! )[^\u0000-\u001f\u007f]*(?<! )$/;

/**
 * The header that carries lock name `lock` and its value: {@link LOCK_HEADER} with the name's
 * UTF-8 bytes (one latin1 character per byte, as Node sends a header) when a header value keeps
 * it as it is, which every resource reads; else {@link ENCODED_LOCK_HEADER}, percent-encoded. A
 * resource that does not know the encoded header refuses the fence (it sees none of its lock),
 * where reading a trimmed name would have taken it for another lock's.
 */
export function lockHeader(lock: string): readonly [name: string, value: string] {
  const bytes = Buffer.from(lock, "utf8");
  if (PLAIN_NAME.test(lock)) return [LOCK_HEADER, bytes.toString("latin1")];
  let value = "";
  for (const byte of bytes)
    value += byte > 0x20 && byte < 0x7f && byte !== 0x25 ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  return [ENCODED_LOCK_HEADER, value];
}

/**
 * Reads the lock name ({@link LOCK_HEADER}, or {@link ENCODED_LOCK_HEADER}: one of the two) and
 * {@link FENCE_HEADER} from a request. Both or neither must be there; each at most once
 * (`headersDistinct`, since Node would join repeats with ", "). The fence is decimal digits
 * only, at most {@link MAX_FENCE_DIGITS} of them, above zero; the kind one of {@link FENCE_KINDS}.
 */
export function parseFenceHeaders(req: Pick<IncomingMessage, "headersDistinct">): ParsedFence {
  const plain = req.headersDistinct[LOCK_HEADER];
  const encoded = req.headersDistinct[ENCODED_LOCK_HEADER];
  const fences = req.headersDistinct[FENCE_HEADER];
  if (plain === undefined && encoded === undefined && fences === undefined) return { kind: "missing" };
  if (plain !== undefined && encoded !== undefined) return malformed(`send one of ${LOCK_HEADER} and ${ENCODED_LOCK_HEADER}, not both`);
  if (plain === undefined && encoded === undefined) return malformed(`${FENCE_HEADER} was sent without ${LOCK_HEADER}`);
  const [header, locks] = plain !== undefined ? [LOCK_HEADER, plain] : [ENCODED_LOCK_HEADER, encoded!];
  if (fences === undefined) return malformed(`${header} was sent without ${FENCE_HEADER}`);
  if (locks.length > 1) return malformed(`${header} was sent ${locks.length} times`);
  if (fences.length > 1) return malformed(`${FENCE_HEADER} was sent ${fences.length} times`);

  const lock = plain !== undefined ? decodeLock(locks[0] ?? "") : decodeEncodedLock(locks[0] ?? "");
  if (lock.kind === "malformed") return lock;
  const fence = parseFence(fences[0] ?? "");
  if (fence.kind === "malformed") return fence;
  const kinds = req.headersDistinct[KIND_HEADER];
  if (kinds !== undefined && kinds.length > 1) return malformed(`${KIND_HEADER} was sent ${kinds.length} times`);
  const lockKind = kinds?.[0] ?? "mutex";
  if (!isFenceKind(lockKind)) return malformed(`${KIND_HEADER} must be one of ${FENCE_KINDS.join(", ")}, got ${JSON.stringify(lockKind.slice(0, 40))}`);
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

// Visible ASCII but `%`, or `%` and two hex digits: what lockHeader writes, and nothing looser
// (a raw space or a lone `%` is a sender's mistake, not a name).
const ENCODED = /^(?:[\x21-\x24\x26-\x7e]|%[0-9A-Fa-f]{2})*$/;

function decodeEncodedLock(raw: string): Part<string> {
  if (!ENCODED.test(raw)) return malformed(`${ENCODED_LOCK_HEADER} must be percent-encoded: visible ASCII, and %XX for every other byte and for %`);
  const bytes = Buffer.from(
    raw.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16))),
    "latin1",
  );
  let lock: string;
  try {
    lock = utf8.decode(bytes);
  } catch {
    return malformed(`${ENCODED_LOCK_HEADER} is not percent-encoded UTF-8`);
  }
  const problem = lockProblem(lock);
  return problem === undefined ? { kind: "ok", value: lock } : malformed(`${ENCODED_LOCK_HEADER}: ${problem}`);
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
