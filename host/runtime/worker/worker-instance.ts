// The main-thread side of the worker runtime (what runs inside the thread is thread.ts): one worker thread per guest instance, a time
// limit per call and per (re)start, restart on trap / time limit / crash, and the serving end
// of the channel. Queueing, lost-lock notifications and trap reports are the GuestShell's.
import { MessageChannel, Worker, type MessagePort } from "node:worker_threads";
import { INTERNAL } from "../../../abi/status.js";
import { LockhostError } from "../../../kit/errors.js";
import { FUNCTION_OP, OPS, type OpSpec } from "../../../abi/ops.js";
import { ARG, BULK, BULK_TEXT, Channel, DATA_BYTES, OP, receiveBulk, REQ_SEQ, RESP_SEQ, STR_LEN, TEXT_LEN } from "../channel.js";
import { runOp } from "../lock-ops.js";
import type { CallContext } from "../call-context.js";
import { functionIndex } from "../host-imports.js";
import { logLine } from "../guest-log.js";
import type { GuestValue } from "../guest-instance.js";
import { GuestShell, type GuestShellOptions } from "../guest-shell.js";
import type { AbiReply, WaitLimit } from "../guest-locks.js";
import { checkAbiVersion } from "../guest-module.js";
import type { FromWorker, ToWorker, WorkerInit } from "./messages.js";
import type { GuestArg } from "../guest-strings.js";
import type { StringResultForm } from "../string-results.js";
import type { RestartReason } from "../guest-recorder.js";

/** Options of a worker-isolated guest instance. */
export interface WorkerGuestOptions extends GuestShellOptions {
  /** A call, or an instantiation, running longer is stopped by terminating the worker. */
  readonly callTimeoutMs: number;
}

interface PendingCall {
  readonly id: number;
  readonly name: string;
  /** performance.now() when the call was sent: its time limit counts from here. */
  readonly startedAt: number;
  readonly resolve: (value: GuestValue | string) => void;
  readonly reject: (err: LockhostError) => void;
  readonly timer: NodeJS.Timeout;
}

/** One worker thread running one guest instance; replaced whole when it must restart. */
interface Generation {
  readonly worker: Worker;
  readonly channel: Channel;
  /** The main thread's end of the port for what does not fit the channel. */
  readonly bulk: MessagePort;
  /** Each call's context, made once per generation: the lock operations' at 0, host function i's at i + 1. */
  readonly contexts: CallContext[];
  alive: boolean;
  pending?: PendingCall;
}

const encoder = new TextEncoder();
/** runOp's answer when the reply itself is wanted. */
const asIs = (reply: AbiReply): AbiReply => reply;
/** An empty argument (a host function called with no input): no copy to make. */
const NO_BYTES = new Uint8Array(0);

/** What a waiting lock.acquire leaves of the call's time limit for the guest to return: 10%, 20 ms to 1 s. */
function returnMarginMs(callTimeoutMs: number): number {
  return Math.min(1_000, Math.max(20, callTimeoutMs / 10));
}

/**
 * How a guest's worker starts: its entry is the thread module next to this one (what runs
 * inside the worker), in the build (thread.js) and in the source tree (thread.ts) alike. From source (tests
 * under vitest) the worker first registers tsx, a TypeScript loader (a dev dependency), so it
 * runs that very file rather than an earlier build of it.
 */
function workerStart(): { readonly entry: URL | string; readonly eval: boolean } {
  const here = import.meta.url;
  if (!here.endsWith(".ts")) return { entry: new URL("./thread.js", here), eval: false };
  const tsx = JSON.stringify(import.meta.resolve("tsx/esm/api"));
  const entry = JSON.stringify(new URL("./thread.ts", here).href);
  return { entry: `import(${tsx}).then((tsx) => { tsx.register(); return import(${entry}); });`, eval: true };
}

const WORKER = workerStart();

/**
 * Internal: the current worker thread of a WorkerGuest, for tests and diagnostics that need
 * to make it die the way a crash would. Not part of the public API.
 */
export const currentWorker: unique symbol = Symbol("lockhost.currentWorker");

/** A guest instance isolated in its own worker thread. */
export class WorkerGuest extends GuestShell {
  readonly #callTimeoutMs: number;
  #gen!: Generation;
  /** Resolves when the current generation is ready; rejects when its (re)start failed. */
  #ready: Promise<void>;
  #nextId = 0;

  private constructor(opts: WorkerGuestOptions) {
    super(opts);
    this.#callTimeoutMs = opts.callTimeoutMs;
    this.#ready = this.#spawn();
  }

  /** Starts the worker and checks the guest's ABI version; rejects with ABI_UNSUPPORTED or GUEST_TIMEOUT. */
  static async start(opts: WorkerGuestOptions): Promise<WorkerGuest> {
    const guest = new WorkerGuest(opts);
    try {
      await guest.#ready;
    } catch (err) {
      await guest.close();
      throw err;
    }
    return guest;
  }

  [currentWorker](): Worker {
    return this.#gen.worker;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const gen = this.#gen;
    this.#retire(gen);
    this.locks.invalidate("its plugin was closed");
    this.#fail(gen, this.closedError(gen.pending && `during ${gen.pending.name}`));
    await gen.worker.terminate();
    await Promise.all([this.locks.reset("its plugin was closed"), this.calls.caps.close()]);
  }

  protected invoke(name: string, args: readonly GuestArg[], stringResult?: StringResultForm): Promise<GuestValue | string> {
    const gen = this.#gen;
    return new Promise<GuestValue | string>((resolve, reject) => {
      const id = ++this.#nextId;
      const timer = setTimeout(() => void this.#timedOut(gen), this.#callTimeoutMs);
      gen.pending = { id, name, startedAt: performance.now(), resolve, reject, timer };
      gen.worker.postMessage({ type: "call", id, name, args, ...(stringResult && { stringResult }) } satisfies ToWorker);
    });
  }

  /** A ready generation; a failed restart is retried once for the call that finds it. */
  protected async live(): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.#ready;
      } catch (err) {
        if (this.closed) throw this.closedError();
        if (attempt > 0) throw err;
        this.#ready = this.#spawn();
        continue;
      }
      if (this.closed) throw this.closedError();
      if (this.#gen.alive) return;
      if (attempt > 0) throw new LockhostError("GUEST_CRASHED", `plugin ${this.plugin} could not be restarted`);
    }
  }

  /** Starts a new worker generation; settles when the guest is instantiated and versioned, or fails. */
  #spawn(): Promise<void> {
    const { module } = this;
    const callTimeoutMs = this.#callTimeoutMs;
    const channel = new Channel();
    const ports = new MessageChannel();
    const init: WorkerInit = {
      plugin: module.plugin,
      module: module.module,
      channel: channel.buffer,
      memory: module.memory,
      bulk: ports.port2,
      grants: this.grants,
      functions: module.functions,
      abi: module.abi,
    };
    const worker = new Worker(WORKER.entry, { eval: WORKER.eval, workerData: init, transferList: [ports.port2] });
    const gen: Generation = { worker, channel, bulk: ports.port1, alive: true, contexts: [] };
    this.#gen = gen;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      let deadline: NodeJS.Timeout | undefined;
      const fail = (err: LockhostError): void => {
        if (started) return;
        started = true; // settled, as a failure
        clearTimeout(deadline);
        this.#retire(gen);
        void worker.terminate();
        reject(err);
      };
      worker.on("message", (msg: FromWorker) => {
        if (started) {
          void this.#onMessage(gen, msg);
          return;
        }
        if (msg.type === "instantiating") {
          // A start function that never returns must not hang the host's start or the plugin.
          // Counted from here, not from the spawn: the time limit is the guest's, and loading
          // the host's own worker code (slower from source) is not the guest's doing.
          deadline = setTimeout(
            () => fail(new LockhostError("GUEST_TIMEOUT", `plugin ${module.plugin} (${module.path}) did not finish instantiating within ${callTimeoutMs} ms`)),
            callTimeoutMs,
          );
        } else if (msg.type === "ready") {
          try {
            checkAbiVersion(module, msg.abiVersion);
          } catch (err) {
            fail(err as LockhostError);
            return;
          }
          started = true;
          clearTimeout(deadline);
          void this.#serve(gen);
          resolve();
        } else if (msg.type === "failed") {
          fail(new LockhostError("ABI_UNSUPPORTED", `plugin ${module.plugin} (${module.path}) failed to instantiate: ${msg.message}`));
        } else if (msg.type === "trace") {
          logLine(this.log, msg.level, msg.message);
        }
      });
      worker.on("error", (err) => {
        if (!started) fail(new LockhostError("GUEST_CRASHED", `plugin ${module.plugin} worker failed to start: ${err.message}`, { cause: err }));
        else this.log.error({ err: err.message }, "guest worker error");
      });
      worker.on("exit", (code) => {
        if (!started) fail(new LockhostError("GUEST_CRASHED", `plugin ${module.plugin} worker exited with code ${code} while starting`));
        else if (gen.alive) void this.#crashed(gen, `its worker exited with code ${code}`);
      });
    });
  }

  async #onMessage(gen: Generation, msg: FromWorker): Promise<void> {
    if (msg.type === "trace") {
      logLine(this.log, msg.level, msg.message);
      return;
    }
    if (msg.type === "failed") {
      // The worker could not re-instantiate after a trap: treat it as dead.
      await this.#crashed(gen, msg.message);
      return;
    }
    const pending = gen.pending;
    if (msg.type === "ready" || msg.type === "instantiating" || !gen.alive || !pending || pending.id !== msg.id) return;
    if (msg.type === "return") {
      gen.pending = undefined;
      clearTimeout(pending.timer);
      await this.locks.endCall();
      if (msg.problem) pending.reject(new LockhostError(msg.problem.code, msg.problem.message, msg.problem.details ? { details: msg.problem.details } : {}));
      else pending.resolve(msg.value);
      return;
    }
    gen.pending = undefined;
    clearTimeout(pending.timer);
    pending.reject(await this.trapped(pending.name, msg.message, msg.abort, msg.memoryBytes));
  }

  async #timedOut(gen: Generation): Promise<void> {
    const name = gen.pending?.name;
    if (!gen.alive || name === undefined) return;
    this.log.error({ export: name, callTimeoutMs: this.#callTimeoutMs }, "guest call timed out; restarting the guest");
    this.recorder.timedOut();
    const message = `plugin ${this.plugin} export ${name} ran past its time limit of ${this.#callTimeoutMs} ms and was stopped`;
    await this.#replace(gen, new LockhostError("GUEST_TIMEOUT", message), "its call timed out", "timeout");
  }

  async #crashed(gen: Generation, why: string): Promise<void> {
    if (!gen.alive) return;
    const name = gen.pending?.name;
    this.log.error({ export: name }, `guest worker died (${why}); restarting the guest`);
    const err = new LockhostError("GUEST_CRASHED", `plugin ${this.plugin} worker died during ${name ?? "no call"}: ${why}`);
    await this.#replace(gen, err, "its worker died", "crash");
  }

  /** Stops a generation, frees every lock it held, fails its call, and starts the next one. */
  async #replace(gen: Generation, err: LockhostError, reason: string, restart: RestartReason): Promise<void> {
    this.#retire(gen);
    // Before any await: a notice about this instance must not reach the next one.
    this.locks.invalidate(reason);
    const pending = gen.pending;
    gen.pending = undefined;
    if (pending) clearTimeout(pending.timer);
    if (!this.closed) {
      this.recorder.restarted(restart);
      this.#ready = this.#spawn();
      this.#ready.catch((e: unknown) => {
        // close() ends a restart under way by terminating its worker: that start was cut
        // short on purpose, not a failure anyone must act on.
        if (this.closed) this.log.debug({ err: (e as Error).message }, "guest restart cut short: the plugin was closed");
        else this.log.error({ err: (e as Error).message }, "guest restart failed; the next call tries again");
      });
    }
    await gen.worker.terminate();
    await this.locks.reset(reason);
    pending?.reject(err);
  }

  /** Fails a generation's pending call, if it has one. */
  #fail(gen: Generation, error: LockhostError): void {
    const pending = gen.pending;
    if (!pending) return;
    gen.pending = undefined;
    clearTimeout(pending.timer);
    pending.reject(error);
  }

  #retire(gen: Generation): void {
    gen.alive = false;
    gen.bulk.close();
    // Wakes the serve loop so it can see the generation is gone and stop.
    Atomics.notify(gen.channel.i32, REQ_SEQ);
  }

  /** Answers the worker's lock calls until the generation retires. No polling: waitAsync wakes us. */
  async #serve(gen: Generation): Promise<void> {
    const { i32 } = gen.channel;
    let seen = 0;
    while (gen.alive) {
      const wait = Atomics.waitAsync(i32, REQ_SEQ, seen);
      if (wait.async) await wait.value;
      if (!gen.alive) return;
      const seq = Atomics.load(i32, REQ_SEQ);
      if (seq === seen) continue;
      seen = seq;
      const reply = await this.#dispatch(gen);
      if (!gen.alive) return;
      gen.channel.f64[0] = reply.result;
      i32[TEXT_LEN] = this.#writeReply(gen, reply);
      Atomics.store(i32, RESP_SEQ, seq);
      Atomics.notify(i32, RESP_SEQ);
    }
  }

  /** Puts a reply's text or bytes where the worker reads them; returns TEXT_LEN's value. */
  #writeReply(gen: Generation, reply: AbiReply): number {
    const { data } = gen.channel;
    const { text, bytes } = reply;
    if (bytes) {
      if (bytes.byteLength <= DATA_BYTES) {
        data.set(bytes);
        return bytes.byteLength;
      }
      // A view of a larger buffer would be cloned whole: send just its bytes.
      gen.bulk.postMessage(bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : bytes.slice());
      return BULK_TEXT;
    }
    if (!text) return 0;
    const { read, written } = encoder.encodeInto(text, data);
    if (read === text.length) return written;
    gen.bulk.postMessage(encoder.encode(text));
    return BULK_TEXT;
  }

  /**
   * Serves one request: the operation the table numbers (or, past its end, the guest's host
   * function import), its arguments read from the channel or, when they did not fit, the port.
   */
  #dispatch(gen: Generation): Promise<AbiReply> | AbiReply {
    const { i32 } = gen.channel;
    const index = i32[OP]!;
    const fn = index >= OPS.length ? index - functionIndex(0) : undefined;
    const op = (fn === undefined ? OPS[index] : FUNCTION_OP) as OpSpec | undefined;
    if (!op) return { result: -INTERNAL, text: `unknown channel op ${index}` };
    const data = i32[BULK] === 1 ? receiveBulk(gen.bulk) : gen.channel.data;
    return runOp(
      this.calls,
      op,
      (i) => i32[ARG + i]!,
      (i) => {
        // Strings lie one after the other, in argument order: each starts where the last ended.
        let from = 0;
        for (let k = 0; k < i; k++) from += i32[STR_LEN + k]!;
        const len = i32[STR_LEN + i]!;
        return len === 0 ? NO_BYTES : data.slice(from, from + len);
      },
      (gen.contexts[fn === undefined ? 0 : fn + 1] ??= { waitLimit: () => this.#waitLimit(gen), ...(fn !== undefined && { fn }) }),
      asIs,
    );
  }

  /** How long a lock.acquire of the running call may wait and still leave the call time to return. */
  #waitLimit(gen: Generation): WaitLimit | undefined {
    const pending = gen.pending;
    if (!pending) return undefined;
    const callTimeoutMs = this.#callTimeoutMs;
    const left = callTimeoutMs - (performance.now() - pending.startedAt);
    return { budgetMs: left - returnMarginMs(callTimeoutMs), callTimeoutMs };
  }
}
