// lockhost/testing: the contract suite a backend runs against itself, with vitest. It checks
// the atomic steps of LockBackend (fences, compare-and-set renew and release, status, watch,
// force-release) and the lease lifecycle LockService builds on them (keepalive, lost locks,
// waiting woken by release, restore), and, unless its target says sharedKinds: false, the steps
// of read/write locks and semaphores (LockBackend.shared). Every built-in backend runs exactly this suite.
//
//   import { backendContract } from "lockhost/testing";
//   backendContract("acme", { create: () => new AcmeBackend(...) });
export { backendContract, type ContractTarget } from "./backend-contract.js";
