// The backends with read/write locks and semaphores, for the suites that run on each of them.
import type { LockBackend } from "../../kit/backend.js";
import { MemoryBackend } from "../../plugins/backends/memory/index.js";

/** One backend to run a shared-kinds suite on. */
export interface SharedBackendTarget {
  readonly name: string;
  /** Whether two instances share locks (then each host gets its own instance, as in production). */
  readonly distributed: boolean;
  create(): Promise<LockBackend> | LockBackend;
}

/** memory, and the network backends whose shared steps have landed. */
export function sharedBackends(): SharedBackendTarget[] {
  return [{ name: "memory", distributed: false, create: () => new MemoryBackend() }];
}
