// The Extism kernel, kept host-side as @extism/extism keeps it: memory blocks the plugin
// allocates live beside its own memory (an address is the block's index in the high 16 bits
// and the offset within it in the low 48, as that SDK makes them), with the call's input, its
// output and error, the plugin's vars (kept across calls) and config. The plugin's memory cap
// covers both: a block that would take the kernel's bytes and the plugin's own memory past
// memory_limit_mib is refused (a trap). Runs wherever the guest runs (the host's thread, or
// its worker): it needs nothing of the host.
import { EXTISM_LOG_LEVELS } from "../../../abi/extism.js";
import { LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARN } from "../../../abi/status.js";
import type { TraceBudget } from "../guest-env.js";

const SHIFT = 48n;
const MASK = (1n << SHIFT) - 1n;
const BLOCK = 2 ** 48;
/** Below this an address is exact as a Number: index and offset come from it without BigInt arithmetic. */
const EXACT = 2 ** 53;

/** A block's address. */
export const addressOf = (index: number): bigint => (index < 32 ? BigInt(index * BLOCK) : BigInt(index) << SHIFT);

/** The block index of an address (its high 16 bits). */
export function indexOf(addr: bigint): number {
  const n = Number(addr);
  return n >= 0 && n < EXACT ? Math.floor(n / BLOCK) : Number(BigInt.asUintN(64, addr) >> SHIFT);
}

/** The offset within its block of an address (its low 48 bits). */
export function offsetOf(addr: bigint): number {
  const n = Number(addr);
  return n >= 0 && n < EXACT ? n % BLOCK : Number(BigInt.asUintN(64, addr) & MASK);
}

/** What a kernel misuse throws: the plugin's call traps with it, as under Extism. */
export class KernelError extends Error {}

const utf8 = new TextEncoder();
const lenient = new TextDecoder("utf-8");

/** What the kernel is given by the runtime that runs it. */
export interface KernelOptions {
  /** The plugin's `[plugins.config]` values. */
  readonly config: Readonly<Record<string, string>>;
  /** The least severe LOG_* level the plugin logs (LOG_ERROR + 1: none). */
  readonly logLevel: number;
  /** The plugin's memory cap in bytes: its own memory and the kernel's blocks together. */
  readonly capBytes: number;
  /** The bytes the plugin's own memory takes now. */
  readonly guestBytes: () => number;
  /** The call's log lines (the per-call budget every guest has). */
  readonly lines: TraceBudget;
}

/** What one call left behind: its output, or the error the plugin set. */
export interface CallEnd {
  readonly output: Uint8Array | undefined;
  readonly error: string | undefined;
}

/** One plugin instance's kernel. */
export class ExtismKernel {
  readonly #o: KernelOptions;
  /** Index 0 is the null address. */
  readonly #blocks: (Uint8Array | null)[] = [null];
  /** Each block's DataView, made at its first load or store (loads and stores are the plugin's hottest calls). */
  readonly #views: (DataView | null)[] = [null];
  /** Free indices, reused before the array grows. */
  readonly #freeSlots: number[] = [];
  /**
   * Small blocks (arguments, replies: most of a plugin's blocks) are slots of one buffer with one
   * DataView, so a block costs no buffer and no view of its own.
   */
  readonly #slab = new Uint8Array(SLOT_BYTES * SLOTS);
  readonly #slabView = new DataView(this.#slab.buffer);
  readonly #freeSlabSlots: number[] = Array.from({ length: SLOTS }, (_, i) => SLOTS - 1 - i);
  #bytes = 0;
  /** Var name -> block index; the blocks outlive the call. */
  readonly #vars = new Map<string, number>();
  /** The block indices the vars hold. */
  readonly #varBlocks = new Set<number>();
  readonly #config: ReadonlyMap<string, Uint8Array>;
  #input = 0;
  #output: { index: number; length: number } | undefined;
  #error: number | undefined;
  /** The status and headers of the call's last HTTP response (http_status_code, http_headers). */
  httpStatus = 0;
  httpHeaders: Record<string, string> = {};

  constructor(options: KernelOptions) {
    this.#o = options;
    this.#config = new Map(Object.entries(options.config).map(([k, v]) => [k, utf8.encode(v)]));
  }

  /** Starts a call with `input` as its input. */
  begin(input: Uint8Array): void {
    this.end();
    this.#input = input.byteLength === 0 ? 0 : indexOf(this.store(input));
  }

  /** Ends a call: what it output, or its error; every block but the vars' is freed. */
  end(): CallEnd {
    // Read before the blocks are freed (a slab slot is reused by the next allocation).
    const output = this.#output && this.#blocks[this.#output.index]?.slice(0, this.#output.length);
    const errorBlock = this.#error !== undefined ? this.#blocks[this.#error] : undefined;
    const error = errorBlock ? lenient.decode(errorBlock) : undefined;
    for (let i = 1; i < this.#blocks.length; i++) if (!this.#varBlocks.has(i)) this.#release(i);
    // A call that made many blocks leaves no long tail of empty indices behind it.
    let length = this.#blocks.length;
    while (length > 1 && this.#blocks[length - 1] === null) length--;
    if (length < this.#blocks.length) {
      this.#blocks.length = length;
      this.#views.length = length;
      let kept = 0;
      for (const i of this.#freeSlots) if (i < length) this.#freeSlots[kept++] = i;
      this.#freeSlots.length = kept;
    }
    this.#input = 0;
    this.#output = undefined;
    this.#error = undefined;
    this.httpStatus = 0;
    this.httpHeaders = {};
    return { output: output ?? undefined, error };
  }

  /** After a trap: the call's blocks go; the vars stay (they are the plugin's, not the instance's). */
  reset(): void {
    this.end();
  }

  /** Bytes the kernel's blocks take now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** A new block of `size` bytes; its address. */
  alloc(size: number | bigint): bigint {
    const n = Number(size);
    if (!Number.isSafeInteger(n) || n < 0) throw new KernelError(`alloc: size ${String(size)} is not a byte count`);
    const total = this.#bytes + n + this.#o.guestBytes();
    if (total > this.#o.capBytes) {
      throw new KernelError(
        `out of memory: a kernel block of ${n} bytes would take the plugin past its memory cap of ${this.#o.capBytes} bytes ` +
          `(${this.#o.guestBytes()} in its own memory, ${this.#bytes} in kernel blocks); raise memory_limit_mib`,
      );
    }
    const slot = n <= SLOT_BYTES ? this.#freeSlabSlots.pop() : undefined;
    let block: Uint8Array;
    if (slot === undefined) block = new Uint8Array(n);
    else {
      block = this.#slab.subarray(slot * SLOT_BYTES, slot * SLOT_BYTES + n);
      block.fill(0);
    }
    const index = this.#freeSlots.pop() ?? this.#blocks.length;
    this.#blocks[index] = block;
    this.#bytes += n;
    return addressOf(index);
  }

  /** A new block holding `bytes`; its address. */
  store(bytes: Uint8Array): bigint {
    const addr = this.alloc(bytes.byteLength);
    this.#blocks[indexOf(addr)]!.set(bytes);
    return addr;
  }

  /** The whole block at `addr` (its offset part ignored), or undefined for no block. */
  read(addr: bigint): Uint8Array | undefined {
    return this.#blocks[indexOf(addr)] ?? undefined;
  }

  /** A block's bytes as text (lenient: a log line or message shows bad UTF-8 as U+FFFD). */
  text(addr: bigint, what: string): string {
    return lenient.decode(this.#block(addr, what));
  }

  #release(index: number): void {
    const block = this.#blocks[index];
    if (!block) return;
    this.#bytes -= block.byteLength;
    this.#blocks[index] = null;
    this.#views[index] = null;
    this.#freeSlots.push(index);
    if (block.buffer === this.#slab.buffer) this.#freeSlabSlots.push(block.byteOffset / SLOT_BYTES);
  }

  #block(addr: bigint, what: string): Uint8Array {
    const block = this.read(addr);
    if (!block) throw new KernelError(`${what}: address 0x${BigInt.asUintN(64, addr).toString(16)} names no memory block`);
    return block;
  }

  /** The DataView of the block `addr` names; #offset is the offset within it, checked against `width`. */
  #at(addr: bigint, what: string, width: number): DataView {
    const index = indexOf(addr);
    const block = this.#blocks[index];
    if (!block) throw new KernelError(`${what}: address 0x${BigInt.asUintN(64, addr).toString(16)} names no memory block`);
    const offset = offsetOf(addr);
    if (offset + width > block.byteLength) {
      throw new KernelError(`${what}: offset ${offset} (+${width}) lies outside its block of ${block.byteLength} bytes`);
    }
    if (block.buffer === this.#slab.buffer) {
      this.#offset = block.byteOffset + offset;
      return this.#slabView;
    }
    this.#offset = offset;
    return this.#views[index] ?? this.#viewOf(index)!;
  }

  #viewOf(index: number): DataView | undefined {
    const block = this.#blocks[index];
    if (!block) return undefined;
    const view = new DataView(block.buffer);
    this.#views[index] = view;
    return view;
  }

  /** The offset #at found (kept in a field: no array per load or store). */
  #offset = 0;

  #inputAt(offset: bigint, width: number, what: string): DataView {
    const input = this.#blocks[this.#input] ?? EMPTY;
    const at = offsetOf(offset);
    if (at + width > input.byteLength) throw new KernelError(`${what}: offset ${at} (+${width}) lies outside the input of ${input.byteLength} bytes`);
    if (input.buffer === this.#slab.buffer) {
      this.#offset = input.byteOffset + at;
      return this.#slabView;
    }
    this.#offset = at;
    return this.#views[this.#input] ?? this.#viewOf(this.#input)!;
  }

  #log(level: number, addr: bigint, what: string): void {
    // Below the plugin's level a line costs a comparison: no decoding, no budget.
    if (level < this.#o.logLevel) return;
    const text = this.text(addr, what);
    this.#o.lines.line(() => text, level);
  }

  /** The kernel's imports that answer at once (all but http_request, which the runtime provides). */
  imports(): Record<string, (...args: never[]) => unknown> {
    return {
      alloc: (n: bigint) => this.alloc(n),
      free: (addr: bigint) => {
        const index = indexOf(addr);
        // A var's block stays the var's until var_set replaces it.
        if (!this.#varBlocks.has(index)) this.#release(index);
      },
      length: (addr: bigint) => BigInt(this.read(addr)?.byteLength ?? 0),
      length_unsafe: (addr: bigint) => BigInt(this.read(addr)?.byteLength ?? 0),
      load_u8: (addr: bigint) => this.#at(addr, "load_u8", 1).getUint8(this.#offset),
      load_u64: (addr: bigint) => this.#at(addr, "load_u64", 8).getBigUint64(this.#offset, true),
      store_u8: (addr: bigint, value: number) => this.#at(addr, "store_u8", 1).setUint8(this.#offset, value),
      store_u64: (addr: bigint, value: bigint) => this.#at(addr, "store_u64", 8).setBigUint64(this.#offset, value, true),
      input_offset: () => addressOf(this.#input),
      input_length: () => BigInt(this.#blocks[this.#input]?.byteLength ?? 0),
      input_load_u8: (offset: bigint) => this.#inputAt(offset, 1, "input_load_u8").getUint8(this.#offset),
      input_load_u64: (offset: bigint) => this.#inputAt(offset, 8, "input_load_u64").getBigUint64(this.#offset, true),
      output_set: (addr: bigint, length: bigint) => {
        const block = this.#block(addr, "output_set");
        const n = Number(BigInt.asUintN(64, length));
        if (n > block.byteLength) throw new KernelError(`output_set: length ${n} is longer than its block of ${block.byteLength} bytes`);
        this.#output = { index: indexOf(addr), length: n };
      },
      error_set: (addr: bigint) => {
        this.#block(addr, "error_set");
        this.#error = indexOf(addr);
      },
      config_get: (addr: bigint) => {
        const value = this.#config.get(this.text(addr, "config_get"));
        return value ? this.store(value) : 0n;
      },
      var_get: (addr: bigint) => {
        const index = this.#vars.get(this.text(addr, "var_get"));
        return index === undefined ? 0n : addressOf(index);
      },
      var_set: (addr: bigint, value: bigint) => {
        const name = this.text(addr, "var_set");
        const old = this.#vars.get(name);
        if (BigInt.asUintN(64, value) === 0n) this.#vars.delete(name);
        else {
          this.#block(value, "var_set");
          this.#vars.set(name, indexOf(value));
        }
        this.#varBlocks.clear();
        for (const index of this.#vars.values()) this.#varBlocks.add(index);
        if (old !== undefined && !this.#varBlocks.has(old)) this.#release(old);
      },
      http_status_code: () => this.httpStatus,
      http_headers: () => this.store(utf8.encode(JSON.stringify(this.httpHeaders))),
      log_trace: (addr: bigint) => this.#log(LOG_DEBUG, addr, "log_trace"),
      log_debug: (addr: bigint) => this.#log(LOG_DEBUG, addr, "log_debug"),
      log_info: (addr: bigint) => this.#log(LOG_INFO, addr, "log_info"),
      log_warn: (addr: bigint) => this.#log(LOG_WARN, addr, "log_warn"),
      log_error: (addr: bigint) => this.#log(LOG_ERROR, addr, "log_error"),
      get_log_level: () => extismLevel(this.#o.logLevel),
    };
  }
}

const EMPTY = new Uint8Array(0);
/** The slab's slots: blocks up to SLOT_BYTES take one (64 KiB in all per plugin instance). */
const SLOT_BYTES = 64;
const SLOTS = 1024;

/** The Extism log level of a plugin whose least severe logged LOG_* level is `level`. */
function extismLevel(level: number): number {
  if (level <= LOG_DEBUG) return EXTISM_LOG_LEVELS.debug;
  if (level === LOG_INFO) return EXTISM_LOG_LEVELS.info;
  if (level === LOG_WARN) return EXTISM_LOG_LEVELS.warn;
  if (level === LOG_ERROR) return EXTISM_LOG_LEVELS.error;
  return EXTISM_LOG_LEVELS.off;
}
