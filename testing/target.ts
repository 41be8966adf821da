// What a backend's test file hands the contract suites.
import type { LockBackend } from "../kit/backend.js";

/** How a backend test file provides its backend. */
export interface ContractTarget {
  /** Creates the backend under test (called once per file). */
  create(): Promise<LockBackend> | LockBackend;
  /** Frees what create() set up; the backend itself is closed by the suite. */
  dispose?(): Promise<void>;
}
