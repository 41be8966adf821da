// loadGuest: a plugin's .wasm loaded the way the host loads it (its [[plugins]] entry checked by
// the config schema, then startPluginGuest: any ABI and runtime the host runs), on a memory
// backend of its own, for a plugin author's unit test under any test runner. The test holds
// keys on the same backend to make the guest see contention, moves the backend's clock to end
// leases, and reads the guest's log as data. A composition root, as the package entry is: it
// makes its own MemoryBackend.
import { basename } from "node:path";
import { LockhostError } from "../kit/errors.js";
import { resolvePlugin } from "../host/config/load.js";
import type { GuestRuntime, PluginInput } from "../host/config/types.js";
import type { Lease } from "../host/locking/lease.js";
import { LockService, type SpecOptions } from "../host/locking/service.js";
import type { HostFunctions } from "../host/runtime/capabilities/functions.js";
import type { GuestArg, GuestValue } from "../host/runtime/guest-instance.js";
import type { GuestPool } from "../host/runtime/guest-pool.js";
import { startPluginGuest } from "../host/runtime/start-plugin.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { keptLog, type GuestLogLine } from "./guest-logs.js";
import { AdvancingClock, type TestClock } from "./test-clock.js";

/**
 * Options of loadGuest: the keys of the plugin's `[[plugins]]` entry, as resolveConfig takes them
 * (camelCase: `config`, `http`, `globalKeys`, `functions`, `isolation`, `logLevel`, `wasi`,
 * `callTimeoutMs`...), checked by the same schema, plus what the embedder would give the host.
 */
export interface LoadGuestOptions extends Omit<PluginInput, "name" | "wasm" | "runtime"> {
  /** The plugin's name, which scopes its keys (`<name>:<key>`); default: the file's name without `.wasm`. */
  readonly name?: string;
  /** The host functions of the namespaces `functions` grants, as Host.start takes them. */
  readonly hostFunctions?: HostFunctions;
  /** The guest's host's node name, recorded as the holder of its locks; default "test-node". */
  readonly node?: string;
}

/** Options of TestGuest.hold: the lease, the key's scope, and which kind of lock (SpecOptions: a mutex unless named). */
export type HoldOptions = {
  /** The lease, in ms; default 30,000. */
  readonly ttlMs?: number;
  /** The key is global (`global:<key>`, as a guest's FLAG_GLOBAL names it), not the plugin's own. */
  readonly global?: boolean;
  /**
   * Renew the lease while it is held; default false, so that advancing the clock past its TTL
   * ends it, as a holder that crashed would.
   */
  readonly keepalive?: boolean;
} & SpecOptions;

/** The node name of the other holder a test's `locks` and `hold` act as. */
export const OTHER_NODE = "other-node";

/**
 * Loads the guest `wasm` (a path; relative to the working directory) as the host loads the
 * plugin, on a fresh memory backend, and starts it in the runtime its `isolation` resolves to
 * (worker by default; inline needs JSPI). Rejects as Host.start does for that plugin:
 * CONFIG_INVALID naming an option at fault, ABI_UNSUPPORTED for a module the host would not run.
 *
 * ```ts
 * await using guest = await loadGuest("build/fenced.wasm");
 * await guest.hold("daily-report");            // another node holds the job's lock
 * expect(await guest.call("run")).toBe(0);     // so the guest skips it
 * ```
 */
export async function loadGuest(wasm: string, options: LoadGuestOptions = {}): Promise<TestGuest> {
  const { hostFunctions, node = "test-node", name = basename(wasm, ".wasm").toLowerCase(), ...entry } = options;
  const plugin = resolvePlugin({ ...entry, name, wasm }, { source: `loadGuest(${JSON.stringify(wasm)})` });
  const clock = new AdvancingClock();
  const backend = new MemoryBackend({ now: () => clock.now() });
  const service = new LockService(backend, { node });
  const others = new LockService(backend, { node: OTHER_NODE });
  const log = keptLog();
  try {
    const pool = await startPluginGuest(plugin, service, log.logger, hostFunctions);
    return new LoadedGuest({ pool, runtime: plugin.runtime, service, others, backend, clock, logs: log.lines });
  } catch (err) {
    await Promise.all([service.close(), others.close()]);
    await backend.close();
    throw err;
  }
}

/** What loadGuest hands the guest it makes. */
interface TestGuestParts {
  readonly pool: GuestPool;
  readonly runtime: GuestRuntime;
  readonly service: LockService;
  readonly others: LockService;
  readonly backend: MemoryBackend;
  readonly clock: AdvancingClock;
  readonly logs: GuestLogLine[];
}

/** A guest loaded by loadGuest: call its exports, make it see contention and expiry, read its log; close() it after the test. */
export interface TestGuest extends AsyncDisposable {
  /** The plugin's name: its keys are `<plugin>:<key>`. */
  readonly plugin: string;
  /** The runtime it runs in (its `isolation` resolved on this Node). */
  readonly runtime: GuestRuntime;
  /**
   * Another holder on the guest's backend (node OTHER_NODE), for what hold() does not cover:
   * waiting for a key, status, forceRelease, releasing a hold. Name the guest's keys with
   * `{ scope: { plugin: guest.plugin } }` (or `{ name: "<plugin>:<key>" }`); global keys are its default scope.
   */
  readonly locks: LockService;
  /** The backend's clock: `clock.advance(ms)` ends every lease with less than `ms` left. */
  readonly clock: TestClock;
  /** Every line logged for the guest so far, oldest first (the guest's own and the host's about it). */
  readonly logs: readonly GuestLogLine[];
  /** How many locks the guest holds now (kept ones, with FLAG_KEEP, outlive the call). */
  readonly heldLocks: number;
  /**
   * Calls export `name` with `args` as the host does (Host.call: numbers, and strings for an
   * export's string parameters) and resolves to what it returned: a number (i64 as a bigint), or
   * undefined. When the call returns, the locks it took without FLAG_KEEP are released.
   * Rejects as GuestInstance.call does (UNKNOWN_EXPORT, GUEST_TRAP, GUEST_TIMEOUT, CLOSED...).
   */
  call(name: string, args?: readonly GuestArg[]): Promise<GuestValue>;
  /** Calls export `name`, which returns a string, and resolves to that string (GuestInstance.callString). */
  callString(name: string, args?: readonly GuestArg[]): Promise<string>;
  /**
   * Takes `key` as another holder would (node OTHER_NODE), so the guest finds it contended, until
   * the lease is released (`guest.locks.release(lease)`) or ends (its TTL, or `clock.advance`).
   * A mutex unless `options` name another kind. Rejects with CONTENDED when the key is held (by
   * the guest, say), and on bad input as LockService.try does.
   */
  hold(key: string, options?: HoldOptions): Promise<Lease>;
  /**
   * Stops the guest (releasing what it still holds), releases what the test holds, and frees the
   * backend. Idempotent; calls made after it reject with CLOSED. `await using` calls it too.
   */
  close(): Promise<void>;
}

/** The TestGuest loadGuest makes. */
class LoadedGuest implements TestGuest {
  readonly plugin: string;
  readonly runtime: GuestRuntime;
  readonly locks: LockService;
  readonly clock: TestClock;
  readonly logs: readonly GuestLogLine[];
  readonly #p: TestGuestParts;
  #closing: Promise<void> | undefined;

  constructor(parts: TestGuestParts) {
    this.#p = parts;
    this.plugin = parts.pool.plugin;
    this.runtime = parts.runtime;
    this.locks = parts.others;
    this.clock = parts.clock;
    this.logs = parts.logs;
  }

  get heldLocks(): number {
    return this.#p.pool.heldLocks;
  }

  call(name: string, args: readonly GuestArg[] = []): Promise<GuestValue> {
    return this.#p.pool.call(name, args);
  }

  callString(name: string, args: readonly GuestArg[] = []): Promise<string> {
    return this.#p.pool.callString(name, args);
  }

  async hold(key: string, options: HoldOptions = {}): Promise<Lease> {
    const { global = false, ttlMs = 30_000, keepalive = false, ...rest } = options;
    const scope = global ? "global" : { plugin: this.plugin };
    const lease = await this.locks.try(key, { ...rest, ttlMs, keepalive, scope });
    if (!lease) throw new LockhostError("CONTENDED", `hold: ${global ? "global" : this.plugin}:${key} is held already`);
    return lease;
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const { pool, service, others, backend } = this.#p;
    await pool.close();
    // What a lease the clock ended fails to release (LOST) is no news here.
    await Promise.all([service.close(), others.close()]);
    await backend.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
