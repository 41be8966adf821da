import type { FenceAcceptance, FenceStore } from "./store.js";

/**
 * A {@link FenceStore} in this process's memory: for a single-process service, or tests. The
 * compare and the write happen in one synchronous step, so JavaScript's single thread makes
 * them atomic. It forgets everything when the process ends (a restarted service then accepts
 * any fence once), and keeps one entry per lock it ever saw.
 */
export function memoryFenceStore(): FenceStore {
  const last = new Map<string, bigint>();
  return {
    accept(lock: string, fence: bigint): Promise<FenceAcceptance> {
      const current = last.get(lock);
      if (current !== undefined && fence <= current) return Promise.resolve({ accepted: false, last: current });
      last.set(lock, fence);
      return Promise.resolve({ accepted: true, last: fence });
    },
  };
}
