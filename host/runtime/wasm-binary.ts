// Reads what WebAssembly.Module.imports() does not tell: the limits of a memory import.
// The host must create the guest's memory with at least the module's declared minimum.

/** Page counts of a memory import. */
export interface MemoryLimits {
  readonly initial: number;
  readonly maximum?: number;
  readonly shared: boolean;
}

/** The limits of the memory imported as `module.field`, or undefined when there is none. */
export function memoryImportLimits(bytes: Uint8Array, module = "env", field = "memory"): MemoryLimits | undefined {
  const r = new Reader(bytes);
  if (r.u32le() !== 0x6d736100) throw new Error("not a WebAssembly module (bad magic)");
  r.u32le(); // version
  while (!r.done) {
    const id = r.byte();
    const size = r.leb();
    if (id !== 2) {
      r.skip(size);
      continue;
    }
    const count = r.leb();
    for (let i = 0; i < count; i++) {
      const mod = r.name();
      const name = r.name();
      const kind = r.byte();
      if (kind === 0) r.leb();
      else if (kind === 1) {
        r.byte();
        r.limits();
      } else if (kind === 2) {
        const limits = r.limits();
        if (mod === module && name === field) return limits;
      } else if (kind === 3) {
        r.byte();
        r.byte();
      } else if (kind === 4) {
        r.byte();
        r.leb();
      } else throw new Error(`unknown import kind ${kind}`);
    }
    return undefined;
  }
  return undefined;
}

class Reader {
  #pos = 0;
  readonly #utf8 = new TextDecoder();
  constructor(readonly bytes: Uint8Array) {}

  get done(): boolean {
    return this.#pos >= this.bytes.length;
  }

  byte(): number {
    if (this.#pos >= this.bytes.length) throw new Error("truncated WebAssembly module");
    return this.bytes[this.#pos++]!;
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

  skip(n: number): void {
    this.#pos += n;
  }

  name(): string {
    const len = this.leb();
    const s = this.#utf8.decode(this.bytes.subarray(this.#pos, this.#pos + len));
    this.#pos += len;
    return s;
  }

  limits(): MemoryLimits {
    const flags = this.byte();
    const initial = this.leb();
    const maximum = flags & 1 ? this.leb() : undefined;
    return maximum === undefined ? { initial, shared: (flags & 2) !== 0 } : { initial, maximum, shared: (flags & 2) !== 0 };
  }
}
