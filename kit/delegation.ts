// The atomic steps of lock delegation (host/locking/delegation.ts): a host that holds a mutex for
// one local caller keeps the backend lock while its other local callers wait and hands the key
// between them without a round trip. The host does all of that above the backends; a backend only
// adds two steps: a grant that reserves a block of fences, and the notice that another host wants
// the key. Optional: a backend without them (LockBackend.delegation absent) serves every
// acquisition as before, and delegation is silently off on it.
import type { ReleaseWatch } from "./common.js";
import type { MutexAcquireRequest, MutexAcquireResult } from "./mutex.js";

/** One delegated grant: a mutex acquisition that reserves `block` fences. */
export interface DelegatedGrant extends MutexAcquireRequest {
  /**
   * Fences reserved, 2 or more: the grant's fence is the block's base, the host hands out base …
   * base + block − 1 to its local holders, and every later grant of the name, on any host and
   * after any crash, gets a fence ≥ base + block.
   */
  readonly block: number;
  /**
   * A backend owner of this host that holds the name now (its previous grant, whose block is used
   * up): it is replaced in the same atomic step, so the key is never free in between. Absent: the
   * name must be free, as for any acquisition.
   */
  readonly from?: string;
  /**
   * When the name is held by someone else: how long the requester's mark that it wants the key
   * lasts (ms, server clock). While the mark of one backend instance lasts, other instances'
   * grants of the free name are refused (contended, `retryAfterMs` the mark's remaining life), so
   * the host that gave the key up for it cannot take it straight back. 0: the requester will not
   * wait (a try): the key is not marked, and nobody is told.
   */
  readonly wantedMs: number;
}

/**
 * A backend's delegation steps (LockBackend.delegation). The grant's record is an ordinary mutex
 * record held by `owner`: renew, release, status, force-release and the loss notices
 * (LockBackend.onLost) work on it as on any other lock.
 */
export interface DelegationSteps {
  /**
   * The largest block a grant reserves (etcd: its `fence_scale`); the host asks for
   * `min(fence_block, maxBlock)`. Absent: any block.
   */
  readonly maxBlock?: number;
  /**
   * Takes `req.name` (free, or held by `req.from`) with a fence block; when someone else holds it,
   * marks it wanted by this backend instance for `req.wantedMs` (unless 0) and tells the holder's host
   * (wanted) in the same step, and answers contended.
   */
  grant(req: DelegatedGrant): Promise<MutexAcquireResult>;
  /**
   * Calls `listener` (possibly spuriously, possibly more than once) when a host marked `name` wanted
   * (grant's contended outcome). Never throws; a watch that cannot be set up resolves `ready` anyway.
   */
  wanted(name: string, listener: () => void): ReleaseWatch;
}
