// Starts a guest instance in the runtime its plugin resolved to: the one place that knows
// both runtimes, so the host, the tests and the bench start guests alike.
import type { Runtime } from "../../abi/ops.js";
import type { GuestInstance } from "./guest-instance.js";
import type { GuestShellOptions } from "./guest-shell.js";
import { InlineGuest } from "./inline/inline-guest.js";
import { WorkerGuest } from "./worker/worker-instance.js";

/** Options of startGuestInstance. */
export interface StartGuestOptions extends GuestShellOptions {
  readonly runtime: Runtime;
  /** The worker runtime's time limit per call and per (re)start; an inline guest has none. */
  readonly callTimeoutMs: number;
}

/** A running guest instance; rejects with ABI_UNSUPPORTED, GUEST_TIMEOUT or RUNTIME_UNAVAILABLE. */
export function startGuestInstance(options: StartGuestOptions): Promise<GuestInstance> {
  const { runtime, callTimeoutMs, ...shell } = options;
  return runtime === "inline" ? InlineGuest.start(shell) : WorkerGuest.start({ ...shell, callTimeoutMs });
}
