// Starts a real guest in the worker runtime on a given LockService, without a whole Host.
import type { Logger } from "pino";
import { globalKeyMatcher } from "../../host/locking/scope.js";
import type { LockService } from "../../host/locking/service.js";
import { GuestLocks } from "../../host/runtime/guest-locks.js";
import { loadGuestModule } from "../../host/runtime/guest-module.js";
import { WorkerGuest } from "../../host/runtime/worker/worker-guest.js";
import { guestWasm } from "./guests.js";

/** Options of startGuest. */
export interface TestGuestOptions {
  readonly plugin?: string;
  readonly globalKeys?: readonly string[];
  readonly callTimeoutMs?: number;
  readonly memoryLimitMib?: number;
  readonly kind?: "test" | "example";
}

/** A WorkerGuest running `wasm` (a built guest's name) for plugin `options.plugin`. */
export async function startGuest(wasm: string, locks: LockService, log: Logger, options: TestGuestOptions = {}): Promise<WorkerGuest> {
  const plugin = options.plugin ?? "test";
  const module = await loadGuestModule(plugin, guestWasm(wasm, options.kind), (options.memoryLimitMib ?? 4) * 2 ** 20);
  const guestLog = log.child({ plugin });
  const guestLocks = new GuestLocks(locks, { plugin, allowsGlobal: globalKeyMatcher(options.globalKeys ?? []) }, guestLog);
  return WorkerGuest.start({ module, locks: guestLocks, callTimeoutMs: options.callTimeoutMs ?? 5_000, log: guestLog });
}
