// Strings an export returns (lockhost_schedules, lockhost_schedules_utf8): the form by the
// export's result type, and every way a guest's answer can be wrong, refused with a message
// naming the export, never trusted.
import { describe, expect, it } from "vitest";
import { MAX_STRING_RESULT_BYTES, readStringResult, StringResultError, stringResultFormOf } from "../host/runtime/string-results.js";

const memory = new WebAssembly.Memory({ initial: 1 });
const bytes = new Uint8Array(memory.buffer);
const packed = (ptr: number, len: number): bigint => (BigInt(len) << 32n) | BigInt(ptr);

describe("a string an export returns", () => {
  it("takes its form from the export's result: i32 an AssemblyScript string, i64 UTF-8 (len << 32 | ptr)", () => {
    expect(stringResultFormOf(["i32"])).toBe("assemblyscript");
    expect(stringResultFormOf(["i64"])).toBe("utf8");
    expect(stringResultFormOf([])).toBeUndefined();
    expect(stringResultFormOf(["f64"])).toBeUndefined();
  });

  it("reads UTF-8 at (ptr, len), the empty string included", () => {
    const text = new TextEncoder().encode("tick 5s\nnächtlich 0 3 * * *");
    bytes.set(text, 100);
    expect(readStringResult(memory, packed(100, text.length), "export s", "utf8")).toBe("tick 5s\nnächtlich 0 3 * * *");
    expect(readStringResult(memory, packed(0, 0), "export s", "utf8")).toBe("");
  });

  it.each([
    ["a number, not an i64", 100, "export s returned 100, not an i64 (len << 32 | ptr)"],
    ["bytes outside memory", packed(65_530, 10), "export s returned a string (ptr 65530, len 10) that lies outside guest memory (65536 bytes)"],
    ["a null pointer with a length", packed(0, 4), "export s returned a string (ptr 0, len 4) that lies outside guest memory"],
    [
      "a string over the limit",
      packed(0, MAX_STRING_RESULT_BYTES + 1),
      `export s returned a string of ${MAX_STRING_RESULT_BYTES + 1} bytes, over the limit of ${MAX_STRING_RESULT_BYTES}`,
    ],
  ])("refuses %s", (_what, value, message) => {
    expect(() => readStringResult(memory, value, "export s", "utf8")).toThrow(StringResultError);
    expect(() => readStringResult(memory, value, "export s", "utf8")).toThrow(message);
  });

  it("refuses bytes that are not valid UTF-8", () => {
    bytes.set([0x74, 0xff, 0xfe], 200);
    expect(() => readStringResult(memory, packed(200, 3), "export s", "utf8")).toThrow("export s returned 3 bytes at 200 that are not valid UTF-8");
  });
});
