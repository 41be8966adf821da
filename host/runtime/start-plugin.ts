// Starts the guests of one [[plugins]] entry: the host's one way to load a plugin (Host.start,
// a reload, `lockhost check` and lockhost/testing's loadGuest all come through here), kept apart
// from host.ts so that loading a plugin does not load the admin listener or the metrics.
import type { Logger } from "pino";
import type { PluginConfig } from "../config/types.js";
import type { LockService } from "../locking/service.js";
import type { HostFunctions } from "./capabilities/functions.js";
import type { GuestRecorder } from "./guest-recorder.js";
import { GuestPool } from "./guest-pool.js";
import { prepareGuests } from "./prepare-guest.js";
import { startGuestInstance } from "./start-guest.js";

/**
 * Starts the guest of one [[plugins]] entry in its runtime, on `locks`, with the host functions
 * it is granted: a pool of its `instances` (one module, each instance its own memory, handles and
 * locks); `recorder` is told of every instance's calls and faults (the host's metrics, per plugin).
 */
export async function startPluginGuest(
  plugin: PluginConfig,
  locks: LockService,
  log: Logger,
  functions: HostFunctions = {},
  recorder?: GuestRecorder,
): Promise<GuestPool> {
  // The entry is handed on whole: each capability reads its own keys of it.
  const shells = await prepareGuests(locks, log, { ...plugin, plugin: plugin.name, hostFunctions: functions }, plugin.instances);
  const started = await Promise.allSettled(
    shells.map((shell) => startGuestInstance({ ...shell, runtime: plugin.runtime, callTimeoutMs: plugin.callTimeoutMs, ...(recorder && { recorder }) })),
  );
  const members = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await Promise.all(members.map((m) => m.close()));
    throw failed.reason;
  }
  return new GuestPool(members, shells[0]!.module.sha256);
}
