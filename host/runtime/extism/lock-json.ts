// The JSON encoding of lockhost's lock functions for Extism plugins (abi/extism.ts): a call's
// JSON arguments checked and laid out as the operation's native arguments (numbers and strings
// in ABI order), and the operation's reply as the JSON the plugin reads. Shared by the runtimes
// (the kernel's `extism:host/user` imports) and `lockhost/extism` (the same functions for an
// app that runs @extism/extism itself), so a plugin reads the same replies from either.
import { JSON_DEFAULTS, type LockFunction } from "../../../abi/extism.js";
import { INVALID_ARGUMENT } from "../../../abi/status.js";
import { codeOfStatus } from "../../../kit/errors.js";

const utf8 = new TextEncoder();
const strict = new TextDecoder("utf-8", { fatal: true });

/** A lock function's arguments as the native operation takes them. */
export interface NativeArgs {
  readonly numbers: number[];
  readonly strings: Uint8Array[];
}

/** The native arguments of a lock function's JSON call, or the reply refusing it (-INVALID_ARGUMENT). */
export function lockArgs(fn: LockFunction, input: Uint8Array | undefined): NativeArgs | Uint8Array {
  let args: unknown;
  try {
    args = JSON.parse(strict.decode(input ?? new Uint8Array(0)));
  } catch (err) {
    return refused(fn, `its argument must be a JSON object (${(err as Error).message})`);
  }
  if (typeof args !== "object" || args === null || Array.isArray(args)) return refused(fn, "its argument must be a JSON object");
  const given = args as Record<string, unknown>;
  const numbers: number[] = [];
  const strings: Uint8Array[] = [];
  for (const { field, text, maxBytes } of fn.fields) {
    const value = Object.hasOwn(given, field) ? given[field] : JSON_DEFAULTS[field];
    if (text) {
      if (typeof value !== "string") return refused(fn, `field "${field}" must be a string`);
      const bytes = utf8.encode(value);
      if (maxBytes !== undefined && bytes.byteLength > maxBytes) {
        return refused(fn, `field "${field}" is ${bytes.byteLength} bytes of UTF-8; the maximum is ${maxBytes}`);
      }
      strings.push(bytes);
    } else {
      if (typeof value !== "number" || !Number.isInteger(value) || value < -0x80000000 || value > 0xffffffff) {
        return refused(fn, `field "${field}" must be an integer (a 32-bit one)${value === undefined ? "; it is missing" : ""}`);
      }
      numbers.push(value | 0);
    }
  }
  // Each field given was read above, unless it is unknown (the common call has none).
  let read = 0;
  for (const { field } of fn.fields) if (Object.hasOwn(given, field)) read++;
  for (const _ in given) {
    if (read-- > 0) continue;
    const known = fn.fields.map((f) => f.field);
    const unknown = Object.keys(given).filter((k) => !known.includes(k));
    return refused(fn, `unknown field(s) ${unknown.map((k) => JSON.stringify(k)).join(", ")}; it takes ${known.join(", ") || "none"}`);
  }
  return { numbers, strings };
}

/**
 * The JSON reply of a lock function: `result` as the native operation returns it (`> 0` a
 * handle, `0` contended, `-code` on error; a fence or state for those operations), `code` the
 * error's name when it failed, `message` its message (or a contended try's note), `value` the
 * output of status, leader (JSON) and owner (a string).
 */
export function lockReply(fn: LockFunction, result: number, text: string | undefined): Uint8Array {
  // The common reply (a handle, OK, a fence, a state) is its result alone: ASCII, written byte by byte.
  if (text === undefined && result >= 0) return asciiBytes(`{"result":${result}}`);
  const out: Record<string, unknown> = { result };
  if (result < 0) out.code = codeOfStatus(result) ?? "INTERNAL";
  if (fn.output && result >= 0) out.value = fn.output === "json" ? JSON.parse(text ?? "null") : (text ?? "");
  else if (text) out.message = text;
  return utf8.encode(JSON.stringify(out));
}

function asciiBytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function refused(fn: LockFunction, message: string): Uint8Array {
  return lockReply(fn, -INVALID_ARGUMENT, `${fn.name}: ${message}`);
}
