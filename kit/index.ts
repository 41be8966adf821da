// lockhost/backend: the public door for backends. A backend package imports only this: the
// LockBackend interface it implements, the descriptor it exports, the config-schema builders
// for its `[locking.<name>]` table, the errors it raises, and the helpers backends share.
export type {
  Acquired,
  AcquireRequest,
  AcquireResult,
  HandoffResult,
  Holder,
  HolderRecord,
  KeyPage,
  KeyRecord,
  KindSteps,
  ListRequest,
  LockBackend,
  LockMode,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "./backend.js";
export { MAX_PERMITS } from "./common.js";
export { MutexSteps, StepsByKind, type LockPage, type LockRecord, type MutexAcquireRequest, type MutexAcquireResult, type MutexHandoffResult, type MutexStore } from "./mutex.js";
export {
  checkKind,
  isQueueKind,
  QUEUE_KINDS,
  SPEC_KINDS,
  ELECTION,
  KINDS,
  kindChoices,
  kindRow,
  LOCK_KINDS,
  type KindRow,
  type LimitRule,
  type LockKind,
  type QueueKind,
  type SpecKind,
} from "./kinds.js";
export { defineBackend, type BackendConfigMap, type BackendContext, type BackendDescriptor } from "./descriptor.js";
export { completeDefaultsOf, defaultsOf, field, table, tomlKey, type FieldKind, type FieldSpec, type Fields, type TableProblem, type TableSchema } from "./schema.js";
export { LockhostError, isCode, isPermanent, isRetryable, markPermanent, toLockhostError, type AbiErrorCode, type ErrorCode } from "./errors.js";
export { DeadlineQueue, type Timed } from "./deadline-queue.js";
export { ReleaseListeners } from "./release-listeners.js";
export { maskUrl, redactUrlSecrets, scrubberFor, type Scrubber } from "./redact.js";
export { readTlsFiles, tlsFields, tlsOptionsOf, tlsProblem, tlsRefusal, TLS_REFUSED, TLS_REFUSED_PATTERN, type TlsConfig, type TlsFiles } from "./tls.js";
