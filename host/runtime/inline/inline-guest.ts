// The inline runtime: the guest runs on the host's own thread, and each lock import is a
// JSPI-suspending function (WebAssembly.Suspending) that calls the lock code directly; the
// guest's export runs under WebAssembly.promising, so while a lock call awaits the backend the
// guest's stack is parked and the host's event loop runs on. No thread, no channel, no copy
// of the arguments: a lock call costs about a function call and a promise.
//
// What it cannot do, by construction: stop a guest that never returns. A call has no time
// limit (config load refuses call_timeout_ms with inline), and a guest that spins holds the
// host's thread, and with it every renewal. Use the worker runtime for guests you do not trust.
import { LockhostError } from "../../../kit/errors.js";
import { describeError, envImports, GuestAbort, GuestMemory, TraceBudget, type ImportModule } from "../guest-env.js";
import { logLine } from "../guest-log.js";
import type { GuestValue } from "../guest-instance.js";
import type { AbiReply } from "../guest-locks.js";
import { checkAbiVersion, PAGE_BYTES, VERSION_EXPORT } from "../guest-module.js";
import { GuestShell, type GuestShellOptions } from "../guest-shell.js";
import { jspiAvailable, jspiRequirement } from "../jspi.js";
import { functionIndex, hostImports, type OpImport, type ParamSink } from "../host-imports.js";
import { runOp, type CallContext } from "../lock-ops.js";
import type { GuestArg } from "../guest-strings.js";
import type { StringResultForm } from "../string-results.js";
import { initializeReactor, wasiImports, WASI_MODULE } from "../wasi.js";
import { OPS, type OpSpec } from "../../../abi/ops.js";
import { ABI_VERSION } from "../../../abi/status.js";
import { ExtismKernel } from "../extism/kernel.js";
import { extismImports, replyText, type Remote, type RemoteReply } from "../extism/imports.js";
import { extismCall, nativeCall, type CallShape } from "../call-shape.js";

/** Options of an inline guest instance: the runtime-neutral ones (it has no time limit). */
export type InlineGuestOptions = GuestShellOptions;

/** The JSPI part of the WebAssembly namespace (not in every TypeScript lib yet). */
interface Jspi {
  readonly Suspending: new (fn: (...args: never[]) => unknown) => object;
  promising(fn: unknown): (...args: number[]) => Promise<GuestValue>;
}
const jspi = WebAssembly as unknown as Jspi;

const utf8 = new TextEncoder();
const NO_TEXT = new Uint8Array(0);
/** An inline call never has a wait limit of its own: it has no time limit to leave room for. */
const NO_LIMIT: CallContext = { waitLimit: () => undefined };
/** What a lock call of an instance that was replaced or closed gets: it never resumes. */
const NEVER = new Promise<never>(() => undefined);

/** The call running now: what close() fails. */
interface Running {
  readonly name: string;
  readonly reject: (err: LockhostError) => void;
}

/** One instantiation of the guest: replaced whole after a trap. */
interface Instance {
  readonly exports: WebAssembly.Exports;
  /** Exports wrapped by WebAssembly.promising, made on first use. */
  readonly promising: Map<string, (...args: number[]) => Promise<GuestValue>>;
}

/** A guest instance on the host's thread, its lock calls suspended through JSPI. */
export class InlineGuest extends GuestShell {
  readonly #mem = new GuestMemory();
  readonly #traces: TraceBudget;
  /** Built once: the functions read the current memory through #mem. */
  readonly #imports: Record<string, ImportModule>;
  /** Empty unless the loader let the module import WASI (`wasi = true`). */
  readonly #wasi: ImportModule;
  /** An Extism plugin's kernel (host/runtime/extism/); undefined for a lockhost guest. */
  readonly #kernel: ExtismKernel | undefined;
  /** Undefined after an instantiation failed; the next call tries again. */
  #instance: Instance | undefined;
  /**
   * Bumped when the instance is replaced or closed: a lock call that completes for an older
   * one never resumes its guest, whose stack is then simply dropped.
   */
  #generation = 0;
  /** False while the module instantiates (its start function cannot suspend). */
  #serving = false;
  #running: Running | undefined;

  private constructor(opts: InlineGuestOptions) {
    super(opts);
    this.#traces = new TraceBudget((level, message) => logLine(this.log, level, message));
    if (this.module.abi === "extism") {
      this.#kernel = new ExtismKernel({
        config: this.grants.config,
        logLevel: this.grants.logLevel,
        capBytes: this.module.memory.maximum * PAGE_BYTES,
        guestBytes: () => this.#mem.memory.buffer.byteLength,
        lines: this.#traces,
      });
      this.#imports = extismImports(this.#kernel, this.#remote, (fn) => new jspi.Suspending(fn));
    } else {
      const firstFunction = functionIndex(0);
      this.#imports = hostImports("inline", this.#mem, { grants: this.grants, lines: this.#traces }, this.module.functions, (op) => {
        // One per operation: calls into an instance are serialized, and runOp reads them at once.
        const args = new Args();
        const ctx: CallContext = op.index >= firstFunction ? { ...NO_LIMIT, fn: op.index - firstFunction } : NO_LIMIT;
        return new jspi.Suspending((...params: number[]) => this.#call(op, args, params, ctx));
      });
    }
    this.#wasi = wasiImports(opts.module.module, this.#mem, this.#traces);
  }

  /**
   * Instantiates the guest on this thread and checks its ABI version; rejects with
   * ABI_UNSUPPORTED, or RUNTIME_UNAVAILABLE where this Node has no JSPI.
   */
  static async start(opts: InlineGuestOptions): Promise<InlineGuest> {
    if (!jspiAvailable()) {
      throw new LockhostError("RUNTIME_UNAVAILABLE", `plugin ${opts.module.plugin}: the inline runtime is not available: ${jspiRequirement()}`);
    }
    const guest = new InlineGuest(opts);
    try {
      checkAbiVersion(guest.module, guest.#instantiate());
    } catch (err) {
      await guest.close();
      throw err instanceof LockhostError
        ? err
        : new LockhostError("ABI_UNSUPPORTED", `plugin ${guest.plugin} (${guest.module.path}) failed to instantiate: ${guest.#explain(err)}`, { cause: err });
    }
    return guest;
  }

  /** A fresh memory and instance, at start and after a trap; returns the guest's ABI version. */
  #instantiate(): unknown {
    this.#instance = undefined;
    this.#serving = false;
    this.#mem.reset(this.module.memory);
    try {
      const imports = { ...this.#imports, env: envImports(this.#mem, this.#traces), [WASI_MODULE]: this.#wasi };
      const { exports } = new WebAssembly.Instance(this.module.module, imports as WebAssembly.Imports);
      initializeReactor(exports);
      // An Extism plugin has no version marker: its kernel imports say what it needs.
      const version = this.#kernel ? ABI_VERSION : (exports[VERSION_EXPORT] as () => unknown)();
      this.#instance = { exports, promising: new Map() };
      this.#serving = true;
      return version;
    } finally {
      this.#traces.flush();
    }
  }

  /** Why an instantiation failed, in the guest author's terms. */
  #explain(err: unknown): string {
    // A lock import suspends, which needs a promising caller; a start function has none.
    if (err instanceof Error && err.constructor.name === "SuspendError") {
      return (
        "it calls a lock function while it instantiates (top-level code or start function), which the inline runtime cannot serve; call lock " +
        "functions from an export"
      );
    }
    return describeError(err);
  }

  protected async live(): Promise<void> {
    if (this.closed) throw this.closedError();
    if (this.#instance) return;
    try {
      this.#instantiate();
    } catch (err) {
      throw new LockhostError("GUEST_CRASHED", `plugin ${this.plugin} could not be restarted: ${this.#explain(err)}`, { cause: err });
    }
  }

  protected invoke(name: string, args: readonly GuestArg[], stringResult?: StringResultForm): Promise<GuestValue | string> {
    const instance = this.#instance!;
    let shape: CallShape;
    try {
      // The allocator runs before the call, unsuspended: it never makes a lock call.
      shape = this.#kernel
        ? extismCall(this.#kernel, this.plugin, name, args, stringResult !== undefined)
        : nativeCall(instance.exports, this.#mem.memory, this.plugin, name, args, stringResult);
    } catch (err) {
      this.#traces.flush();
      return this.#trap(name, err).then((e) => Promise.reject(e));
    }
    let fn = instance.promising.get(name);
    if (!fn) {
      fn = jspi.promising(instance.exports[name]);
      instance.promising.set(name, fn);
    }
    const generation = this.#generation;
    const call = fn(...shape.params);
    return new Promise<GuestValue | string>((resolve, reject) => {
      this.#running = { name, reject };
      call.then(
        async (value) => {
          this.#traces.flush();
          if (generation !== this.#generation) return; // closed meanwhile: already failed
          this.#running = undefined;
          try {
            shape.release();
          } catch (err) {
            reject(await this.#trap(name, err));
            return;
          }
          await this.locks.endCall();
          // A result that is no string, or an Extism plugin's error, is not a trap: the instance runs on.
          try {
            resolve(shape.finish(value));
          } catch (err) {
            reject(err);
          }
        },
        async (err: unknown) => {
          this.#traces.flush();
          if (generation !== this.#generation) return;
          this.#running = undefined;
          reject(await this.#trap(name, err));
        },
      );
    });
  }

  /** How an Extism plugin's kernel makes an operation of the table: as a native guest's import does (runOp), never resuming a replaced instance. */
  readonly #remote: Remote = (index, numbers, strings, answer) => {
    const generation = this.#generation;
    return runOp(
      this.calls,
      (OPS as readonly OpSpec[])[index]!,
      (i) => numbers[i]!,
      (i) => strings[i]!,
      NO_LIMIT,
      (reply) => (generation === this.#generation ? answer(new InlineReply(reply)) : NEVER),
    );
  };

  /** A trapped export: its instance cannot be trusted, so a fresh one replaces it; its locks are freed. */
  async #trap(name: string, err: unknown): Promise<LockhostError> {
    this.#generation++;
    const abort = err instanceof GuestAbort ? err.info : undefined;
    const message = abort ? (err as GuestAbort).message : describeError(err);
    const memoryBytes = this.#mem.memory.buffer.byteLength;
    this.#kernel?.reset();
    try {
      this.#instantiate();
    } catch (again) {
      this.log.error({ err: this.#explain(again) }, "guest restart after a trap failed; the next call tries again");
    }
    return this.trapped(name, message, abort, memoryBytes);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.#generation++;
    this.#instance = undefined;
    this.locks.invalidate("its plugin was closed");
    const running = this.#running;
    this.#running = undefined;
    running?.reject(this.closedError(`during ${running.name}`));
    await Promise.all([this.locks.reset("its plugin was closed"), this.calls.caps.close()]);
  }

  /** One lock call: arguments read off guest memory, the lock code called, the reply written back. */
  #call(op: OpImport, args: Args, params: number[], ctx: CallContext): number | bigint | Promise<number | bigint> {
    const bad = op.read(this.#mem, params, args, this.#serving);
    if (bad < 0) return op.wasmResult(bad);
    const generation = this.#generation;
    // Strings are decoded before runOp returns: the views into guest memory are read at once.
    // A reply that comes after the instance was replaced or closed never resumes its guest.
    return runOp(this.calls, op.op, args.numberAt, args.bytesAt, ctx, (r) => (generation === this.#generation ? this.#answer(op, params, r) : NEVER));
  }

  #answer(op: OpImport, params: number[], reply: AbiReply): number | bigint {
    // last_error describes the last call: a success clears it, a contended try leaves its note.
    this.#mem.lastError = op.lastErrorAfter(reply.result, () => (reply.text ? utf8.encode(reply.text) : NO_TEXT));
    const out = (): Uint8Array => reply.bytes ?? utf8.encode(reply.text ?? "");
    if (op.op.keepsReply) this.#mem.lastReply = reply.result >= 0 ? out() : NO_TEXT;
    if (reply.result >= 0) op.deliver(this.#mem, params, reply.result, out);
    return op.wasmResult(reply.result);
  }
}

/** A reply as an Extism plugin's kernel reads it. */
class InlineReply implements RemoteReply {
  readonly result: number;
  constructor(readonly reply: AbiReply) {
    this.result = reply.result;
  }
  bytes(): Uint8Array {
    return this.reply.bytes ?? (this.reply.text ? utf8.encode(this.reply.text) : NO_TEXT);
  }
  text(): string | undefined {
    return this.reply.text ?? (this.reply.bytes ? replyText(this.reply.bytes) : undefined);
  }
}

/** One call's arguments, as the import reads them off guest memory and runOp reads them back. */
class Args implements ParamSink {
  readonly #numbers: number[] = [];
  readonly #strings: Uint8Array[] = [];
  number(index: number, value: number): void {
    this.#numbers[index] = value;
  }
  string(index: number, bytes: Uint8Array): void {
    this.#strings[index] = bytes;
  }
  readonly numberAt = (index: number): number => this.#numbers[index]!;
  readonly bytesAt = (index: number): Uint8Array => this.#strings[index]!;
}
