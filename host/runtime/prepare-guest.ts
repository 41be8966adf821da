// Everything a guest instance runs with, made from what its plugin is granted: the module
// checked against its grants, its view of the lock service, its capabilities (HTTP, host
// functions) and what its local operations answer. The one place that wires them, so the host,
// the tests and the bench start guests alike.
import type { Logger } from "pino";
import type { LogLevel } from "../config/types.js";
import { abiLogLevel } from "./guest-log.js";
import { globalKeyMatcher } from "../locking/scope.js";
import type { LockService } from "../locking/service.js";
import type { HostFunctions } from "./capabilities/functions.js";
import { GuestCapabilities } from "./capabilities/guest-capabilities.js";
import { createHttpClient, type HttpGrant } from "./capabilities/http/index.js";
import { grantedCapabilities } from "./capabilities/table.js";
import { GuestLocks } from "./guest-locks.js";
import { loadGuestModule, type GuestModule } from "./guest-module.js";
import type { GuestShellOptions } from "./guest-shell.js";

/** What a guest is loaded with. */
export interface GuestGrantOptions {
  readonly plugin: string;
  /** Path of its .wasm. */
  readonly wasm: string;
  readonly memoryLimitMib: number;
  readonly globalKeys?: readonly string[];
  /** The [plugins.http] grant; absent: no HTTP. */
  readonly http?: HttpGrant;
  /** Host function namespaces the plugin's config grants. */
  readonly functions?: readonly string[];
  /** The functions the embedder registered (only granted namespaces reach the guest). */
  readonly hostFunctions?: HostFunctions;
  /** The plugin's [plugins.config] values. */
  readonly config?: Readonly<Record<string, string>>;
  /** Its lines below this level are dropped (default: the logger's level). */
  readonly logLevel?: LogLevel;
  /** The plugin may import WASI basics (host/runtime/wasi.ts); default false. */
  readonly wasi?: boolean;
  /** The SHA-256 (hex) its .wasm must have ([[plugins]] sha256). */
  readonly sha256?: string;
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
  const module = await loadGuestModule(o.plugin, o.wasm, o.memoryLimitMib * 2 ** 20, { functions: namespaces, granted, wasi: o.wasi ?? false, ...(o.sha256 !== undefined && { sha256: o.sha256 }) });
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
    ...(o.http && { http: { grant: o.http, client: createHttpClient(o.plugin, o.http) } }),
    functions: module.functions.map((f) => ({ ...f, fn: registered[f.module]![f.name]!, qualified: `${f.module}.${f.name}` })),
  });
  const grants = {
    capabilities: grantedCapabilities({ ...(o.http && { http: o.http }), functions: [...namespaces] }),
    config: { ...o.config },
    logLevel: abiLogLevel(guestLog.level),
  };
  return { module, locks, caps, grants, log: guestLog };
}
