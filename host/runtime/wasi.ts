// WASI basics for plugins that opt in (`wasi = true`): enough of wasi_snapshot_preview1 for a
// guest built against wasi-libc (C) or Rust's wasm32-wasi std to load and run. Its stdout and
// stderr go to the plugin's log, line by line; it has clocks and random bytes; args and
// environment are empty; proc_exit ends the call as a trap. Every other WASI function the
// module imports answers ENOSYS and the call goes on: no file system (no preopened directory),
// no sockets. Used by both
// runtimes, inside the instance's own thread.
import { randomFillSync } from "node:crypto";
import { LOG_WARN } from "../../abi/status.js";
import type { GuestMemory, ImportModule, TraceBudget } from "./guest-env.js";

/** The WASI import module this host stubs. */
export const WASI_MODULE = "wasi_snapshot_preview1";

/** The plugin key that lets a guest import from WASI_MODULE. */
export const WASI_KEY = "wasi";

// WASI errno values (wasi_snapshot_preview1).
const SUCCESS = 0;
const EBADF = 8;
const EFAULT = 21;
const EINVAL = 28;
/** What every WASI function outside the stubbed set answers. */
export const ENOSYS = 52;

/** A guest's stdout line, at most this many bytes before it is cut into another. */
const MAX_LINE_BYTES = 4096;

/** Thrown by proc_exit: the call ends as a trap that says the exit code. */
export class WasiExit extends Error {
  constructor(readonly code: number) {
    super(`the guest called proc_exit(${code})`);
  }
}

/** Whether a module imports anything from WASI (the loader then requires `wasi = true`). */
export function importsWasi(module: WebAssembly.Module): boolean {
  return WebAssembly.Module.imports(module).some((i) => i.module === WASI_MODULE);
}

/** A guest's output on one file descriptor, cut into lines for the log. */
class LineBuffer {
  #pending = "";
  readonly #decoder = new TextDecoder();
  constructor(readonly emit: (line: string) => void) {}

  write(bytes: Uint8Array): void {
    const lines = (this.#pending + this.#decoder.decode(bytes, { stream: true })).split("\n");
    this.#pending = lines.pop()!;
    for (const line of lines) this.emit(line);
    if (this.#pending.length > MAX_LINE_BYTES) this.flush();
  }

  /** Logs what is left of an unfinished line (at the end of each call). */
  flush(): void {
    if (this.#pending) this.emit(this.#pending);
    this.#pending = "";
  }
}

/**
 * The WASI import module for `module`: the stubbed functions it imports, and ENOSYS for the
 * other WASI functions it imports. Output lines go through `traces` (the per-call budget of
 * trace lines), stderr's at warn level; they are flushed with the budget at the end of a call.
 */
export function wasiImports(module: WebAssembly.Module, mem: GuestMemory, traces: TraceBudget): ImportModule {
  const out = [new LineBuffer((line) => traces.line(() => line)), new LineBuffer((line) => traces.line(() => line, LOG_WARN))];
  traces.onFlush(() => out.forEach((b) => b.flush()));
  const view = (): DataView => new DataView(mem.memory.buffer);
  const provided: ImportModule = {
    fd_write: (fd: number, iovs: number, count: number, written: number): number => {
      const sink = out[fd - 1];
      if (!sink) return EBADF;
      if (!mem.inBounds(iovs, count * 8) || !mem.inBounds(written, 4)) return EFAULT;
      let total = 0;
      for (let i = 0; i < count; i++) {
        const ptr = view().getUint32(iovs + i * 8, true);
        const len = view().getUint32(iovs + i * 8 + 4, true);
        if (!mem.inBounds(ptr, len)) return EFAULT;
        sink.write(new Uint8Array(mem.memory.buffer, ptr, len));
        total += len;
      }
      view().setUint32(written, total, true);
      return SUCCESS;
    },
    clock_time_get: (clock: number, _precision: bigint, at: number): number => {
      if (!mem.inBounds(at, 8)) return EFAULT;
      // 0: realtime; 1, 2, 3: monotonic, process and thread CPU time (a monotonic clock will do).
      if (clock < 0 || clock > 3) return EINVAL;
      const ns = clock === 0 ? BigInt(Date.now()) * 1_000_000n : process.hrtime.bigint();
      view().setBigUint64(at, ns, true);
      return SUCCESS;
    },
    clock_res_get: (clock: number, at: number): number => {
      if (!mem.inBounds(at, 8)) return EFAULT;
      if (clock < 0 || clock > 3) return EINVAL;
      view().setBigUint64(at, clock === 0 ? 1_000_000n : 1_000n, true);
      return SUCCESS;
    },
    random_get: (ptr: number, len: number): number => {
      if (!mem.inBounds(ptr, len)) return EFAULT;
      randomFillSync(new Uint8Array(mem.memory.buffer, ptr, len));
      return SUCCESS;
    },
    proc_exit: (code: number): never => {
      throw new WasiExit(code);
    },
    // No arguments, no environment: two zero counts.
    args_sizes_get: (count: number, size: number): number => zeros(mem, count, size),
    environ_sizes_get: (count: number, size: number): number => zeros(mem, count, size),
    args_get: (): number => SUCCESS,
    environ_get: (): number => SUCCESS,
    // No preopened directories: wasi-libc's start-up walks fds from 3 until EBADF, and exits
    // when it meets any other answer (ENOSYS included).
    fd_prestat_get: (): number => EBADF,
  };
  const imports: ImportModule = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === WASI_MODULE && imp.kind === "function") imports[imp.name] = provided[imp.name] ?? (() => ENOSYS);
  }
  return imports;
}

/**
 * Runs a WASI reactor's `_initialize` export (wasi-libc's and Rust std's constructors) once per
 * instantiation, before any other export, as the reactor ABI asks of its host.
 */
export function initializeReactor(exports: WebAssembly.Exports): void {
  const init = exports._initialize;
  if (typeof init === "function") (init as () => void)();
}

function zeros(mem: GuestMemory, a: number, b: number): number {
  if (!mem.inBounds(a, 4) || !mem.inBounds(b, 4)) return EFAULT;
  const view = new DataView(mem.memory.buffer);
  view.setUint32(a, 0, true);
  view.setUint32(b, 0, true);
  return SUCCESS;
}
