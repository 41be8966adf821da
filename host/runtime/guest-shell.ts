// What a running guest is to the host whatever runtime runs it: calls checked against the
// export's signature and queued one at a time, lost-lock notifications (lockhost_on_lost)
// delivered between calls, the schedule's lock shown as handle 0 during a scheduled call, and
// traps logged and reported alike. A runtime adds how an instance starts, runs an export and
// stops (worker/worker-instance.ts, inline/inline-guest.ts).
import type { Logger } from "pino";
import { LockhostError } from "../../kit/errors.js";
import type { Lease } from "../locking/lease.js";
import { LOST_EXPORT, type CallOptions, type GuestInstance, type GuestReservation, type GuestValue } from "./guest-instance.js";
import type { AbortInfo } from "./guest-env.js";
import type { GuestLocks } from "./guest-locks.js";
import type { GuestCapabilities } from "./capabilities/guest-capabilities.js";
import type { GuestGrants } from "./local-imports.js";
import type { GuestCalls } from "./lock-ops.js";
import { PAGE_BYTES, VERSION_EXPORT, type GuestModule } from "./guest-module.js";
import { didYouMean } from "../suggest.js";
import type { FuncSignature } from "./wasm-binary.js";
import { allocatorProblem, MAX_STRING_ARG_UNITS, stringFormOf, type GuestArg } from "./guest-strings.js";
import { callOutcomeOf, NO_GUEST_RECORDER, type GuestRecorder } from "./guest-recorder.js";
import { stringResultFormOf, type StringResultForm } from "./string-results.js";
import { context, type Context } from "@opentelemetry/api";
import { contextOf, endGuestCall, startGuestCall, TraceSlot } from "../tracing/tracer.js";

/** What every runtime's guest is started with. */
export interface GuestShellOptions {
  readonly module: GuestModule;
  readonly locks: GuestLocks;
  /** Its HTTP requests and host function calls. */
  readonly caps: GuestCapabilities;
  /** What its local operations answer (capabilities, config, log level). */
  readonly grants: GuestGrants;
  /** The plugin's logger (a child carrying the plugin's name). */
  readonly log: Logger;
  /** Told of its calls, traps, time limits and restarts (the host's metrics); default: nobody. */
  readonly recorder?: GuestRecorder;
}

/** A lost-lock notification not delivered yet. */
interface LostNotice {
  readonly handle: number;
  /** The guest instance (GuestLocks.epoch) whose handle it is: a fresh instance is not told. */
  readonly epoch: number;
  /** For handle 0: the schedule's lock, which lock.state(0) answers about during the callback. */
  readonly scheduleLease: Lease | undefined;
}

/** The runtime-neutral part of a guest instance. */
export abstract class GuestShell implements GuestInstance {
  readonly plugin: string;
  protected readonly module: GuestModule;
  protected readonly locks: GuestLocks;
  /** What the guest's remote operations are served by. */
  protected readonly calls: GuestCalls;
  protected readonly grants: GuestGrants;
  protected readonly log: Logger;
  protected readonly recorder: GuestRecorder;
  /** Set once by close(): no call starts after it. */
  protected closed = false;
  /** Calls run one at a time, in order. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Jobs queued or running (calls, reservations, lost-lock deliveries): free at 0. */
  #pending = 0;
  /** Told each time #pending drops to 0 (a pool waiting for a free instance). */
  readonly #freeListeners = new Set<() => void>();
  /** Lost-lock notifications waiting for the guest to be between calls. */
  #lost: LostNotice[] = [];
  /** Whether a delivery of #lost is queued already. */
  #lostQueued = false;

  protected constructor(opts: GuestShellOptions) {
    this.plugin = opts.module.plugin;
    this.module = opts.module;
    this.locks = opts.locks;
    this.calls = { locks: opts.locks, caps: opts.caps, trace: new TraceSlot() };
    this.grants = opts.grants;
    this.log = opts.log;
    this.recorder = opts.recorder ?? NO_GUEST_RECORDER;
    const onLost = opts.module.exports.get(LOST_EXPORT);
    if (onLost) {
      if (onLost.params.length === 1 && onLost.params[0] === "i32" && onLost.results.length === 0) {
        opts.locks.listenLost((handle, scheduleLease) => this.#noticeLost(handle, scheduleLease));
      } else {
        this.log.warn(
          { export: LOST_EXPORT, params: onLost.params, results: onLost.results },
          `the guest exports ${LOST_EXPORT} with the wrong signature (it must be (i32) -> nothing); it will not be told about lost locks`,
        );
      }
    }
  }

  /** Resolves once an instance is ready to run an export; rejects when none can be started. */
  protected abstract live(): Promise<void>;

  /**
   * Runs one export on the live instance. A trap, time limit or crash rejects with its
   * LockhostError after the runtime has replaced the instance and freed its locks.
   */
  protected abstract invoke(name: string, args: readonly GuestArg[], stringResult?: StringResultForm): Promise<GuestValue | string>;

  abstract close(): Promise<void>;

  cancelWaits(reason: string): void {
    this.locks.cancelWaits(reason);
  }

  get heldLocks(): number {
    return this.locks.heldCount;
  }

  get size(): number {
    return 1;
  }

  hasExport(name: string): boolean {
    return this.exportSignature(name) !== undefined;
  }

  exportSignature(name: string): FuncSignature | undefined {
    return name === VERSION_EXPORT ? undefined : this.module.exports.get(name);
  }

  exportNames(): string[] {
    return [...this.module.exports.keys()].filter((n) => n !== VERSION_EXPORT);
  }

  call(exportName: string, args: readonly GuestArg[] = [], options: CallOptions = {}): Promise<GuestValue> {
    try {
      return this.#enqueue(this.#callJob(exportName, args, options));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  callString(exportName: string, args: readonly GuestArg[] = []): Promise<string> {
    try {
      return this.#enqueue(this.#callStringJob(exportName, args));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  reserve(): GuestReservation | undefined {
    if (this.closed || this.#pending > 0) return undefined;
    // A slot in the queue that runs the job it is given (or nothing, when given back): calls
    // queued after it wait for it, so nothing starts on the instance in between.
    let fill!: (job: (() => Promise<unknown>) | undefined) => void;
    const job = new Promise<(() => Promise<unknown>) | undefined>((resolve) => (fill = resolve));
    const slot = this.#enqueue(async () => (await job)?.());
    let used = false;
    const use = <T>(make: () => () => Promise<T>): Promise<T> => {
      if (used) return Promise.reject(new LockhostError("INVALID_ARGUMENT", `a reservation of plugin ${this.plugin} was used already`));
      used = true;
      try {
        fill(make());
      } catch (err) {
        fill(undefined);
        return Promise.reject(err);
      }
      return slot as Promise<T>;
    };
    return {
      call: (exportName, args = [], options = {}) => use(() => this.#callJob(exportName, args, options)),
      callString: (exportName, args = []) => use(() => this.#callStringJob(exportName, args)),
      cancel: () => {
        if (used) return;
        used = true;
        fill(undefined);
      },
    };
  }

  onFree(listener: () => void): () => void {
    this.#freeListeners.add(listener);
    return () => this.#freeListeners.delete(listener);
  }

  /** An export call, checked now (throws what call() rejects with), to run at its turn. */
  #callJob(exportName: string, args: readonly GuestArg[], options: CallOptions): () => Promise<GuestValue> {
    if (this.closed) throw this.closedError();
    this.#checkArgs(exportName, args);
    // The caller's active context (an embedder's span, a tick's) is the parent of the call's span.
    const parent = context.active();
    const run = (): Promise<GuestValue> => this.#run(exportName, args, options.scheduleLease, true, undefined, undefined, parent) as Promise<GuestValue>;
    // A loss the guest has not heard of yet comes before its next piece of work.
    return () => (this.#lost.length > 0 ? this.#deliverLost().then(run) : run());
  }

  /** A string-returning export call, checked now (throws what callString() rejects with), to run at its turn. */
  #callStringJob(exportName: string, args: readonly GuestArg[]): () => Promise<string> {
    if (this.closed) throw this.closedError();
    this.#checkArgs(exportName, args);
    const sig = this.exportSignature(exportName)!;
    // An Extism export's string is its output (input bytes in, output bytes out).
    const form = this.module.abi === "extism" ? "extism" : stringResultFormOf(sig.results);
    if (!form) {
      throw new LockhostError(
        "INVALID_ARGUMENT",
        `export ${exportName} of plugin ${this.plugin} must return a string (an i32 pointer to an AssemblyScript string, or an i64 len << 32 | ptr ` +
          `of UTF-8), but returns ${sig.results.join(", ") || "nothing"}`,
      );
    }
    const parent = context.active();
    const run = (): Promise<string> => this.#run(exportName, args, undefined, false, undefined, form, parent) as Promise<string>;
    return () => (this.#lost.length > 0 ? this.#deliverLost().then(run) : run());
  }

  /** Runs `job` after every call queued before it. */
  #enqueue<T>(job: () => Promise<T>): Promise<T> {
    this.#pending++;
    const run = this.#queue.then(job);
    const settled = (): void => {
      if (--this.#pending > 0) return;
      for (const listener of [...this.#freeListeners]) listener();
    };
    this.#queue = run.then(settled, settled);
    return run;
  }

  /** A lock the guest holds was lost: lockhost_on_lost(handle) runs as soon as no call is running. */
  #noticeLost(handle: number, scheduleLease: Lease | undefined): void {
    if (this.closed) return;
    this.#lost.push({ handle, scheduleLease, epoch: this.locks.epoch });
    if (this.#lostQueued) return;
    this.#lostQueued = true;
    void this.#enqueue(() => this.#deliverLost());
  }

  /** Calls lockhost_on_lost for every pending notice; never rejects (a trap is handled like any trap). */
  async #deliverLost(): Promise<void> {
    this.#lostQueued = false;
    for (let notice = this.#lost.shift(); notice; notice = this.#lost.shift()) {
      if (this.closed) {
        this.#lost = [];
        return;
      }
      try {
        await this.#run(LOST_EXPORT, [notice.handle], notice.scheduleLease, false, notice.epoch);
      } catch (err) {
        const e = err as LockhostError;
        this.log.error({ export: LOST_EXPORT, handle: notice.handle, code: e.code, err: e.message }, "the guest's lost-lock callback failed");
      }
    }
  }

  /**
   * Runs one export call; with `scheduleLease`, the guest sees that lock as handle 0 meanwhile
   * (and, with `watchSchedule`, hears of its loss through lockhost_on_lost(0) afterwards); with
   * `forEpoch`, only if that guest instance still runs (else nothing: a notice about an
   * instance that ended never reaches the next one).
   */
  async #run(
    name: string,
    args: readonly GuestArg[],
    scheduleLease: Lease | undefined,
    watchSchedule: boolean,
    forEpoch?: number,
    stringResult?: StringResultForm,
    parent: Context = context.active(),
  ): Promise<GuestValue | string> {
    // Timed from its turn in the queue: waiting for a restarted instance is part of the call.
    const started = performance.now();
    let detach: (() => void) | undefined;
    // The call's span (a no-op with no tracing SDK); what the guest does meanwhile runs under it (lock-ops.ts runOp).
    const span = startGuestCall(parent, this.plugin, name);
    const slot = this.calls.trace!;
    slot.context = contextOf(parent, span);
    try {
      await this.live();
      if (forEpoch !== undefined && forEpoch !== this.locks.epoch) return undefined;
      if (watchSchedule && scheduleLease) {
        const notHeld = leaseAtEntryProblem(scheduleLease);
        // Not a call: the export is never entered without its lock (not counted as a guest call).
        if (notHeld) throw new NotEntered(`plugin ${this.plugin} export ${name} was not called: its schedule lock ${scheduleLease.name} ${notHeld}`);
      }
      detach = scheduleLease && this.locks.attachSchedule(scheduleLease, watchSchedule);
      const value = await this.invoke(name, args, stringResult);
      this.recorder.called(name, "ok", performance.now() - started);
      endGuestCall(span, "ok");
      return value;
    } catch (err) {
      if (err instanceof NotEntered) {
        endGuestCall(span, "not_entered", err);
        throw err;
      }
      const outcome = err instanceof LockhostError ? callOutcomeOf(err.code) : "error";
      this.recorder.called(name, outcome, performance.now() - started);
      endGuestCall(span, outcome, err);
      throw err;
    } finally {
      slot.context = undefined;
      detach?.();
    }
  }

  /**
   * Refuses, before anything reaches the guest, a call its export's signature cannot take. A
   * string argument takes one i32 (an AssemblyScript guest: its pointer) or two (a UTF-8 guest:
   * ptr, len), as the guest's string form says.
   */
  #checkArgs(name: string, args: readonly GuestArg[]): void {
    const sig = this.exportSignature(name);
    if (!sig) {
      const names = this.exportNames();
      throw new LockhostError(
        "UNKNOWN_EXPORT",
        `plugin ${this.plugin} has no export "${name}" (${didYouMean(name, names)}it exports: ${names.join(", ") || "nothing callable"})`,
      );
    }
    const where = `export ${name}(${sig.params.join(", ")}) of plugin ${this.plugin}`;
    if (this.module.abi === "extism") {
      // The Extism way: the input is bytes (here one string, its UTF-8), the export takes no parameters.
      if (args.length > 1 || (args.length === 1 && typeof args[0] !== "string")) {
        throw new LockhostError(
          "INVALID_ARGUMENT",
          `${where} is an Extism export: it takes its input as one string argument (or none), got ${args.length} argument(s)` +
            `${args.length === 1 ? ` (a ${typeof args[0]})` : ""}`,
        );
      }
      if (args.length === 1 && (args[0] as string).length > MAX_STRING_ARG_UNITS) {
        throw new LockhostError(
          "INVALID_ARGUMENT",
          `${where}: its input is a string of ${(args[0] as string).length} UTF-16 units, over the limit of ${MAX_STRING_ARG_UNITS}`,
        );
      }
      return;
    }
    const form = stringFormOf((n) => this.module.exports.has(n));
    const strings = args.filter((a) => typeof a === "string").length;
    const wanted = args.length + strings * (form.params - 1);
    if (wanted !== sig.params.length) {
      const each = strings > 0 && form.params === 2 ? ` (a string is 2 of them, ptr and len: this guest receives ${form.label})` : "";
      throw new LockhostError(
        "INVALID_ARGUMENT",
        each
          ? `${where} takes ${sig.params.length} parameter(s), got ${args.length} argument(s) that make ${wanted}${each}`
          : `${where} takes ${sig.params.length} argument(s), got ${args.length}`,
      );
    }
    let p = 0;
    args.forEach((a, i) => {
      if (typeof a === "string") {
        this.#checkStringArg(where, sig.params.slice(p, p + form.params), i, a, form.label);
        p += form.params;
        return;
      }
      const type = sig.params[p++]!;
      if (type === "i32" ? !Number.isInteger(a) || a < -0x80000000 || a > 0xffffffff : type === "f32" || type === "f64" ? typeof a !== "number" : true) {
        throw new LockhostError(
          "INVALID_ARGUMENT",
          `${where}: argument ${i + 1} must ` +
            `be ${type === "i32" || type === "f32" || type === "f64" ? `an ${type}` : `one of i32, f32, f64 (the host cannot pass ${type})`}, got ${a}`,
        );
      }
    });
  }

  /** A string argument goes where the export takes i32s (its pointer, or ptr and len), to a guest with an allocator. */
  #checkStringArg(where: string, types: readonly string[], i: number, a: string, label: string): void {
    if (types.some((t) => t !== "i32")) {
      throw new LockhostError(
        "INVALID_ARGUMENT",
        `${where}: argument ${i + 1} is a string, which the guest receives as ${label} (${types.length === 1 ? "an i32" : "two i32s"}), but the ` +
          `parameter${types.length === 1 ? " is" : "s are"} ${types.join(", ")}`,
      );
    }
    if (a.length > MAX_STRING_ARG_UNITS) {
      throw new LockhostError(
        "INVALID_ARGUMENT",
        `${where}: argument ${i + 1} is a string of ${a.length} UTF-16 units, over the limit of ${MAX_STRING_ARG_UNITS}`,
      );
    }
    const problem = allocatorProblem(this.module.exports);
    if (problem) throw new LockhostError("INVALID_ARGUMENT", `${where}: argument ${i + 1} is a string: ${problem}`);
  }

  /**
   * Logs a trap of export `name` and frees the instance's locks; returns the error its call
   * rejects with. `memoryBytes` is the size of the guest's memory when it trapped.
   */
  protected async trapped(name: string, message: string, abort: AbortInfo | undefined, memoryBytes: number): Promise<LockhostError> {
    // A guest at its cap when it trapped most likely ran out of memory (AssemblyScript's
    // allocator traps with a bare "unreachable" when memory.grow fails).
    const full = memoryBytes + PAGE_BYTES > this.module.memory.maximum * PAGE_BYTES;
    const limit =
      full || outOfMemory(abort?.message ?? message)
        ? `; it had used all of its memory, memory_limit_mib = ${this.#memoryLimitMib()} for plugin ${this.plugin}`
        : "";
    this.log.error(
      { export: name, ...(abort && knownPlace(abort) && { file: abort.file, line: abort.line, column: abort.column }) },
      abort ? `guest abort: ${abort.message} ${placeOf(abort)}${limit}` : `guest trapped: ${message}${limit}`,
    );
    // Both runtimes replace a trapped instance (the worker in its thread, inline on this one).
    this.recorder.trapped();
    this.recorder.restarted("trap");
    await this.locks.reset(`its export ${name} trapped`);
    const text = abort && !knownPlace(abort) ? message.replace(/ at null:0:0$/, ` ${placeOf(abort)}`) : message;
    return new LockhostError("GUEST_TRAP", `plugin ${this.plugin} export ${name} trapped: ${text}${limit}`);
  }

  /** The guest's memory cap in MiB, as the config's memory_limit_mib says it. */
  #memoryLimitMib(): number {
    return (this.module.memory.maximum * PAGE_BYTES) / 2 ** 20;
  }

  protected closedError(detail?: string): LockhostError {
    return new LockhostError("CLOSED", `plugin ${this.plugin} was closed${detail ? ` ${detail}` : ""}`);
  }
}

/** LOST for a scheduled call whose lock is gone (or has no time left) when its export would be entered. */
class NotEntered extends LockhostError {
  constructor(message: string) {
    super("LOST", message, { details: { entered: 0 } });
  }
}

/** Why a schedule's lease cannot cover a call entered now, or undefined when it can. */
export function leaseAtEntryProblem(lease: Lease): string | undefined {
  if (lease.state !== "held") return `was ${lease.state} before the call could start`;
  const leftMs = lease.deadline - performance.now();
  if (leftMs <= 0) return `had no time left (its lease ended ${Math.round(-leftMs)} ms before the call could start)`;
  return undefined;
}

/** Whether an abort or trap message says the guest ran out of memory (AssemblyScript's allocator, or a failed grow). */
function outOfMemory(message: string): boolean {
  return /out of memory|allocation too large|memory\.grow|grow memory/i.test(message);
}

/** Whether an abort names a place: a release build passes no file (null) and line 0. */
function knownPlace(abort: AbortInfo): boolean {
  return !(abort.file === "null" && abort.line === 0);
}

/** Where an abort happened, in words. */
function placeOf(abort: AbortInfo): string {
  return knownPlace(abort)
    ? `at ${abort.file}:${abort.line}:${abort.column}`
    : "at an unknown place (the guest was built without file and line info; an AssemblyScript debug build, or --debug, keeps them)";
}
