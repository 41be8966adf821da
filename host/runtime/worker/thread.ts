// The worker side of the worker runtime (the code that runs inside the thread; the main
// thread's side is worker-instance.ts): instantiates the guest with its own capped memory
// and serves its lock imports synchronously over the shared channel (write the request, wake
// the main thread, wait until it answers); the local operations (last_error, config, log...) it
// serves itself. Pointer checks happen here (host-imports.ts), so a bad pointer costs no round
// trip and can never reach the host's memory.
import { parentPort, workerData } from "node:worker_threads";
import { ARG, BULK, BULK_TEXT, Channel, DATA_BYTES, OP, receiveBulk, REQ_SEQ, RESP_SEQ, SPINS_BEFORE_SLEEP, STR_LEN, TEXT_LEN } from "../channel.js";
import { describeError, envImports, GuestAbort, GuestMemory, TraceBudget } from "../guest-env.js";
import { VERSION_EXPORT } from "../guest-module.js";
import { hostImports, OpImport, type ParamSink } from "../host-imports.js";
import type { FromWorker, ToWorker, WorkerInit } from "./messages.js";
import { initializeReactor, wasiImports, WASI_MODULE } from "../wasi.js";
import { OPS, type OpSpec } from "../../../abi/ops.js";
import { ABI_VERSION } from "../../../abi/status.js";
import type { LockhostError } from "../../../kit/errors.js";
import { ExtismKernel, KernelError } from "../extism/kernel.js";
import { extismImports, replyText as textOf, type Remote } from "../extism/imports.js";
import { extismCall, nativeCall, type CallShape } from "../call-shape.js";
import { PAGE_BYTES } from "../guest-module.js";

const init = workerData as WorkerInit;
const port = parentPort!;
const ch = new Channel(init.channel);
const i32 = ch.i32;

const post = (msg: FromWorker): void => port.postMessage(msg);
const mem = new GuestMemory();
const traces = new TraceBudget((level, message) => post({ type: "trace", level, message }));
let exports: WebAssembly.Exports;
/** Empty unless the loader let the module import WASI (`wasi = true`). */
const wasi = wasiImports(init.module, mem, traces);

/** False while the module instantiates: nothing serves the channel yet, so a lock call would block forever. */
let serving = false;

/**
 * Per operation: how many of its replies in a row came back only after the guest's thread
 * had stopped checking. Spinning pays where replies are quick (the memory backend, a handle
 * lookup), even if some miss (the host's thread was busy); where none are quick (a network
 * backend, a wait) it would only burn a core the host's thread needs. So an operation whose
 * last MAX_MISSES replies all came late sleeps at once, and tries spinning again every
 * RESPIN_EVERY calls in case the backend got quicker.
 */
const misses: number[] = [];
const callsSinceSpin: number[] = [];
const MAX_MISSES = 8;
const RESPIN_EVERY = 64;

/** Checks the reply slot up to SPINS_BEFORE_SLEEP times; whether the reply came. */
function spinFor(seq: number): boolean {
  for (let spins = 0; spins < SPINS_BEFORE_SLEEP; spins++) if (Atomics.load(i32, RESP_SEQ) === seq) return true;
  return false;
}

/**
 * Sends one request to the main thread and blocks until it answers (a waiting acquire blocks
 * this worker only; the main thread serves the wait asynchronously). The operation's number
 * arguments and string bytes are already in the channel.
 */
function request(op: OpImport, sink: ChannelSink): number {
  const opIndex = op.index;
  i32[OP] = opIndex;
  i32[BULK] = sink.sendBulk() ? 1 : 0;
  const seq = (Atomics.load(i32, REQ_SEQ) + 1) | 0;
  Atomics.store(i32, REQ_SEQ, seq);
  Atomics.notify(i32, REQ_SEQ);
  const since = (callsSinceSpin[opIndex] ?? 0) + 1;
  if ((misses[opIndex] ?? 0) < MAX_MISSES || since >= RESPIN_EVERY) {
    misses[opIndex] = spinFor(seq) ? 0 : (misses[opIndex] ?? 0) + 1;
    callsSinceSpin[opIndex] = 0;
  } else {
    callsSinceSpin[opIndex] = since;
  }
  for (;;) {
    const seen = Atomics.load(i32, RESP_SEQ);
    if (seen === seq) break;
    Atomics.wait(i32, RESP_SEQ, seen);
  }
  const result = ch.f64[0]!;
  bulkReply = i32[TEXT_LEN] === BULK_TEXT ? receiveBulk(init.bulk) : undefined;
  // last_error describes the last call: a success clears it, a contended try leaves its note.
  mem.lastError = op.lastErrorAfter(result, replyText);
  return result;
}

const NO_TEXT = new Uint8Array(0);
/** The reply of the last request when it came on the port rather than in the data area. */
let bulkReply: Uint8Array | undefined;
/** The reply's bytes, valid until the next request: in the channel, or the port's message. */
const replyView = (): Uint8Array => bulkReply ?? ch.data.subarray(0, i32[TEXT_LEN]);
/** A copy of the reply's text; a plain success has none, and costs no allocation. */
const replyText = (): Uint8Array => (i32[TEXT_LEN] === 0 ? NO_TEXT : (bulkReply ?? ch.data.slice(0, i32[TEXT_LEN])));

/**
 * Copies a call's arguments into the channel: numbers into their slots, strings one after the
 * other in the data area, or, when they do not all fit it, as one message on the port.
 */
class ChannelSink implements ParamSink {
  offset = 0;
  /** The strings that did not fit the data area, and all of those before them. */
  #overflow: Uint8Array[] | undefined;
  reset(): void {
    this.offset = 0;
    this.#overflow = undefined;
  }
  number(index: number, value: number): void {
    i32[ARG + index] = value;
  }
  string(index: number, bytes: Uint8Array): void {
    i32[STR_LEN + index] = bytes.byteLength;
    if (!this.#overflow && this.offset + bytes.byteLength <= DATA_BYTES) ch.data.set(bytes, this.offset);
    else (this.#overflow ??= [ch.data.slice(0, this.offset)]).push(bytes);
    this.offset += bytes.byteLength;
  }
  /** Sends the strings on the port when they overflowed the data area; whether it did. */
  sendBulk(): boolean {
    const parts = this.#overflow;
    if (!parts) return false;
    const all = new Uint8Array(this.offset);
    let at = 0;
    for (const part of parts) {
      all.set(part, at);
      at += part.byteLength;
    }
    init.bulk.postMessage(all, [all.buffer]);
    return true;
  }
}

/**
 * One operation's import: arguments into the channel, a round trip, the reply into the output
 * buffer (and kept for last_reply when the row says so).
 */
function remoteImport(op: OpImport): (...params: number[]) => number | bigint {
  const mine = new ChannelSink();
  const keeps = op.op.keepsReply === true;
  return (...params: number[]) => {
    mine.reset();
    const bad = op.read(mem, params, mine, serving);
    if (bad < 0) return op.wasmResult(bad);
    const result = request(op, mine);
    if (keeps) mem.lastReply = result >= 0 ? replyText() : NO_TEXT;
    op.deliver(mem, params, result, replyView);
    return op.wasmResult(result);
  };
}

/** An Extism plugin's kernel (host/runtime/extism/), kept across restarts: its vars are the plugin's. */
const kernel =
  init.abi === "extism"
    ? new ExtismKernel({
        config: init.grants.config,
        logLevel: init.grants.logLevel,
        capBytes: init.memory.maximum * PAGE_BYTES,
        guestBytes: () => mem.memory.buffer.byteLength,
        lines: traces,
      })
    : undefined;

/** How an Extism plugin's kernel makes an operation of the table: through the channel, as a native import does. */
const extismSink = new ChannelSink();
const extismOps: OpImport[] = [];
const remote: Remote = (index, numbers, strings, answer) => {
  if (!serving) throw new KernelError("lock functions and HTTP are not available while the module instantiates; call them from an export");
  extismSink.reset();
  numbers.forEach((n, i) => extismSink.number(i, n));
  strings.forEach((b, i) => extismSink.string(i, b));
  const op = (extismOps[index] ??= new OpImport((OPS as readonly OpSpec[])[index]!, index));
  const result = request(op, extismSink);
  return answer({ result, bytes: replyView, text: () => textOf(replyView()) });
};

/** A fresh memory and instance, at start and after a trap, whose state cannot be trusted. */
function instantiate(): unknown {
  serving = false;
  mem.reset(init.memory);
  const modules = kernel
    ? extismImports(kernel, remote, (fn) => fn)
    : hostImports("worker", mem, { grants: init.grants, lines: traces }, init.functions, remoteImport);
  const imports = { ...modules, env: envImports(mem, traces), [WASI_MODULE]: wasi };
  exports = new WebAssembly.Instance(init.module, imports as WebAssembly.Imports).exports;
  initializeReactor(exports);
  // An Extism plugin has no version marker: its kernel imports say what it needs.
  const version = kernel ? ABI_VERSION : (exports[VERSION_EXPORT] as () => unknown)();
  serving = true;
  return version;
}

try {
  // The guest's time limit for instantiating starts now (its start function may never return).
  post({ type: "instantiating" });
  const abiVersion = instantiate();
  traces.flush();
  post({ type: "ready", abiVersion });
} catch (err) {
  traces.flush();
  post({ type: "failed", message: describeError(err) });
}

port.on("message", (msg: ToWorker) => {
  try {
    const fn = exports[msg.name] as (...args: number[]) => number | bigint | undefined;
    const shape: CallShape = kernel
      ? extismCall(kernel, init.plugin, msg.name, msg.args, msg.stringResult !== undefined)
      : nativeCall(exports, mem.memory, init.plugin, msg.name, msg.args, msg.stringResult);
    const value = fn(...shape.params);
    shape.release();
    traces.flush();
    // A result that is no string, or an Extism plugin's error, is not a trap: the instance runs on.
    try {
      post({ type: "return", id: msg.id, value: shape.finish(value) });
    } catch (err) {
      const e = err as LockhostError;
      const code = e.code === "CALL_FAILED" ? "CALL_FAILED" : "INVALID_MEMORY";
      post({
        type: "return",
        id: msg.id,
        value: undefined,
        problem: { code, message: e.message, ...(e.details && { details: e.details as Record<string, number> }) },
      });
    }
  } catch (err) {
    traces.flush();
    const memoryBytes = mem.memory.buffer.byteLength;
    const trap: FromWorker =
      err instanceof GuestAbort
        ? { type: "trap", id: msg.id, message: err.message, abort: err.info, memoryBytes }
        : { type: "trap", id: msg.id, message: describeError(err), memoryBytes };
    kernel?.reset();
    try {
      instantiate();
    } catch (again) {
      post({ type: "failed", message: `could not restart after a trap: ${describeError(again)}` });
    }
    post(trap);
  }
});
