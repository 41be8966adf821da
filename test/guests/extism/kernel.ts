// An Extism plugin built with @extism/as-pdk that uses every kernel import the PDK offers:
// input (u8 and u64 loads), output, error, config, vars, the four log levels, and memory
// blocks (alloc, free, length, load/store of u8 and u64). test/extism-kernel.test.ts runs it
// under @extism/extism and under lockhost with the same inputs and compares what comes out.
import { Config, Host, LogLevel, Memory, Var } from "@extism/as-pdk";
import { alloc, free, length, load_u64, load_u8, store_u64, store_u8 } from "@extism/as-pdk/lib/env";

/** as-pdk's abort hook (asc --use abort=...): an abort is a trap either way. */
function guestAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  unreachable();
}

/** The input back, byte for byte (exercises input_load_u64 and input_load_u8). */
export function echo(): i32 {
  Host.output(Host.input());
  return 0;
}

/** The input's bytes summed, as text: every byte read through the kernel. */
export function checksum(): i32 {
  const input = Host.input();
  let sum: u64 = 0;
  for (let i = 0; i < input.length; i++) sum += u64(input[i]) * u64(i + 1);
  Host.outputString(`${input.length}:${sum}`);
  return 0;
}

/** A config value named by the input, or "(none)". */
export function config(): i32 {
  const value = Config.get(Host.inputString());
  Host.outputString(value === null ? "(none)" : value);
  return 0;
}

/** Counts calls in a var (kept between calls of one plugin instance); the input "reset" removes it. */
export function counter(): i32 {
  if (Host.inputString() == "reset") {
    Var.remove("count");
    Host.outputString("reset");
    return 0;
  }
  const old = Var.getString("count");
  const next = old === null ? 1 : I32.parseInt(old) + 1;
  Var.set("count", Uint8Array.wrap(String.UTF8.encode(next.toString())));
  Host.outputString(next.toString());
  return 0;
}

/** One line at each level the PDK has, each naming the input. */
export function logs(): i32 {
  const what = Host.inputString();
  Host.log(LogLevel.Debug, `debug ${what}`);
  Host.log(LogLevel.Info, `info ${what}`);
  Host.log(LogLevel.Warn, `warn ${what}`);
  Host.log(LogLevel.Error, `error ${what}`);
  Host.outputString("logged");
  return 0;
}

/** Fails the Extism way: the input as the error, return code 1. */
export function fail(): i32 {
  const mem = Memory.allocateString(Host.inputString());
  error_set(mem.offset);
  return 1;
}

/** Memory blocks by hand: alloc, store/load of u8 and u64, length, free. */
export function blocks(): i32 {
  const a = alloc(16);
  store_u64(a, 0x0102030405060708);
  store_u8(a + 8, 42);
  const b = alloc(3);
  store_u8(b, 1);
  const out = `${length(a)} ${length(b)} ${load_u64(a)} ${load_u8(a + 8)} ${load_u8(a)} ${load_u8(b)}`;
  free(b);
  free(a);
  Host.outputString(out);
  return 0;
}

/** Nothing out: an export that sets no output. */
export function quiet(): i32 {
  return 0;
}

/** A non-zero return code without an error message. */
export function code(): i32 {
  return 3;
}

/** A trap (unreachable). */
export function boom(): i32 {
  unreachable();
  return 0;
}

@external("extism:host/env", "error_set")
declare function error_set(offset: u64): void;
