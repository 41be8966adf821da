// `lockhost`: the public TypeScript API, for embedders: a Host started from a config, or a
// LockService on a backend of your choice, the leases and lock sets they hand out, config
// loading, errors, host functions, and the options and results of those calls. Backend authors
// import `lockhost/backend`, testers `lockhost/testing`; RedisBackend, PgBackend and EtcdBackend
// are `lockhost/redis`, `lockhost/pg` and `lockhost/etcd` (re-exporting them here would load their
// client libraries for every user). api/lockhost.api.md lists this surface (npm run api).
//
// Importing this module changes nothing: it loads no client library and registers nothing. This
// entry is a composition root: the first call that needs the backend registry (loading or
// resolving a config, registerBackend) registers the built-in backends there, before anything else.
import { BUILTIN_BACKENDS } from "../plugins/backends/index.js";
import * as load from "./config/load.js";
import type { ConfigInput, LockhostConfig } from "./config/types.js";
import type { BackendDescriptor } from "../kit/descriptor.js";
import * as registry from "./registry/registry.js";

let builtinsRegistered = false;

/** Registers the built-in backends once, on the first call that needs the registry. */
function withBuiltins(): void {
  if (builtinsRegistered) return;
  for (const descriptor of BUILTIN_BACKENDS) registry.registerBackend(descriptor);
  builtinsRegistered = true;
}

/**
 * Reads and validates a TOML config file. Relative wasm paths resolve against the file's folder.
 *
 * @param env variables for `${VAR}` substitution; defaults to `process.env`.
 * @throws LockhostError CONFIG_INVALID when the file cannot be read or is invalid.
 */
export function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env, options: load.LoadOptions = {}): Promise<LockhostConfig> {
  withBuiltins();
  return load.loadConfig(path, env, options);
}

/**
 * Validates the text of a TOML config. Pure: it reads no file and no process state, so a
 * `[locking] packages` backend must be registered already (loadConfig loads them).
 *
 * @param opts.source names the file in messages and is kept as LockhostConfig.source.
 * @param opts.baseDir the folder relative wasm paths resolve against.
 * @param opts.env variables for `${VAR}` substitution; when omitted, no variable is set.
 * @throws LockhostError CONFIG_INVALID naming the file, table and key at fault.
 */
export function parseConfig(text: string, opts: { source: string; baseDir: string; env?: NodeJS.ProcessEnv }): LockhostConfig {
  withBuiltins();
  return load.parseConfig(text, opts);
}

/**
 * Builds a config in code: applies the defaults and the same checks as parseConfig (keys are
 * the camelCase names of LockhostConfig; no environment substitution).
 *
 * @throws LockhostError CONFIG_INVALID naming the field at fault.
 */
export function resolveConfig(partial: ConfigInput): LockhostConfig {
  withBuiltins();
  return load.resolveConfig(partial);
}

/**
 * Makes a backend package's descriptor available to configs under its name, beside the
 * built-ins. Registering the same descriptor twice is a no-op; another under a taken name is refused.
 * @throws LockhostError CONFIG_INVALID for a bad or taken name.
 */
export function registerBackend(descriptor: BackendDescriptor): void {
  withBuiltins();
  registry.registerBackend(descriptor);
}

export type { LoadOptions } from "./config/load.js";
export type {
  AdminSettings,
  ConfigInput,
  DelegationSettings,
  HostSettings,
  KeepaliveSettings,
  LockhostConfig,
  LockingConfig,
  PluginConfig,
  PluginInput,
  ScheduledConfig,
  ScheduledInput,
  WaitingSettings,
} from "./config/types.js";
export { Host, type HostOptions, type ReloadReport, type UnreleasedLock } from "./host.js";
export type { CallOptions, GuestArg, GuestInstance, GuestValue } from "./runtime/guest-instance.js";
export { LockhostError, type ErrorCode, type AbiErrorCode, isCode, isRetryable } from "../kit/errors.js";
export type { LockBackend } from "../kit/backend.js";
export type { BackendDescriptor } from "../kit/descriptor.js";
export { MAX_PERMITS, type LockMode } from "../kit/common.js";
export { Lease, type LeaseState } from "./locking/lease.js";
export {
  LockService,
  Leadership,
  MAX_LEADER_VALUE_BYTES,
  type AcquireOptions,
  type CampaignOptions,
  type FairOption,
  type HolderStatus,
  type LeaderInfo,
  type ListOptions,
  type LockedFn,
  type LockEvent,
  type LockEventListener,
  type LockEventType,
  type LockKind,
  type LockListing,
  type LockListPage,
  type LockRef,
  type LockRefInput,
  type LockRefOptions,
  type LockServiceOptions,
  type LockSpec,
  type LockStatus,
  type ReleaseOptions,
  type ReleaseOutcome,
  type RestoreOptions,
  type SpecOptions,
  type StatusOptions,
  type TryLockOptions,
  type TryOptions,
  type WaitOptions,
  type WithLockOptions,
  type WithOptions,
} from "./locking/service.js";
export type { LockStats } from "./locking/stats.js";
export { LockSet, MAX_SET_KEYS } from "./locking/lock-set.js";
/** The kind table, and the specs of the common kinds (spread them into an acquisition's options). */
export { FAIR, KINDS, LOCK_KINDS, MUTEX, READ, WRITE } from "../kit/kinds.js";
export { qualify, type Scope } from "./locking/scope.js";
export { MAX_NAME_BYTES, MAX_OWNER_LENGTH, OWNER_PATTERN } from "./locking/validate.js";
export { DEFAULT_KEEPALIVE } from "./locking/options.js";
export type { HeldLock, HostFunction, HostFunctionContext, HostFunctionResult, HostFunctions } from "./runtime/capabilities/functions.js";
export { Scheduler, scheduleLockKey, type TickCounts, type TickEvent, type TickOutcome } from "./scheduler/scheduler.js";
export { startAdminServer, type AdminServer, type AdminServerOptions } from "./admin/server.js";
export { MemoryBackend, type MemoryBackendOptions } from "../plugins/backends/memory/index.js";
