// The worker side of the worker runtime: instantiates the guest with its own capped memory
// and serves its lock imports synchronously over the shared channel (write the request, wake
// the main thread, block in Atomics.wait until it answers). Pointer checks happen here, so a
// bad pointer costs no round trip and can never reach the host's memory.
import { parentPort, workerData } from "node:worker_threads";
import { INVALID_ARGUMENT, INVALID_MEMORY } from "../../../abi/status.js";
import { keyLengthError } from "../../locking/validate.js";
import { isString, OPS, PARAMS_OF, type OpSpec } from "../../../abi/ops.js";
import { ARG, Channel, OP, REQ_SEQ, RESP_SEQ, STR_LEN, TEXT_LEN } from "../channel.js";
import { VERSION_EXPORT } from "../guest-module.js";
import type { AbortInfo, FromWorker, ToWorker, WorkerInit } from "./messages.js";

const init = workerData as WorkerInit;
const port = parentPort!;
const ch = new Channel(init.channel);
const i32 = ch.i32;
const utf8 = new TextEncoder();

let memory: WebAssembly.Memory;
let exports: WebAssembly.Exports;
/** UTF-8 message of the most recent failed lock call, served by last_error without a round trip. */
let lastError = new Uint8Array(0);

const post = (msg: FromWorker): void => port.postMessage(msg);

/** Trace lines a guest may log per call (or per instantiation); the rest are counted, not sent. */
const MAX_TRACES_PER_CALL = 100;
/** The longest guest string (trace or abort message) the host decodes, in UTF-16 units. */
const MAX_GUEST_STRING = 2048;
let traces = 0;
let dropped = 0;

/** Ends a call's trace budget: says how many lines were dropped, then starts afresh. */
function flushTraceBudget(): void {
  if (dropped > 0) post({ type: "trace", message: `(${dropped} more trace lines dropped: at most ${MAX_TRACES_PER_CALL} per call)` });
  traces = 0;
  dropped = 0;
}

/** Thrown by env.abort so the call handler can report file and line. */
class GuestAbort extends Error {
  constructor(readonly info: AbortInfo) {
    super(`abort: ${info.message} at ${info.file}:${info.line}:${info.column}`);
  }
}

function inBounds(ptr: number, len: number): boolean {
  return (ptr >>> 0) + (len >>> 0) <= memory.buffer.byteLength;
}

function fail(code: number, message: string): number {
  lastError = utf8.encode(message);
  return -code;
}

function outOfBounds(what: string, ptr: number, len: number): number {
  return fail(
    INVALID_MEMORY,
    `${what} (ptr ${ptr >>> 0}, len ${len >>> 0}) lies outside guest memory (${memory.buffer.byteLength} bytes)`,
  );
}

/** False while the module instantiates: nothing serves the channel yet, so a lock call would block forever. */
let serving = false;

/**
 * Sends one request to the main thread and blocks until it answers (a waiting acquire blocks
 * this worker only; the main thread serves the wait asynchronously). The operation's number
 * arguments and string bytes are already in the channel.
 */
function request(opIndex: number): number {
  if (!serving) {
    return fail(INVALID_ARGUMENT, "lock calls are not available while the module instantiates (top-level code or start function); call them from an export");
  }
  i32[OP] = opIndex;
  const seq = (Atomics.load(i32, REQ_SEQ) + 1) | 0;
  Atomics.store(i32, REQ_SEQ, seq);
  Atomics.notify(i32, REQ_SEQ);
  for (;;) {
    const seen = Atomics.load(i32, RESP_SEQ);
    if (seen === seq) break;
    Atomics.wait(i32, RESP_SEQ, seen);
  }
  const result = ch.f64[0]!;
  if (result < 0) lastError = ch.data.slice(0, i32[TEXT_LEN]);
  return result;
}

/** The (-code) for a string argument outside memory or over MAX_KEY_BYTES (more than the channel carries), else 0. */
function checkString(what: string, ptr: number, len: number): number {
  if (!inBounds(ptr, len)) return outOfBounds(what, ptr, len);
  const tooLong = keyLengthError(len >>> 0, what);
  return tooLong ? fail(tooLong.status, tooLong.message) : 0;
}

/**
 * The import of one operation of the table, read off its row: pointers are checked against
 * guest memory here, so a bad one costs no round trip and never reaches the host; strings are
 * copied into the channel, numbers into their slots, and an output buffer gets the reply's
 * text when it fits (ABI: else nothing is written).
 */
function remoteImport(op: OpSpec, opIndex: number): (...params: number[]) => number | bigint {
  const out = op.args.indexOf("out");
  // Where the output buffer's (ptr, cap) stand among the wasm params, if the operation has one.
  const bufAt = out < 0 ? -1 : op.args.slice(0, out).reduce((n, kind) => n + PARAMS_OF[kind].length, 0);
  const call = (...params: number[]): number => {
    // The output buffer is checked first: a call that could not deliver its answer does nothing.
    let p = 0;
    if (bufAt >= 0 && !inBounds(params[bufAt]!, params[bufAt + 1]!)) return outOfBounds("buffer", params[bufAt]!, params[bufAt + 1]!);
    let numbers = 0;
    let strings = 0;
    let offset = 0;
    for (const kind of op.args) {
      if (kind === "out") {
        p += 2;
      } else if (isString(kind)) {
        const ptr = params[p++]!;
        const len = params[p++]!;
        const bad = checkString(kind, ptr, len);
        if (bad < 0) return bad;
        if (len > 0) ch.data.set(new Uint8Array(memory.buffer, ptr >>> 0, len >>> 0), offset);
        i32[STR_LEN + strings++] = len;
        offset += len >>> 0;
      } else {
        i32[ARG + numbers++] = params[p++]!;
      }
    }
    const result = request(opIndex);
    if (bufAt >= 0 && result >= 0 && result <= params[bufAt + 1]! >>> 0) {
      new Uint8Array(memory.buffer).set(ch.data.subarray(0, result), params[bufAt]! >>> 0);
    }
    return result;
  };
  return op.result === "i64" ? (...params: number[]) => BigInt(call(...params)) : call;
}

/** Operations served here without a round trip (OpSpec.local), by name. */
const LOCAL_IMPORTS: Readonly<Record<string, (...params: number[]) => number>> = {
  last_error: (buf: number, cap: number) => {
    if (!inBounds(buf, cap)) return outOfBounds("buffer", buf, cap);
    if (lastError.byteLength <= cap >>> 0) new Uint8Array(memory.buffer).set(lastError, buf >>> 0);
    return lastError.byteLength;
  },
};

/** The `lock` import module, one function per row of the operation table. */
function lockImports(): Record<string, (...params: number[]) => number | bigint> {
  const module: Record<string, (...params: number[]) => number | bigint> = {};
  (OPS as readonly OpSpec[]).forEach((op, i) => {
    if (!op.runtimes.includes("worker")) return;
    const local = LOCAL_IMPORTS[op.name];
    if (op.local && !local) throw new Error(`abi/ops.ts: ${op.name} is local, but the worker runtime does not serve it`);
    module[op.name] = local ?? remoteImport(op, i);
  });
  return module;
}

/** Decodes an AssemblyScript string (UTF-16, byte length at ptr - 4) without trusting the pointer. */
function asString(ptr: number): string {
  const p = ptr >>> 0;
  const buf = memory.buffer;
  if (p === 0) return "null";
  if (p < 4 || p > buf.byteLength) return `<string at ${p} outside memory>`;
  const bytes = new DataView(buf).getUint32(p - 4, true);
  if (p + bytes > buf.byteLength) return `<string at ${p} outside memory>`;
  const kept = Math.min(bytes & ~1, MAX_GUEST_STRING * 2);
  return Buffer.from(buf, p, kept).toString("utf16le") + (kept < bytes ? "…" : "");
}

function imports(): WebAssembly.Imports {
  return {
    lock: lockImports(),
    env: {
      memory,
      abort: (msg: number, file: number, line: number, column: number) => {
        throw new GuestAbort({ message: asString(msg), file: asString(file), line, column });
      },
      trace: (msg: number, n: number, ...args: number[]) => {
        // A guest tracing in a loop must not flood the host's event loop and log.
        if (++traces > MAX_TRACES_PER_CALL) {
          dropped++;
          return;
        }
        post({ type: "trace", message: `${asString(msg)}${n > 0 ? " " + args.slice(0, n).join(", ") : ""}` });
      },
      seed: () => Math.random() * Number.MAX_SAFE_INTEGER,
      "Date.now": () => Date.now(),
      "performance.now": () => performance.now(),
    },
  };
}

/** A fresh memory and instance: at start and after a trap, whose state cannot be trusted. */
function instantiate(): unknown {
  serving = false;
  memory = new WebAssembly.Memory({ initial: init.memory.initial, maximum: init.memory.maximum });
  lastError = new Uint8Array(0);
  exports = new WebAssembly.Instance(init.module, imports()).exports;
  const version = (exports[VERSION_EXPORT] as () => unknown)();
  serving = true;
  return version;
}

try {
  // The guest's time limit for instantiating starts now (its start function may never return).
  post({ type: "instantiating" });
  const abiVersion = instantiate();
  flushTraceBudget();
  post({ type: "ready", abiVersion });
} catch (err) {
  flushTraceBudget();
  post({ type: "failed", message: describe(err) });
}

port.on("message", (msg: ToWorker) => {
  try {
    const fn = exports[msg.name] as (...args: number[]) => number | bigint | undefined;
    const value = fn(...msg.args);
    flushTraceBudget();
    post({ type: "return", id: msg.id, value });
  } catch (err) {
    flushTraceBudget();
    const trap: FromWorker = err instanceof GuestAbort
      ? { type: "trap", id: msg.id, message: err.message, abort: err.info }
      : { type: "trap", id: msg.id, message: describe(err) };
    try {
      instantiate();
    } catch (again) {
      post({ type: "failed", message: `could not restart after a trap: ${describe(again)}` });
    }
    post(trap);
  }
});

function describe(err: unknown): string {
  return err instanceof Error ? `${err.constructor.name}: ${err.message}` : String(err);
}
