// The one thing a resource must remember to refuse a stale holder: per lock, the highest fence
// it accepted. Behind an interface so a service picks where that lives (memory, PostgreSQL, ...).

/** What {@link FenceStore.accept} decided. */
export interface FenceAcceptance {
  /** Whether the fence was above every fence accepted for the lock before, and is now recorded. */
  readonly accepted: boolean;
  /**
   * The highest fence accepted for the lock after the call: the fence itself when accepted;
   * when refused, the one at or above it that made it stale (`undefined` only if the record
   * vanished meanwhile, e.g. a table emptied by hand).
   */
  readonly last: bigint | undefined;
}

/**
 * Where a resource keeps, per lock, the highest fence it accepted. `accept` must be atomic:
 * of two calls with the same fence, exactly one is accepted, and once a fence is accepted no
 * lower or equal one ever is. A store never forgets a lock on its own: forgetting would let
 * the next stale fence in.
 */
export interface FenceStore {
  /** Accepts `fence` iff it is strictly above the last fence accepted for `lock`, recording it. */
  accept(lock: string, fence: bigint): Promise<FenceAcceptance>;
}
