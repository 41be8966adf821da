// lockhost/testing: the contract suite a backend runs against itself, with vitest. It checks
// the kinds the backend declares (LockBackend.kinds) and each kind's atomic steps
// (LockBackend.steps: fences, compare-and-set renew and release, status, watch, force-release,
// listing), the lease lifecycle LockService builds on them (keepalive, lost locks, waiting woken
// by release, restore), local contention (a host's own attempts queue without a round trip, a
// release hands the key to its next waiter, other hosts' waiters are not starved), lock sets
// (tryMany / acquireMany: all or nothing, no deadlock, rollback, loss), and, unless its target
// says queueKinds: false, the queue kinds (read/write locks, semaphores, fair mutexes, and
// lock sets of them), and unless it says election: false, leader election. Every built-in backend runs exactly this suite.
//
//   import { backendContract } from "lockhost/testing";
//   backendContract("acme", { create: () => new AcmeBackend(...) });
export { backendContract, type ContractTarget } from "./backend-contract.js";
// A guest's unit test, under any test runner (vitest, node:test): see docs/guests.md "Testing a guest".
//
//   import { loadGuest } from "lockhost/testing";
//   const guest = await loadGuest("build/report.wasm");
export { loadGuest, OTHER_NODE, type HoldOptions, type LoadGuestOptions, type TestGuest } from "./test-guest.js";
export type { TestClock } from "./test-clock.js";
export type { GuestLogLine } from "./guest-logs.js";
