// Reads what the WebAssembly JS API does not tell without type reflection: the limits of a
// memory import (the host must create the guest's memory with at least the declared minimum)
// and the signatures of exported functions (so a call with the wrong arguments is refused
// before it reaches the guest, instead of throwing inside it).

/** Page counts of a memory import. */
export interface MemoryLimits {
  readonly initial: number;
  readonly maximum?: number;
  readonly shared: boolean;
}

/** A WebAssembly value type, as the text format names it. */
export type ValType = "i32" | "i64" | "f32" | "f64" | "v128" | "funcref" | "externref";

/** The signature of a function. */
export interface FuncSignature {
  readonly params: readonly ValType[];
  readonly results: readonly ValType[];
}

/** What the host needs to know of a module's binary. */
export interface ModuleFacts {
  /** The memory imported as env.memory, if any. */
  readonly memoryImport?: MemoryLimits;
  /** Exported functions by name. */
  readonly exports: ReadonlyMap<string, FuncSignature>;
  /** Imported functions by `module.name`. */
  readonly imports: ReadonlyMap<string, FuncSignature>;
}

const VALTYPES: Record<number, ValType> = { 0x7f: "i32", 0x7e: "i64", 0x7d: "f32", 0x7c: "f64", 0x7b: "v128", 0x70: "funcref", 0x6f: "externref" };

/** Reads the memory import and the exported function signatures of a module. */
export function readModuleFacts(bytes: Uint8Array): ModuleFacts {
  const r = new Reader(bytes);
  if (r.u32le() !== 0x6d736100) throw new Error("not a WebAssembly module (bad magic)");
  r.u32le(); // version
  const types: FuncSignature[] = [];
  const funcTypes: number[] = []; // type index of every function, imported ones first
  const exports = new Map<string, FuncSignature>();
  const imports = new Map<string, FuncSignature>();
  let memoryImport: MemoryLimits | undefined;
  while (!r.done) {
    const id = r.byte();
    const end = r.leb() + r.pos;
    if (id === 1) {
      for (let n = r.leb(); n > 0; n--) {
        if (r.byte() !== 0x60) throw new Error("unsupported type in the type section");
        const params = r.vec(() => r.valtype());
        const results = r.vec(() => r.valtype());
        types.push({ params, results });
      }
    } else if (id === 2) {
      for (let n = r.leb(); n > 0; n--) {
        const mod = r.name();
        const name = r.name();
        const kind = r.byte();
        if (kind === 0) {
          const type = r.leb();
          funcTypes.push(type);
          const sig = types[type];
          if (sig) imports.set(`${mod}.${name}`, sig);
        } else if (kind === 1) {
          r.byte();
          r.limits();
        } else if (kind === 2) {
          const limits = r.limits();
          if (mod === "env" && name === "memory") memoryImport = limits;
        } else if (kind === 3) {
          r.byte();
          r.byte();
        } else if (kind === 4) {
          r.byte();
          r.leb();
        } else throw new Error(`unknown import kind ${kind}`);
      }
    } else if (id === 3) {
      for (let n = r.leb(); n > 0; n--) funcTypes.push(r.leb());
    } else if (id === 7) {
      for (let n = r.leb(); n > 0; n--) {
        const name = r.name();
        const kind = r.byte();
        const index = r.leb();
        const sig = kind === 0 ? types[funcTypes[index] ?? -1] : undefined;
        if (sig) exports.set(name, sig);
      }
    }
    r.pos = end;
  }
  return memoryImport ? { memoryImport, exports, imports } : { exports, imports };
}

class Reader {
  pos = 0;
  readonly #utf8 = new TextDecoder();
  constructor(readonly bytes: Uint8Array) {}

  get done(): boolean {
    return this.pos >= this.bytes.length;
  }

  byte(): number {
    if (this.pos >= this.bytes.length) throw new Error("truncated WebAssembly module");
    return this.bytes[this.pos++]!;
  }

  u32le(): number {
    return (this.byte() | (this.byte() << 8) | (this.byte() << 16) | (this.byte() << 24)) >>> 0;
  }

  leb(): number {
    let result = 0;
    let shift = 0;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return result;
      shift += 7;
    }
  }

  vec<T>(item: () => T): T[] {
    const out: T[] = [];
    for (let n = this.leb(); n > 0; n--) out.push(item());
    return out;
  }

  valtype(): ValType {
    const b = this.byte();
    const t = VALTYPES[b];
    if (!t) throw new Error(`unknown value type 0x${b.toString(16)}`);
    return t;
  }

  name(): string {
    const len = this.leb();
    const s = this.#utf8.decode(this.bytes.subarray(this.pos, this.pos + len));
    this.pos += len;
    return s;
  }

  limits(): MemoryLimits {
    const flags = this.byte();
    const initial = this.leb();
    const maximum = flags & 1 ? this.leb() : undefined;
    return maximum === undefined ? { initial, shared: (flags & 2) !== 0 } : { initial, maximum, shared: (flags & 2) !== 0 };
  }
}
