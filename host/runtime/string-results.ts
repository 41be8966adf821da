// Strings an export returns to the host (lockhost_schedules). Two forms, picked by the export's
// result type:
//   - `() -> i32`: an AssemblyScript string (UTF-16, its byte length in the header word at
//     ptr - 4);
//   - `() -> i64`: UTF-8 bytes as (ptr, len) in one value, `len << 32 | ptr`: what a Rust
//     `&'static str` or a C string literal is, so the guest needs no allocator and the host no
//     buffer in guest memory (an export has none to write into, unlike an import's caller).
// Never trusts the guest: pointer, length and encoding are checked. Used inside the instance's
// own thread (the worker's, or the host's for inline guests).

/** How an export returns a string, by its result type. */
export type StringResultForm = "assemblyscript" | "utf8" | "extism";

/** The string form of an export returning `results`, or undefined when it returns no string. */
export function stringResultFormOf(results: readonly string[]): StringResultForm | undefined {
  if (results.length !== 1) return undefined;
  return results[0] === "i32" ? "assemblyscript" : results[0] === "i64" ? "utf8" : undefined;
}

/** The longest string an export may return in UTF-16 units (AssemblyScript), and in UTF-8 bytes: 64 Ki. */
export const MAX_STRING_RESULT_UNITS = 1 << 16;
export const MAX_STRING_RESULT_BYTES = 1 << 16;

/**
 * What the string an export returned is wrong with (a plain Error: the worker thread loads no
 * more of the host than it needs; the runtime reports it as INVALID_MEMORY).
 */
export class StringResultError extends Error {}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * The string an export returned, in `form`; throws StringResultError when the pointer or length
 * does not fit the guest's memory, the string is over its limit, or UTF-8 does not decode.
 */
export function readStringResult(memory: WebAssembly.Memory, value: unknown, what: string, form: StringResultForm): string {
  // An Extism export's output is the kernel's (host/runtime/extism/): its runtime reads it, not this.
  if (form === "extism") throw new Error(`${what}: an Extism export's output is read from its kernel`);
  return form === "utf8" ? readUtf8Result(memory, value, what) : readAsStringResult(memory, value, what);
}

/** The AssemblyScript string at `ptr`. */
function readAsStringResult(memory: WebAssembly.Memory, value: unknown, what: string): string {
  const buf = memory.buffer;
  const ptr = typeof value === "number" ? value >>> 0 : 0;
  if (ptr < 4 || ptr > buf.byteLength || ptr % 2 !== 0) {
    throw new StringResultError(
      `${what} returned ${String(value)}, which is not a string in guest memory (${buf.byteLength} bytes): it must return an AssemblyScript string`,
    );
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

/** The UTF-8 bytes at (ptr, len), packed as `len << 32 | ptr`. */
function readUtf8Result(memory: WebAssembly.Memory, value: unknown, what: string): string {
  const buf = memory.buffer;
  if (typeof value !== "bigint") throw new StringResultError(`${what} returned ${String(value)}, not an i64 (len << 32 | ptr)`);
  const ptr = Number(BigInt.asUintN(32, value));
  const len = Number(BigInt.asUintN(32, value >> 32n));
  if (len > MAX_STRING_RESULT_BYTES) {
    throw new StringResultError(`${what} returned a string of ${len} bytes, over the limit of ${MAX_STRING_RESULT_BYTES}`);
  }
  if (ptr + len > buf.byteLength || (len > 0 && ptr === 0)) {
    throw new StringResultError(
      `${what} returned a string (ptr ${ptr}, len ${len}) that lies outside guest memory (${buf.byteLength} bytes): it must return len << 32 | ptr`,
    );
  }
  try {
    // A copy: TextDecoder refuses a view of a shared memory.
    return utf8.decode(new Uint8Array(buf, ptr, len).slice());
  } catch {
    throw new StringResultError(`${what} returned ${len} bytes at ${ptr} that are not valid UTF-8`);
  }
}
