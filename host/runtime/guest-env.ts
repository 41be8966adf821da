// What every runtime needs of a running guest's memory and gives it besides its lock calls:
// pointers checked against its memory (a bad one never reaches the host), the message of its
// last failed lock call, AssemblyScript strings decoded without trusting them, abort() with its
// file and line, and a trace budget per call. Shared by the worker and the inline runtime, so
// a guest sees the same env in both.
import { INVALID_ARGUMENT, INVALID_MEMORY, LOG_INFO } from "../../abi/status.js";

/** Trace lines a guest may log per call (or per instantiation); the rest are counted, not sent. */
export const MAX_TRACES_PER_CALL = 100;
/** The longest guest string (trace or abort message) the host decodes, in UTF-16 units. */
const MAX_GUEST_STRING = 2048;

/** One module of a guest's imports (`lock` or `env`), by import name. */
export type ImportModule = Record<string, unknown>;

const utf8 = new TextEncoder();
const NOTHING = new Uint8Array(0);

/** An AssemblyScript abort(), decoded. */
export interface AbortInfo {
  readonly message: string;
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** Thrown by env.abort so the runtime can report the guest's file and line. */
export class GuestAbort extends Error {
  constructor(readonly info: AbortInfo) {
    super(`abort: ${info.message} at ${info.file}:${info.line}:${info.column}`);
  }
}

/** One guest instance's memory, as its imports see it. */
export class GuestMemory {
  /** Replaced with each (re)instantiation. */
  memory!: WebAssembly.Memory;
  /** UTF-8 message of the most recent failed lock call, served by last_error without a round trip. */
  lastError: Uint8Array = NOTHING;
  /** The reply of the last call whose row keeps it (OpSpec.keepsReply), served by last_reply. */
  lastReply: Uint8Array = NOTHING;

  /** A fresh memory of `limits` pages, as at start or after a trap (whose state cannot be trusted). */
  reset(limits: { readonly initial: number; readonly maximum: number }): WebAssembly.Memory {
    this.memory = new WebAssembly.Memory({ initial: limits.initial, maximum: limits.maximum });
    this.lastError = NOTHING;
    this.lastReply = NOTHING;
    return this.memory;
  }

  inBounds(ptr: number, len: number): boolean {
    return (ptr >>> 0) + (len >>> 0) <= this.memory.buffer.byteLength;
  }

  /** Records `message` for last_error and returns -code. */
  fail(code: number, message: string): number {
    this.lastError = utf8.encode(message);
    return -code;
  }

  outOfBounds(what: string, ptr: number, len: number): number {
    return this.fail(INVALID_MEMORY, `${what} (ptr ${ptr >>> 0}, len ${len >>> 0}) lies outside guest memory (${this.memory.buffer.byteLength} bytes)`);
  }

  /** The (-code) for a (ptr, len) argument outside memory or over `maxBytes` (unbounded when undefined), else 0. */
  checkBytes(what: string, ptr: number, len: number, maxBytes: number | undefined, text = false): number {
    if (!this.inBounds(ptr, len)) return this.outOfBounds(what, ptr, len);
    if (maxBytes !== undefined && len >>> 0 > maxBytes)
      return this.fail(INVALID_ARGUMENT, `${what} is ${len >>> 0} bytes${text ? " of UTF-8" : ""}; the maximum is ${maxBytes}`);
    return 0;
  }

  /** Copies `bytes` to guest memory at `ptr` (the caller checked the bounds). */
  write(ptr: number, bytes: Uint8Array): void {
    new Uint8Array(this.memory.buffer).set(bytes, ptr >>> 0);
  }

  /** Decodes an AssemblyScript string (UTF-16, byte length at ptr - 4) without trusting the pointer. */
  asString(ptr: number): string {
    const p = ptr >>> 0;
    const buf = this.memory.buffer;
    if (p === 0) return "null";
    if (p < 4 || p > buf.byteLength) return `<string at ${p} outside memory>`;
    const bytes = new DataView(buf).getUint32(p - 4, true);
    if (p + bytes > buf.byteLength) return `<string at ${p} outside memory>`;
    const kept = Math.min(bytes & ~1, MAX_GUEST_STRING * 2);
    return Buffer.from(buf, p, kept).toString("utf16le") + (kept < bytes ? "…" : "");
  }
}

/** Where a guest's log lines go: `level` is one of abi/status.ts's LOG_* levels. */
export type LineSink = (level: number, message: string) => void;

/** A guest's log lines (trace and log.write) within one call: at most MAX_TRACES_PER_CALL reach `emit`. */
export class TraceBudget {
  #traces = 0;
  #dropped = 0;
  readonly #beforeFlush: (() => void)[] = [];
  constructor(readonly emit: LineSink) {}

  line(message: () => string, level: number = LOG_INFO): void {
    // A guest tracing in a loop must not flood the host's event loop and log.
    if (++this.#traces > MAX_TRACES_PER_CALL) {
      this.#dropped++;
      return;
    }
    this.emit(level, message());
  }

  /** Runs `fn` at each flush, before the budget is closed (WASI's unfinished output lines). */
  onFlush(fn: () => void): void {
    this.#beforeFlush.push(fn);
  }

  /** Ends a call's budget: says how many lines were dropped, then starts afresh. */
  flush(): void {
    for (const fn of this.#beforeFlush) fn();
    if (this.#dropped > 0) this.emit(LOG_INFO, `(${this.#dropped} more trace lines dropped: at most ${MAX_TRACES_PER_CALL} per call)`);
    this.#traces = 0;
    this.#dropped = 0;
  }
}

/** The `env` import module: the guest's memory, abort, trace, and the clocks and seed AssemblyScript asks for. */
export function envImports(mem: GuestMemory, traces: TraceBudget): ImportModule {
  return {
    memory: mem.memory,
    abort: (msg: number, file: number, line: number, column: number) => {
      throw new GuestAbort({ message: mem.asString(msg), file: mem.asString(file), line, column });
    },
    trace: (msg: number, n: number, ...args: number[]) => traces.line(() => `${mem.asString(msg)}${n > 0 ? " " + args.slice(0, n).join(", ") : ""}`),
    seed: () => Math.random() * Number.MAX_SAFE_INTEGER,
    "Date.now": () => Date.now(),
    "performance.now": () => performance.now(),
  };
}

/** A thrown value as one line: the class and the message. */
export function describeError(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
}
