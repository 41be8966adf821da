// The memory backend's options: `[locking.memory]` has no settings (its schema is empty), and an
// embedder or a test may pass MemoryBackendOptions (a clock) to the constructor.
import { table } from "../../../kit/index.js";

/** `[locking.memory]`: no settings. */
export type MemoryConfig = Record<string, never>;

/** The schema of `[locking.memory]`. */
export const memoryConfigSchema = table<MemoryConfig>({ doc: "the memory backend (no settings)", fields: {} });

/** Options of the memory backend. */
export interface MemoryBackendOptions {
  /**
   * The backend's clock in whole ms since the epoch (return integers: every time the backend
   * reports is derived from it). Defaults to a monotonic clock anchored at process start,
   * floored to whole ms, so a wall-clock jump can neither expire nor extend a lease.
   */
  readonly now?: () => number;
}
