// lockhost/backend: the public door for backends. A backend package imports only this: the
// LockBackend interface it implements (with the records and results of its steps), MutexSteps
// for a mutex kept in one record per name, the descriptor it exports, the config-schema builders
// for its `[locking.<name>]` table, the errors it raises, and the helpers a backend of a network
// server uses (release listeners for watch, URL redaction, TLS files). The host's own helpers
// stay behind it. Importing it changes nothing. api/backend.api.md lists this surface (npm run api).
export type {
  Acquired,
  AcquireRequest,
  DelegatedGrant,
  DelegationSteps,
  AcquireResult,
  HandoffResult,
  Holder,
  HolderRecord,
  KindSteps,
  ListRequest,
  LockBackend,
  LockMode,
  LockState,
  LockStatePage,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "./backend.js";
export { MAX_PERMITS } from "./common.js";
export {
  MutexSteps,
  StepsByKind,
  type LockPage,
  type LockRecord,
  type MutexAcquireRequest,
  type MutexAcquireResult,
  type MutexHandoffResult,
  type MutexStore,
} from "./mutex.js";
export { KINDS, LOCK_KINDS, type KindRow, type LockKind, type QueueKind } from "./kinds.js";
export { defineBackend, type BackendConfigMap, type BackendContext, type BackendDescriptor } from "./descriptor.js";
export { completeDefaultsOf, field, table, type FieldSpec, type Fields, type TableProblem, type TableSchema } from "./schema.js";
export { LockhostError, isPermanent, markPermanent, type ErrorCode } from "./errors.js";
export { ReleaseListeners } from "./release-listeners.js";
export { maskUrl, scrubberFor, type Scrubber } from "./redact.js";
export { readTlsFiles, tlsFields, tlsOptionsOf, tlsProblem, tlsRefusal, TLS_REFUSED_PATTERN, type TlsConfig, type TlsFiles } from "./tls.js";
