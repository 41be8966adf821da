// How one export call goes in and comes out, for the two ABIs a guest can be built for, shared
// by both runtimes: a lockhost guest gets its string arguments written into its memory (freed
// after the call) and may return a string from it; an Extism plugin gets its input in its
// kernel and answers with its output there, or with the error it set (the Extism way).
import { LockhostError } from "../../kit/errors.js";
import type { GuestValue } from "./guest-instance.js";
import { writeStringArgs, type GuestArg } from "./guest-strings.js";
import { readStringResult, type StringResultForm } from "./string-results.js";
import type { ExtismKernel } from "./extism/kernel.js";

/** One export call's way in and out. */
export interface CallShape {
  /** The export's parameters. */
  readonly params: number[];
  /** Right after the export returned: what the call leaves to clean up. Throws: the instance cannot be trusted (a trap). */
  release(): void;
  /** The call's value from what the export returned. Throws a LockhostError the call rejects with (the instance runs on). */
  finish(value: GuestValue): GuestValue | string;
}

/** A lockhost guest's call: strings written through its allocator, a string result read from its memory. */
export function nativeCall(
  exports: WebAssembly.Exports,
  memory: WebAssembly.Memory,
  plugin: string,
  name: string,
  args: readonly GuestArg[],
  stringResult: StringResultForm | undefined,
): CallShape {
  const strings = writeStringArgs(exports, memory, args);
  return {
    params: strings.params,
    release: () => strings.release(),
    finish: (value) => {
      if (!stringResult) return value;
      try {
        return readStringResult(memory, value, `export ${name}`, stringResult);
      } catch (err) {
        throw new LockhostError("INVALID_MEMORY", `plugin ${plugin}: ${(err as Error).message}`);
      }
    },
  };
}

const utf8 = new TextEncoder();
const lenient = new TextDecoder("utf-8");

/**
 * An Extism plugin's call: the input (a string's UTF-8) in its kernel; its output as a string
 * when `wantsOutput` (empty when it set none), else its return code; CALL_FAILED with its
 * message when it set an error, as @extism/extism throws "Plugin-originated error".
 */
export function extismCall(kernel: ExtismKernel, plugin: string, name: string, args: readonly GuestArg[], wantsOutput: boolean): CallShape {
  kernel.begin(typeof args[0] === "string" ? utf8.encode(args[0]) : new Uint8Array(0));
  let end: ReturnType<ExtismKernel["end"]> | undefined;
  return {
    params: [],
    release: () => {
      end = kernel.end();
    },
    finish: (value) => {
      if (end?.error !== undefined) {
        throw new LockhostError("CALL_FAILED", `plugin ${plugin} export ${name} failed: ${end.error}`, { details: { rc: Number(value ?? 0) } });
      }
      return wantsOutput ? lenient.decode(end?.output ?? new Uint8Array(0)) : value;
    },
  };
}
