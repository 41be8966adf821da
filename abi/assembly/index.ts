// lockhost guest SDK for AssemblyScript (ABI version 1, see abi/ABI.md).
//
//     import { tryLock, withLock, Lock, GLOBAL, KEEP } from "lockhost";
//
//     // REQUIRED in every guest's entry file: the host refuses a module
//     // without this export (it reports the ABI version the guest was built for).
//     export { lockhost_abi_version } from "lockhost";
//
//     export function run(): void {
//       const r = tryLock("nightly", 30_000);
//       const lock = r.lock;               // narrow through a local
//       if (lock) {
//         // ... work, using lock.fence() with any resource that checks fences ...
//         lock.release();
//       } else if (r.contended) {
//         trace("someone else has it");
//       } else {
//         trace("failed: " + r.error!.toString());
//       }
//     }
//
// Waiting, keepalive and lost locks:
//
//     // Wait up to 5 s for the key; the host renews it while held (KEEPALIVE).
//     const r = acquire("nightly", 10_000, 5_000, KEEP | KEEPALIVE);
//     if (r.timedOut) trace("still busy after 5 s: " + lastError());
//
//     // Optional: the host calls this export (between calls) when a lock this
//     // guest holds is lost; handle 0 is the lock of the scheduled call.
//     export function lockhost_on_lost(handle: i32): void {
//       trace("lost lock " + handle.toString());
//     }
//
// Build with the project's asconfig.json (it sets `importMemory`, which the ABI
// requires: the host supplies `env.memory` and caps its size).
//
// Nothing here aborts: every failure comes back as a value (`LockError`, an error
// inside a result, or a negative code where the doc says so). Contention is not
// an error. Locks still held when the export returns are released by the host
// unless they were taken with `KEEP`; if the export traps, every lock of the
// instance is released.

// The ABI constants (status codes, flags, limits, ABI_VERSION), from the one
// source shared with the host.
export * from "../status";

// The raw imports, for advanced use (see bindings.ts).
export * from "./bindings";

// Locks, their results and errors.
export * from "./lock";

// Issue 14's guest-side shapes, each in its own file.
export { withLockCtx } from "./context";
export { KeyStatus, KeyStatusResult, keyStatusOf, parseKeyStatus } from "./key-status";
export { lockhost_alloc, lockhost_free } from "./args";

// What a guest can do under its lock: grants, config, log levels, host function replies, HTTP.
export { capability, configValue, log, reply, BytesResult, HttpResponse, httpRequest } from "./capabilities";

// Several keys all or nothing, in the host's canonical order.
export { LocksResult, tryLocks, acquireLocks, releaseLocks, canonicalOrder } from "./lock-set";

// Leader election: campaign, proclaim, resign, who leads (leader.ts).
export { tryCampaign, campaign, proclaim, resign, leaderOf } from "./leader";
