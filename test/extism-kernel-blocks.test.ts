// The Extism kernel's memory blocks on their own: small blocks come from a shared slab and
// larger ones (or small ones once the slab is full) have their own buffer; both read and write
// alike, are zeroed when allocated, counted against the memory cap, and freed at the call's end
// unless a var holds them. Bad addresses and out-of-block offsets are kernel errors (traps).
import { describe, expect, it } from "vitest";
import { LOG_DEBUG } from "../abi/status.js";
import { TraceBudget } from "../host/runtime/guest-env.js";
import { ExtismKernel, KernelError } from "../host/runtime/extism/kernel.js";

function kernel(capBytes = 1 << 20): { k: ExtismKernel; imp: Record<string, (...args: never[]) => unknown> } {
  const k = new ExtismKernel({ config: {}, logLevel: LOG_DEBUG, capBytes, guestBytes: () => 0, lines: new TraceBudget(() => undefined) });
  return { k, imp: k.imports() };
}

type Fn = (...args: unknown[]) => unknown;

describe("the Extism kernel's blocks", () => {
  it("keeps 3,000 blocks of every size apart, zeroed, past the slab's slots, and frees them at the call's end", () => {
    const { k, imp } = kernel();
    const [alloc, store64, load64, store8, load8, length, free] = ["alloc", "store_u64", "load_u64", "store_u8", "load_u8", "length", "free"].map(
      (n) => imp[n] as Fn,
    );
    k.begin(new Uint8Array(0));
    const blocks: bigint[] = [];
    for (let i = 0; i < 3_000; i++) {
      const size = i % 3 === 0 ? 100 : 8 + (i % 50);
      const addr = alloc!(BigInt(size)) as bigint;
      expect(load8!(addr + BigInt(size - 1))).toBe(0);
      store64!(addr, BigInt(i) * 1_000_003n);
      store8!(addr + BigInt(size - 1), i % 256);
      blocks.push(addr);
    }
    for (let i = 0; i < 3_000; i += 2) free!(blocks[i]!);
    for (let i = 0; i < 1_500; i++) {
      const addr = alloc!(16n) as bigint;
      expect(load64!(addr)).toBe(0n);
    }
    blocks.forEach((addr, i) => {
      if (i % 2 === 0) return;
      const size = i % 3 === 0 ? 100 : 8 + (i % 50);
      expect(length!(addr)).toBe(BigInt(size));
      expect(load64!(addr)).toBe(BigInt(i) * 1_000_003n);
      expect(load8!(addr + BigInt(size - 1))).toBe(i % 256);
    });
    expect(k.bytes).toBeGreaterThan(0);
    k.end();
    expect(k.bytes).toBe(0);
  });

  it("keeps a var's block across calls, and refuses bad addresses, offsets and the cap", () => {
    const { k, imp } = kernel(4_096);
    const call = (n: string, ...args: unknown[]) => (imp[n] as Fn)(...args);
    k.begin(new Uint8Array(0));
    const name = k.store(new TextEncoder().encode("count"));
    const value = k.store(new TextEncoder().encode("41"));
    call("var_set", name, value);
    k.end();
    expect(k.bytes).toBe(2);
    k.begin(new Uint8Array(0));
    const again = call("var_get", k.store(new TextEncoder().encode("count"))) as bigint;
    expect(new TextDecoder().decode(k.read(again))).toBe("41");
    expect(() => call("load_u8", 999n << 48n)).toThrow(KernelError);
    expect(() => call("load_u64", (call("alloc", 4n) as bigint) + 0n)).toThrow(/outside its block of 4 bytes/);
    expect(() => call("alloc", 5_000n)).toThrow(/out of memory/);
    k.end();
  });
});
