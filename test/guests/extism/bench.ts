// Bench guest (bench/extism.ts): the cost of a try + release pair through the lock functions
// (extism:host/user, JSON in and out through kernel memory), as test/guests/bench.ts measures
// it through lockhost's own ABI. Its input: "<n> <keyId>"; its output: "<pairs done>".
import { Host, Memory } from "@extism/as-pdk";
import { free, length, load_u64, load_u8 } from "@extism/as-pdk/lib/env";

function guestAbort(message: string | null, fileName: string | null, line: u32, column: u32): void {
  unreachable();
}

@external("extism:host/user", "lock_try")
declare function lock_try(offset: u64): u64;
@external("extism:host/user", "lock_release")
declare function lock_release(offset: u64): u64;

/**
 * The integer after `"result":` in a reply, read 8 bytes a load where it can (as as-pdk reads
 * memory) without allocating; the reply is freed (a long loop keeps the kernel's blocks few).
 */
function result(reply: u64): i64 {
  const n = length(reply);
  let value: i64 = 0;
  let negative = false;
  for (let i: u64 = 8; i < n; i += 8) {
    const word = n - i >= 8 ? load_u64(reply + i) : 0;
    const count = n - i >= 8 ? 8 : n - i;
    for (let j: u64 = 0; j < count; j++) {
      const at = i + j;
      if (at < 10) continue; // {"result":
      const c = n - i >= 8 ? u8(word >> (j * 8)) : load_u8(reply + at);
      if (c == 45) negative = true;
      else if (c >= 48 && c <= 57) value = value * 10 + i64(c - 48);
    }
  }
  free(reply);
  return negative ? -value : value;
}

/**
 * A string in a new kernel block, written 8 bytes a call (Memory.store); as-pdk's
 * Memory.allocateString writes it a byte a call.
 */
function block(s: string): Memory {
  const bytes = Uint8Array.wrap(String.UTF8.encode(s));
  const mem = Memory.allocate(bytes.length);
  mem.store(bytes);
  return mem;
}

export function loop(): i32 {
  const input = Host.inputString();
  const space = input.indexOf(" ");
  const n = I32.parseInt(input.slice(0, space));
  const tryArgs = block(`{"key":"k${input.slice(space + 1)}","ttl_ms":10000}`);
  for (let i = 0; i < n; i++) {
    const h = result(lock_try(tryArgs.offset));
    assert(h > 0, "bench: try did not acquire");
    const args = block(`{"handle":${h}}`);
    const r = result(lock_release(args.offset));
    args.free();
    assert(r == 0, "bench: release failed");
  }
  tryArgs.free();
  Host.outputString(n.toString());
  return 0;
}
