// Everything a guest instance runs with, made from what its plugin is granted: the module
// checked against its grants, its view of the lock service, its capabilities (HTTP, host
// functions) and what its local operations answer. The one place that wires them, so the host,
// the tests and the bench start guests alike.
import type { Logger } from "pino";
import type { PluginConfig } from "../config/types.js";
import { abiLogLevel } from "./guest-log.js";
import { globalKeyMatcher } from "../locking/scope.js";
import type { LockService } from "../locking/service.js";
import type { HostFunctions } from "./capabilities/functions.js";
import { GuestCapabilities, grantedServices } from "./capabilities/guest-capabilities.js";
import { grantedCapabilities } from "./capabilities/table.js";
import { GuestLocks } from "./guest-locks.js";
import { loadGuestModule, type GuestModule } from "./guest-module.js";
import type { GuestShellOptions } from "./guest-shell.js";

/**
 * What a guest is loaded with: its [[plugins]] entry (PluginConfig, handed on whole: each
 * capability reads its own keys), of which only the module and its memory cap are needed here.
 */
export interface GuestGrantOptions extends Partial<Omit<PluginConfig, "name" | "wasm" | "memoryLimitMib">>, Pick<PluginConfig, "wasm" | "memoryLimitMib"> {
  /** The plugin's name. */
  readonly plugin: string;
  /** The functions the embedder registered (only granted namespaces reach the guest). */
  readonly hostFunctions?: HostFunctions;
}

/** The module and services of one guest instance, checked against its grants. */
export async function prepareGuest(service: LockService, log: Logger, o: GuestGrantOptions): Promise<GuestShellOptions> {
  return (await prepareGuests(service, log, o, 1))[0]!;
}

/**
 * What each of `count` instances of one plugin runs with (a pool, `instances = N`): one module,
 * compiled and checked once, and for each instance its own view of the lock service (its handles
 * and held locks) and capabilities; with more than one, each logs with its `instance` number.
 */
export async function prepareGuests(service: LockService, log: Logger, o: GuestGrantOptions, count: number): Promise<GuestShellOptions[]> {
  const granted = o.functions ?? [];
  const registered = o.hostFunctions ?? {};
  const namespaces = new Map(granted.filter((ns) => Object.hasOwn(registered, ns)).map((ns) => [ns, new Set(Object.keys(registered[ns]!))] as const));
  const module = await loadGuestModule(o.plugin, o.wasm, o.memoryLimitMib * 2 ** 20, {
    functions: namespaces,
    granted,
    wasi: o.wasi ?? false,
    ...(o.abi !== undefined && { abi: o.abi }),
    ...(o.sha256 !== undefined && { sha256: o.sha256 }),
  });
  return Array.from({ length: count }, (_, i) => instanceShell(service, log, o, module, registered, [...namespaces.keys()], count > 1 ? i : undefined));
}

function instanceShell(
  service: LockService,
  log: Logger,
  o: GuestGrantOptions,
  module: GuestModule,
  registered: HostFunctions,
  namespaces: readonly string[],
  instance: number | undefined,
): GuestShellOptions {
  const guestLog = log.child({ plugin: o.plugin, ...(instance !== undefined && { instance }) }, o.logLevel ? { level: o.logLevel } : {});
  const locks = new GuestLocks(service, { plugin: o.plugin, allowsGlobal: globalKeyMatcher(o.globalKeys ?? []) }, guestLog);
  const caps = new GuestCapabilities({
    plugin: o.plugin,
    node: service.node,
    locks,
    log: guestLog,
    ...grantedServices(o.plugin, o),
    functions: module.functions.map((f) => ({ ...f, fn: registered[f.module]![f.name]!, qualified: `${f.module}.${f.name}` })),
  });
  const grants = {
    capabilities: grantedCapabilities({ ...o, functions: namespaces }),
    config: { ...o.config },
    logLevel: abiLogLevel(guestLog.level),
  };
  return { module, locks, caps, grants, log: guestLog };
}
