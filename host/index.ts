// The public TypeScript API of lockhost, for embedders.
export * as status from "../abi/status.js";
export { Host, type HostOptions } from "./host.js";
export { loadConfig, parseConfig, resolveConfig } from "./config/load.js";
export type * from "./config/types.js";
export { LockhostError, type ErrorCode, type AbiErrorCode, isCode } from "../kit/errors.js";
export type { AcquireRequest, AcquireResult, Holder, LockBackend, LockRecord, ReleaseResult, RenewResult } from "../kit/backend.js";
export { Lease, type LeaseState } from "./locking/lease.js";
export {
  LockService,
  type AcquireOptions,
  type LockServiceOptions,
  type LockStatus,
  type RestoreOptions,
  type TryLockOptions,
  type WithLockOptions,
} from "./locking/service.js";
export type { LockStats } from "./locking/stats.js";
export { startAdminServer, type AdminServer, type AdminServerOptions, type AdminStatsBody } from "./admin/server.js";
export { qualify, type Scope } from "./locking/scope.js";
export { MAX_NAME_BYTES } from "./locking/validate.js";
export type { GuestInstance, GuestValue } from "./runtime/guest-instance.js";
export { Scheduler, scheduleLockKey, type TickEvent, type TickOutcome } from "./scheduler/scheduler.js";
export { MemoryBackend, type MemoryBackendOptions } from "../plugins/backends/memory/index.js";
export { createBackend, PgBackend, RedisBackend } from "../plugins/backends/index.js";
