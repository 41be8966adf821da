// Starts a real guest in a given runtime on a given LockService, without a whole Host; and
// the runtimes this Node can run, for the guest suites that run once per runtime.
import type { Logger } from "pino";
import type { Runtime } from "../../abi/ops.js";
import type { LockService } from "../../host/locking/service.js";
import type { GuestInstance } from "../../host/runtime/guest-instance.js";
import { prepareGuest, type GuestGrantOptions } from "../../host/runtime/prepare-guest.js";
import { jspiAvailable } from "../../host/runtime/jspi.js";
import { startGuestInstance } from "../../host/runtime/start-guest.js";
import { WorkerGuest } from "../../host/runtime/worker/worker-instance.js";
import { guestWasm } from "./guests.js";

/**
 * The runtimes the guest suites run against on this Node: the worker runtime always, the inline
 * one where JSPI exists (npm test runs the guest suites again on a Node with JSPI when this one
 * has none: scripts/test.mjs).
 */
export const GUEST_RUNTIMES: readonly Runtime[] = jspiAvailable() ? ["worker", "inline"] : ["worker"];

/** Options of startGuest: a plugin's grants (host functions, http, config, log level) among them. */
export interface TestGuestOptions extends Partial<Omit<GuestGrantOptions, "wasm">> {
  readonly callTimeoutMs?: number;
  readonly kind?: "test" | "example";
  /** The plugin may import WASI basics (`wasi = true`). */
  readonly wasi?: boolean;
  /** The worker runtime unless said. */
  readonly runtime?: Runtime;
}

async function parts(wasm: string, locks: LockService, log: Logger, options: TestGuestOptions) {
  const { kind, runtime: _runtime, callTimeoutMs, ...grants } = options;
  const plugin = options.plugin ?? "test";
  const shell = await prepareGuest(locks, log, { ...grants, plugin, wasm: guestWasm(wasm, kind), memoryLimitMib: options.memoryLimitMib ?? 4 });
  return { ...shell, callTimeoutMs: callTimeoutMs ?? 5_000 };
}

/** A guest running `wasm` (a built guest's name) for plugin `options.plugin`, in `options.runtime`. */
export async function startGuest(wasm: string, locks: LockService, log: Logger, options: TestGuestOptions = {}): Promise<GuestInstance> {
  return startGuestInstance({ ...(await parts(wasm, locks, log, options)), runtime: options.runtime ?? "worker" });
}

/** A guest in the worker runtime, for the cases only it has (time limits, a dying thread). */
export async function startWorkerGuest(wasm: string, locks: LockService, log: Logger, options: TestGuestOptions = {}): Promise<WorkerGuest> {
  return WorkerGuest.start(await parts(wasm, locks, log, options));
}
