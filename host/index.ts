// The public TypeScript API of lockhost, for embedders. The package entry is a composition
// root: it registers the built-in backends. RedisBackend and PgBackend are not re-exported here
// (that would load ioredis and pg for every user): they are `lockhost/redis` and `lockhost/pg`.
import { BUILTIN_BACKENDS } from "../plugins/backends/index.js";
import { registerBackend } from "./registry/registry.js";

for (const descriptor of BUILTIN_BACKENDS) registerBackend(descriptor);

export * as status from "../abi/status.js";
export { Host, type HostOptions, type UnreleasedLock } from "./host.js";
export { loadConfig, parseConfig, resolveConfig } from "./config/load.js";
export type * from "./config/types.js";
export { LockhostError, type ErrorCode, type AbiErrorCode, isCode, isRetryable } from "../kit/errors.js";
export type { AcquireRequest, AcquireResult, Holder, HolderRecord, KeyRecord, KindSteps, LockBackend, ReleaseResult, RenewResult } from "../kit/backend.js";
export { MAX_PERMITS, type LockMode } from "../kit/common.js";
export { Lease, type LeaseState } from "./locking/lease.js";
export {
  LockService,
  type AcquireOptions,
  type FairOption,
  type LockRef,
  type LockRefOptions,
  type LockServiceOptions,
  type LockStatus,
  type LockKind,
  type LockSpec,
  type LockRefInput,
  type LockedFn,
  type HolderStatus,
  type SpecOptions,
  type TryOptions,
  type WaitOptions,
  type WithOptions,
  type StatusOptions,
  type ReleaseOptions,
  type ReleaseOutcome,
  type RestoreOptions,
  type TryLockOptions,
  type WithLockOptions,
} from "./locking/service.js";
export type { LockStats } from "./locking/stats.js";
export { LockSet, MAX_SET_KEYS } from "./locking/lock-set.js";
/** The kind table, and the shared specs of the common kinds (spread them into an acquisition's options). */
export { FAIR, KINDS, LOCK_KINDS, MUTEX, READ, WRITE } from "../kit/kinds.js";
export { startAdminServer, type AdminServer, type AdminServerOptions, type AdminStatsBody } from "./admin/server.js";
export { qualify, type Scope } from "./locking/scope.js";
export { MAX_NAME_BYTES, MAX_OWNER_LENGTH, OWNER_PATTERN } from "./locking/validate.js";
export { DEFAULT_KEEPALIVE } from "./locking/options.js";
export type { GuestInstance, GuestValue } from "./runtime/guest-instance.js";
export type { HeldLock, HostFunction, HostFunctionContext, HostFunctionResult, HostFunctions } from "./runtime/capabilities/functions.js";
export { ENCODED_LOCK_HEADER, FENCE_HEADER, LOCK_HEADER } from "./runtime/capabilities/guest-capabilities.js";
export { Scheduler, scheduleLockKey, type TickEvent, type TickOutcome } from "./scheduler/scheduler.js";
export { createBackend, chosenBackend } from "./registry/create.js";
export { backendDescriptor, backendNames, registerBackend } from "./registry/registry.js";
export { loadBackendPackages } from "./registry/packages.js";
export type { BackendDescriptor, BackendContext } from "../kit/descriptor.js";
export { BUILTIN_BACKENDS, MemoryBackend, etcdBackend, memoryBackend, pgBackend, redisBackend, type MemoryBackendOptions } from "../plugins/backends/index.js";
