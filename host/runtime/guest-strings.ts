// Strings handed to a guest export (`guest.call("run", ["text", 3])`): each is written into
// guest memory as an AssemblyScript string, in an object the guest allocates and pins with its
// `lockhost_alloc(byteLength) -> ptr` export, and its pointer is passed as the i32 argument;
// after the call the guest's `lockhost_free(ptr)` unpins it. The guest's allocator rather than
// a region of the host's: only the guest's collector knows what memory is free, and an object
// it allocated is one its code can keep or drop like any other string. Used by both runtimes,
// inside the instance's own thread (the worker's, or the host's for inline guests).
import type { FuncSignature } from "./wasm-binary.js";

/** One argument of an export call: a number, or a string the guest receives as a pointer. */
export type GuestArg = number | string;

/** The export the host allocates a string argument with: `(byteLength: i32) -> i32`. */
export const ALLOC_EXPORT = "lockhost_alloc";
/** The export the host lets go of a string argument with after the call: `(ptr: i32) -> ()`. */
export const FREE_EXPORT = "lockhost_free";
/** The longest string argument, in UTF-16 code units (what an AssemblyScript string holds): 1 Mi. */
export const MAX_STRING_ARG_UNITS = 1 << 20;

/**
 * Why string arguments cannot go to this guest (its allocator exports are missing or of the
 * wrong signature), or undefined when they can.
 */
export function allocatorProblem(exports: ReadonlyMap<string, FuncSignature>): string | undefined {
  const alloc = exports.get(ALLOC_EXPORT);
  const free = exports.get(FREE_EXPORT);
  const okAlloc = alloc && alloc.params.length === 1 && alloc.params[0] === "i32" && alloc.results.length === 1 && alloc.results[0] === "i32";
  const okFree = free && free.params.length === 1 && free.params[0] === "i32" && free.results.length === 0;
  if (okAlloc && okFree) return undefined;
  return `a string argument needs the guest to export ${ALLOC_EXPORT}(i32) -> i32 and ${FREE_EXPORT}(i32) (AssemblyScript: export { lockhost_alloc, lockhost_free } from "lockhost")${
    alloc || free ? `; it exports ${alloc ? `${ALLOC_EXPORT}(${alloc.params.join(", ")}) -> ${alloc.results.join(", ") || "nothing"}` : ""}${alloc && free ? " and " : ""}${free ? `${FREE_EXPORT}(${free.params.join(", ")}) -> ${free.results.join(", ") || "nothing"}` : ""}` : ""
  }`;
}

/**
 * Writes the string arguments into the guest's memory; returns the wasm arguments and the
 * pointers to free after the call. Throws (as the call's trap) when the guest's allocator traps
 * or answers a pointer the string does not fit at; pointers allocated so far are freed first.
 */
export function writeStringArgs(exports: WebAssembly.Exports, memory: WebAssembly.Memory, args: readonly GuestArg[]): { params: number[]; ptrs: number[] } {
  const ptrs: number[] = [];
  if (!args.some((a) => typeof a === "string")) return { params: args as number[], ptrs };
  const alloc = exports[ALLOC_EXPORT] as (len: number) => number;
  try {
    const params = args.map((a) => {
      if (typeof a !== "string") return a;
      const bytes = a.length * 2;
      const ptr = alloc(bytes) >>> 0;
      if (ptr === 0 || ptr % 2 !== 0 || ptr + bytes > memory.buffer.byteLength) {
        throw new Error(`${ALLOC_EXPORT}(${bytes}) returned ${ptr}, where a string of ${bytes} bytes does not fit in guest memory (${memory.buffer.byteLength} bytes)`);
      }
      ptrs.push(ptr);
      // Written after the allocation: it may have grown (and so detached) the memory's buffer.
      const units = new Uint16Array(memory.buffer, ptr, a.length);
      for (let i = 0; i < a.length; i++) units[i] = a.charCodeAt(i);
      return ptr;
    });
    return { params, ptrs };
  } catch (err) {
    try {
      freeStringArgs(exports, ptrs);
    } catch {
      // The call fails with the first error; the instance is replaced after it anyway.
    }
    throw err;
  }
}

/** Lets the guest drop the strings of a call that returned. */
export function freeStringArgs(exports: WebAssembly.Exports, ptrs: readonly number[]): void {
  if (ptrs.length === 0) return;
  const free = exports[FREE_EXPORT] as (ptr: number) => void;
  for (const ptr of ptrs) free(ptr);
}

/** The longest string an export may return to the host (lockhost_schedules), in UTF-16 units: 64 Ki. */
export const MAX_STRING_RESULT_UNITS = 1 << 16;

/**
 * What the string an export returned is wrong with (a plain Error: the worker thread loads no
 * more of the host than it needs; the runtime reports it as INVALID_MEMORY).
 */
export class StringResultError extends Error {}

/**
 * The AssemblyScript string at `ptr` (UTF-16, its byte length in the header word at ptr - 4),
 * as an export returned it; throws StringResultError when the pointer or length does not fit the
 * guest's memory or the string is over MAX_STRING_RESULT_UNITS. Never trusts the guest.
 */
export function readStringResult(memory: WebAssembly.Memory, value: unknown, what: string): string {
  const buf = memory.buffer;
  const ptr = typeof value === "number" ? value >>> 0 : 0;
  if (ptr < 4 || ptr > buf.byteLength || ptr % 2 !== 0) {
    throw new StringResultError(`${what} returned ${String(value)}, which is not a string in guest memory (${buf.byteLength} bytes): it must return an AssemblyScript string`);
  }
  const bytes = new DataView(buf).getUint32(ptr - 4, true);
  if (bytes % 2 !== 0 || ptr + bytes > buf.byteLength) {
    throw new StringResultError(`${what} returned a string (ptr ${ptr}, ${bytes} bytes) that lies outside guest memory (${buf.byteLength} bytes)`);
  }
  if (bytes / 2 > MAX_STRING_RESULT_UNITS) {
    throw new StringResultError(`${what} returned a string of ${bytes / 2} UTF-16 units, over the limit of ${MAX_STRING_RESULT_UNITS}`);
  }
  return Buffer.from(buf, ptr, bytes).toString("utf16le");
}
