// The main-thread side of the worker runtime: one worker thread per guest instance, a time
// limit per call, restart on trap / time limit / crash, and the serving end of the channel.
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import { INTERNAL } from "../../../abi/status.js";
import { LockhostError } from "../../errors.js";
import { ARG0, ARG1, Channel, DATA_LEN, Op, OP, REQ_SEQ, RESP_SEQ, TEXT_LEN } from "../channel.js";
import type { GuestInstance, GuestValue } from "../guest-instance.js";
import type { AbiReply, GuestLocks } from "../guest-locks.js";
import { checkAbiVersion, type GuestModule } from "../guest-module.js";
import type { FromWorker, ToWorker, WorkerInit } from "./messages.js";

/** Options of a worker-isolated guest instance. */
export interface WorkerGuestOptions {
  readonly module: GuestModule;
  readonly locks: GuestLocks;
  /** A call running longer is stopped by terminating the worker. */
  readonly callTimeoutMs: number;
  /** The plugin's logger (a child carrying the plugin's name). */
  readonly log: Logger;
}

interface PendingCall {
  readonly id: number;
  readonly name: string;
  readonly resolve: (value: GuestValue) => void;
  readonly reject: (err: LockhostError) => void;
  readonly timer: NodeJS.Timeout;
}

/** One worker thread running one guest instance; replaced whole when it must restart. */
interface Generation {
  readonly worker: Worker;
  readonly channel: Channel;
  alive: boolean;
  pending?: PendingCall;
}

const encoder = new TextEncoder();

/** Where the compiled worker entry lives: next to this file, or in dist/ when run from source (tests). */
function workerEntry(): URL {
  const here = new URL(import.meta.url);
  return here.pathname.endsWith(".ts")
    ? new URL("../../../dist/host/runtime/worker/guest-worker.js", here)
    : new URL("./guest-worker.js", here);
}

/**
 * Internal: the current worker thread of a WorkerGuest, for tests and diagnostics that need
 * to make it die the way a crash would. Not part of the public API.
 */
export const currentWorker: unique symbol = Symbol("lockhost.currentWorker");

/** A guest instance isolated in its own worker thread. */
export class WorkerGuest implements GuestInstance {
  readonly plugin: string;
  readonly #opts: WorkerGuestOptions;
  readonly #log: Logger;
  #gen!: Generation;
  /** Resolves when a live generation is ready; a failed restart rejects the next call. */
  #ready: Promise<void>;
  /** Calls run one at a time, in order. */
  #queue: Promise<unknown> = Promise.resolve();
  #nextId = 0;
  #closed = false;

  private constructor(opts: WorkerGuestOptions) {
    this.plugin = opts.module.plugin;
    this.#opts = opts;
    this.#log = opts.log;
    this.#ready = this.#spawn();
  }

  /** Starts the worker and checks the guest's ABI version; rejects with ABI_UNSUPPORTED. */
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

  get heldLocks(): number {
    return this.#opts.locks.heldCount;
  }

  hasExport(name: string): boolean {
    return this.#opts.module.exports.has(name);
  }

  call(exportName: string, args: readonly number[] = []): Promise<GuestValue> {
    if (this.#closed) return Promise.reject(new LockhostError("CLOSED", `plugin ${this.plugin} is closed`));
    if (!this.hasExport(exportName) || exportName === "lockhost_abi_version") {
      const names = [...this.#opts.module.exports].filter((n) => n !== "lockhost_abi_version").join(", ");
      return Promise.reject(
        new LockhostError("UNKNOWN_EXPORT", `plugin ${this.plugin} has no export "${exportName}" (it exports: ${names || "nothing callable"})`),
      );
    }
    if (!args.every((a) => Number.isInteger(a) && a >= -0x80000000 && a <= 0xffffffff)) {
      return Promise.reject(new LockhostError("INVALID_ARGUMENT", `args of ${exportName} must be i32 integers, got [${args.join(", ")}]`));
    }
    const run = this.#queue.then(() => this.#run(exportName, args));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const gen = this.#gen;
    this.#retire(gen);
    if (gen.pending) {
      clearTimeout(gen.pending.timer);
      gen.pending.reject(new LockhostError("CLOSED", `plugin ${this.plugin} was closed during ${gen.pending.name}`));
      gen.pending = undefined;
    }
    await gen.worker.terminate();
    await this.#opts.locks.reset("its plugin was closed");
  }

  async #run(name: string, args: readonly number[]): Promise<GuestValue> {
    if (this.#closed) throw new LockhostError("CLOSED", `plugin ${this.plugin} is closed`);
    await this.#ready;
    const gen = this.#gen;
    return new Promise<GuestValue>((resolve, reject) => {
      const id = ++this.#nextId;
      const timer = setTimeout(() => void this.#timedOut(gen), this.#opts.callTimeoutMs);
      gen.pending = { id, name, resolve, reject, timer };
      gen.worker.postMessage({ type: "call", id, name, args } satisfies ToWorker);
    });
  }

  /** Starts a new worker generation and waits until the guest is instantiated and versioned. */
  #spawn(): Promise<void> {
    const { module } = this.#opts;
    const channel = new Channel();
    const init: WorkerInit = { plugin: module.plugin, module: module.module, channel: channel.buffer, memory: module.memory };
    const worker = new Worker(workerEntry(), { workerData: init });
    const gen: Generation = { worker, channel, alive: true };
    this.#gen = gen;
    return new Promise<void>((resolve, reject) => {
      let started = false;
      worker.on("message", (msg: FromWorker) => {
        if (msg.type === "ready") {
          try {
            checkAbiVersion(module, msg.abiVersion);
          } catch (err) {
            this.#retire(gen);
            void worker.terminate();
            reject(err);
            return;
          }
          started = true;
          void this.#serve(gen);
          resolve();
        } else if (msg.type === "failed" && !started) {
          this.#retire(gen);
          void worker.terminate();
          reject(new LockhostError("ABI_UNSUPPORTED", `plugin ${module.plugin} (${module.path}) failed to instantiate: ${msg.message}`));
        } else {
          void this.#onMessage(gen, msg);
        }
      });
      worker.on("error", (err) => {
        if (!started) reject(new LockhostError("GUEST_CRASHED", `plugin ${module.plugin} worker failed to start: ${err.message}`, { cause: err }));
        else this.#log.error({ err: err.message }, "guest worker error");
      });
      worker.on("exit", (code) => {
        if (!started) reject(new LockhostError("GUEST_CRASHED", `plugin ${module.plugin} worker exited with code ${code} while starting`));
        else if (gen.alive) void this.#crashed(gen, `its worker exited with code ${code}`);
      });
    });
  }

  async #onMessage(gen: Generation, msg: FromWorker): Promise<void> {
    if (msg.type === "trace") {
      this.#log.info(`guest: ${msg.message}`);
      return;
    }
    if (msg.type === "failed") {
      // The worker could not re-instantiate after a trap: treat it as dead.
      await this.#crashed(gen, msg.message);
      return;
    }
    const pending = gen.pending;
    if (msg.type === "ready" || !pending || pending.id !== msg.id) return;
    clearTimeout(pending.timer);
    gen.pending = undefined;
    if (msg.type === "return") {
      await this.#opts.locks.endCall();
      pending.resolve(msg.value);
      return;
    }
    const where = msg.abort ? ` at ${msg.abort.file}:${msg.abort.line}:${msg.abort.column}` : "";
    this.#log.error(
      { export: pending.name, ...(msg.abort && { file: msg.abort.file, line: msg.abort.line, column: msg.abort.column }) },
      msg.abort ? `guest abort: ${msg.abort.message}${where}` : `guest trapped: ${msg.message}`,
    );
    await this.#opts.locks.reset(`its export ${pending.name} trapped`);
    pending.reject(new LockhostError("GUEST_TRAP", `plugin ${this.plugin} export ${pending.name} trapped: ${msg.message}`));
  }

  async #timedOut(gen: Generation): Promise<void> {
    const pending = gen.pending;
    if (!pending || !gen.alive) return;
    const message = `plugin ${this.plugin} export ${pending.name} ran past its time limit of ${this.#opts.callTimeoutMs} ms and was stopped`;
    this.#log.error({ export: pending.name, callTimeoutMs: this.#opts.callTimeoutMs }, "guest call timed out; restarting the guest");
    await this.#replace(gen, new LockhostError("GUEST_TIMEOUT", message), "its call timed out");
  }

  async #crashed(gen: Generation, why: string): Promise<void> {
    if (!gen.alive) return;
    this.#log.error({ export: gen.pending?.name }, `guest worker died (${why}); restarting the guest`);
    const err = new LockhostError("GUEST_CRASHED", `plugin ${this.plugin} worker died during ${gen.pending?.name ?? "no call"}: ${why}`);
    await this.#replace(gen, err, "its worker died");
  }

  /** Stops a generation, frees every lock it held, fails its call, and starts the next one. */
  async #replace(gen: Generation, err: LockhostError, reason: string): Promise<void> {
    this.#retire(gen);
    const pending = gen.pending;
    gen.pending = undefined;
    if (pending) clearTimeout(pending.timer);
    if (!this.#closed) {
      this.#ready = this.#spawn();
      this.#ready.catch((e: unknown) => this.#log.error({ err: (e as Error).message }, "guest restart failed"));
    }
    await gen.worker.terminate();
    await this.#opts.locks.reset(reason);
    pending?.reject(err);
  }

  #retire(gen: Generation): void {
    gen.alive = false;
    // Wakes the serve loop so it can see the generation is gone and stop.
    Atomics.notify(gen.channel.i32, REQ_SEQ);
  }

  /** Answers the worker's lock calls until the generation retires. No polling: waitAsync wakes us. */
  async #serve(gen: Generation): Promise<void> {
    const { i32 } = gen.channel;
    let seen = 0;
    for (;;) {
      const wait = Atomics.waitAsync(i32, REQ_SEQ, seen);
      if (wait.async) await wait.value;
      if (!gen.alive) return;
      const seq = Atomics.load(i32, REQ_SEQ);
      if (seq === seen) continue;
      seen = seq;
      const reply = await this.#dispatch(gen.channel);
      gen.channel.f64[0] = reply.result;
      i32[TEXT_LEN] = reply.text ? encoder.encodeInto(reply.text, gen.channel.data).written : 0;
      Atomics.store(i32, RESP_SEQ, seq);
      Atomics.notify(i32, RESP_SEQ);
    }
  }

  #dispatch(ch: Channel): Promise<AbiReply> | AbiReply {
    const locks = this.#opts.locks;
    const a0 = ch.i32[ARG0]!;
    const a1 = ch.i32[ARG1]!;
    switch (ch.i32[OP]) {
      case Op.TRY:
        return locks.try(ch.data.slice(0, ch.i32[DATA_LEN]), a0, a1);
      case Op.RENEW:
        return locks.renew(a0, a1);
      case Op.RELEASE:
        return locks.release(a0);
      case Op.FENCE:
        return locks.fence(a0);
      case Op.OWNER:
        return locks.owner(a0);
      case Op.STATUS:
        return locks.status(ch.data.slice(0, ch.i32[DATA_LEN]), a0);
      default:
        return { result: -INTERNAL, text: `unknown channel op ${ch.i32[OP]}` };
    }
  }
}
