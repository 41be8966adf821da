// Strings handed to a guest export (`guest.call("run", ["text", 3])`). Two forms, one row each
// in STRING_FORMS, picked by the allocator the guest exports:
//   - UTF-8 (any language: Rust, C): `lockhost_alloc_utf8(byte_len) -> ptr` and
//     `lockhost_free_utf8(ptr, byte_len)`; each string is UTF-8 bytes passed as TWO i32
//     parameters, (ptr, len), so the guest needs no header to know its length;
//   - AssemblyScript: `lockhost_alloc(byte_len) -> ptr` returns a pinned string object, the
//     UTF-16 code units go there and the ONE i32 parameter is its pointer (AS's own layout);
//     `lockhost_free(ptr)` unpins it.
// The guest's allocator rather than a region of the host's: only the guest knows what memory is
// free, and an object it allocated is one its code can keep or drop like any other. Used by
// both runtimes, inside the instance's own thread (the worker's, or the host's for inline
// guests).
//
// Not @assemblyscript/loader (0.28.20, measured): its __newString needs the guest built with
// --exportRuntime (`__new`), its __getString reads only an *exported* memory (lockhost's guests
// import theirs: it throws a TypeError), it wraps every export (the inline runtime needs the raw
// ones for WebAssembly.promising), trusts the pointer's header without bounds checks, and reads
// a 40-unit string in 1.95 µs where this code takes 0.35 µs (100k reads; 3.55 vs 0.99 µs at
// 2,000 units).
import type { FuncSignature } from "./wasm-binary.js";

/** One argument of an export call: a number, or a string the guest receives as its string form says. */
export type GuestArg = number | string;

/** How a guest receives string arguments. */
export interface StringForm {
  /** For messages: what the guest receives. */
  readonly label: string;
  /** The export the host allocates a string with: `(byte_len: i32) -> i32`. */
  readonly alloc: string;
  /** The export the host lets go of it with after the call, and that export's parameters. */
  readonly free: string;
  readonly freeParams: readonly ["i32"] | readonly ["i32", "i32"];
  /** The wasm parameters one string argument takes. */
  readonly params: 1 | 2;
  /** How a guest in each SDK gets both exports. */
  readonly sdk: string;
  /** The string's bytes in this form. */
  encode(s: string): Uint8Array;
  /** Alignment the allocator's pointer must have. */
  readonly align: 1 | 2;
  /** Whether an empty string skips the allocator (passed as (0, 0)). */
  readonly emptyWithoutAlloc: boolean;
}

/** Every string form, in the order the host looks for them (UTF-8 first: an explicit opt-in). */
export const STRING_FORMS: readonly StringForm[] = [
  {
    label: "UTF-8 as (ptr, len)",
    alloc: "lockhost_alloc_utf8",
    free: "lockhost_free_utf8",
    freeParams: ["i32", "i32"],
    params: 2,
    sdk: "Rust: lockhost::export_string_args!(); C: LOCKHOST_STRING_ARGS_ARENA(bytes) or LOCKHOST_STRING_ARGS_MALLOC()",
    encode: (s) => Buffer.from(s, "utf8"),
    align: 1,
    emptyWithoutAlloc: true,
  },
  {
    label: "an AssemblyScript string pointer",
    alloc: "lockhost_alloc",
    free: "lockhost_free",
    freeParams: ["i32"],
    params: 1,
    sdk: `AssemblyScript: export { lockhost_alloc, lockhost_free } from "lockhost"`,
    encode: (s) => {
      const out = new Uint8Array(s.length * 2);
      const view = new DataView(out.buffer);
      for (let i = 0; i < s.length; i++) view.setUint16(i * 2, s.charCodeAt(i), true);
      return out;
    },
    align: 2,
    emptyWithoutAlloc: false,
  },
];

/** The AssemblyScript form: what a guest exporting neither allocator is told to add. */
const AS_FORM = STRING_FORMS[1]!;

/** The longest string argument, in UTF-16 code units (what an AssemblyScript string holds): 1 Mi. */
export const MAX_STRING_ARG_UNITS = 1 << 20;

/** The string form of a guest that exports the names `has` says yes to (AssemblyScript's when it exports neither allocator). */
export function stringFormOf(has: (exportName: string) => boolean): StringForm {
  return STRING_FORMS.find((f) => has(f.alloc)) ?? AS_FORM;
}

const describeSig = (name: string, sig: FuncSignature): string => `${name}(${sig.params.join(", ")}) -> ${sig.results.join(", ") || "nothing"}`;
const same = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((t, i) => t === b[i]);

/**
 * Why string arguments cannot go to this guest (its allocator exports are missing or of the
 * wrong signature), or undefined when they can.
 */
export function allocatorProblem(exports: ReadonlyMap<string, FuncSignature>): string | undefined {
  const form = stringFormOf((n) => exports.has(n));
  const alloc = exports.get(form.alloc);
  const free = exports.get(form.free);
  const okAlloc = alloc && same(alloc.params, ["i32"]) && same(alloc.results, ["i32"]);
  const okFree = free && same(free.params, form.freeParams) && free.results.length === 0;
  if (okAlloc && okFree) return undefined;
  const has = [alloc && describeSig(form.alloc, alloc), free && describeSig(form.free, free)].filter(Boolean);
  return (
    `a string argument needs the guest to export ${form.alloc}(i32) -> i32 and ${form.free}(${form.freeParams.join(", ")}) ` +
    `(${form.sdk})${has.length > 0 ? `; it exports ${has.join(" and ")}` : ""}`
  );
}

/** The string arguments of one call in guest memory: the wasm arguments, and how to let go of them. */
export interface WrittenArgs {
  readonly params: number[];
  /** Calls the guest's free export for each string (after the call returned). */
  release(): void;
}

const NOTHING_TO_RELEASE = (): void => undefined;

/**
 * Writes the string arguments into the guest's memory in its string form; returns the wasm
 * arguments. Throws (as the call's trap) when the guest's allocator traps or answers a pointer
 * the string does not fit at; strings allocated so far are freed first.
 */
export function writeStringArgs(exports: WebAssembly.Exports, memory: WebAssembly.Memory, args: readonly GuestArg[]): WrittenArgs {
  if (!args.some((a) => typeof a === "string")) return { params: args as number[], release: NOTHING_TO_RELEASE };
  const form = stringFormOf((n) => typeof exports[n] === "function");
  const alloc = exports[form.alloc] as (len: number) => number;
  const free = exports[form.free] as (...args: number[]) => void;
  const frees: number[][] = [];
  const release = (): void => {
    for (const f of frees.splice(0)) free(...f);
  };
  try {
    const params: number[] = [];
    for (const a of args) {
      if (typeof a !== "string") {
        params.push(a);
        continue;
      }
      const bytes = form.encode(a);
      if (bytes.length === 0 && form.emptyWithoutAlloc) {
        params.push(0, 0);
        continue;
      }
      const ptr = alloc(bytes.length) >>> 0;
      if (ptr === 0 || ptr % form.align !== 0 || ptr + bytes.length > memory.buffer.byteLength) {
        throw new Error(
          `${form.alloc}(${bytes.length}) returned ${ptr}, where a string of ${bytes.length} bytes does not fit in guest memory ` +
            `(${memory.buffer.byteLength} bytes)`,
        );
      }
      frees.push(form.params === 2 ? [ptr, bytes.length] : [ptr]);
      // Written after the allocation: it may have grown (and so detached) the memory's buffer.
      new Uint8Array(memory.buffer).set(bytes, ptr);
      if (form.params === 2) params.push(ptr, bytes.length);
      else params.push(ptr);
    }
    return { params, release };
  } catch (err) {
    try {
      release();
    } catch {
      // The call fails with the first error; the instance is replaced after it anyway.
    }
    throw err;
  }
}
