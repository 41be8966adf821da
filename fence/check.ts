import { fenceProblem, lockProblem } from "./rules.js";
import type { FenceStore } from "./store.js";

/**
 * What {@link checkFence} decided: `accepted` (the fence is now the lock's last), `stale` (a
 * fence at or above it was accepted before: its holder lost the lock), or `bad` (not a lock
 * name or fence at all; the store was not asked).
 */
export type FenceVerdict =
  | { readonly status: "accepted"; readonly lock: string; readonly fence: bigint }
  | { readonly status: "stale"; readonly lock: string; readonly fence: bigint; readonly last: bigint | undefined }
  | { readonly status: "bad"; readonly reason: string };

/**
 * Checks and records a fence outside HTTP (a queue consumer, an RPC handler): the same rules
 * and store as {@link fenceGuard}. Rejects only when the store does; a caller should then
 * refuse the write, since whether the fence is current is unknown.
 *
 * The acceptance is atomic per lock, not the write that follows it: see the package's
 * documentation for putting the fence in the write itself.
 */
export async function checkFence(store: FenceStore, lock: string, fence: bigint): Promise<FenceVerdict> {
  const problem = lockProblem(lock) ?? fenceProblem(fence);
  if (problem !== undefined) return { status: "bad", reason: problem };
  const { accepted, last } = await store.accept(lock, fence);
  return accepted ? { status: "accepted", lock, fence } : { status: "stale", lock, fence, last };
}
