// The operator's view of a lock of any kind: who holds it (its holders, its limit, its queue),
// and force-release. Asked by reference (a key and scope, or `{ name }`) and kind, as every verb
// of the host API names a lock (ref.ts).
import { LockhostError } from "../../kit/errors.js";
import type { Holder, LockMode } from "../../kit/backend.js";
import { MUTEX, type LockKind } from "../../kit/kinds.js";
import { kindOf, type ServiceCore } from "./core.js";
import { heldElsewhere, type LockRef } from "./elsewhere.js";
import { kindName, waitKey } from "./kinds.js";

export type { LockRefOptions } from "./ref.js";

/** Options of status. */
export interface StatusOptions {
  /**
   * When the lock is free, look for locks of its key held in the other scope or of another kind
   * (`heldElsewhere`; default true). Up to a few more backend reads: callers that only want
   * `held` turn it off.
   */
  readonly elsewhere?: boolean;
  /**
   * Show each holder's owner token (`owner`; default false). With it, anyone can release or
   * restore the lock: for an operator's tools, never for a screen or a log.
   */
  readonly owners?: boolean;
}

/** One holder of a lock, as status shows it (owner tokens left out). */
export interface HolderStatus extends Holder {
  /** "exclusive" (a mutex's holder, a writer, a leader) or "shared" (a reader, a permit). */
  readonly mode: LockMode;
  readonly fence: number;
  /** Server clock, ms since epoch. */
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** The TTL its current lease was set with, ms. */
  readonly ttlMs: number;
  readonly ttlRemainingMs: number;
  /** What a leader proclaimed (leader elections only). */
  readonly value?: string;
  /** The holder's owner token: only with StatusOptions.owners. */
  readonly owner?: string;
}

/** Who holds a lock of any kind: its holders, the limit they took it with, and its queue. */
export interface LockStatus {
  /** The fully qualified name. */
  readonly name: string;
  readonly kind: LockKind;
  /** Whether anyone holds it. */
  readonly held: boolean;
  /** Live holders in fence order: one for a mutex, a writer or a leader; none when free. */
  readonly holders: readonly HolderStatus[];
  /** A semaphore's permits as its holders took it (0 for the other kinds, and when free). */
  readonly limit: number;
  /** Exclusive waiters in the key's queue (read/write locks and fair mutexes). */
  readonly queued: number;
  /** Present when it is free and locks of the same key are held in the other scope or of another kind (see heldElsewhere). */
  readonly heldElsewhere?: readonly LockRef[];
}

/** Who holds the `kind` lock `name` (see LockService.status). */
export async function status(core: ServiceCore, name: string, kind: LockKind = MUTEX.kind, options?: StatusOptions): Promise<LockStatus> {
  core.life.checkOpen();
  const steps = core.steps(kind);
  const record = await core.backendCall(() => steps.status(name));
  const owners = options?.owners === true;
  const holders = (record?.holders ?? []).map(({ owner, holder, ...rest }): HolderStatus => ({ ...holder, ...rest, ...(owners && { owner }) }));
  const found: LockStatus = { name, kind, held: holders.length > 0, holders, limit: record?.limit ?? 0, queued: record?.queued ?? 0 };
  if (found.held || options?.elsewhere === false) return found;
  const elsewhere = await heldElsewhere(core, name, kind);
  return elsewhere.length > 0 ? { ...found, heldElsewhere: elsewhere } : found;
}

/** Removes every holder of the `kind` lock `name`; this service's leases on it are lost at once. Resolves to how many there were. */
export async function forceRelease(core: ServiceCore, name: string, kind: LockKind = MUTEX.kind): Promise<number> {
  core.life.checkOpen();
  const steps = core.steps(kind);
  const key = waitKey(kind, name);
  core.forceReleasing.add(key);
  let released: number;
  try {
    released = await core.backendCall(() => steps.forceRelease(name));
  } finally {
    core.forceReleasing.delete(key);
  }
  if (core.events.wants("force-released")) core.events.emit({ type: "force-released", ...kindOf({ kind }), name, found: released > 0, atMs: Date.now() });
  for (const lease of core.held.values()) {
    if (lease.kind === kind && lease.name === name) {
      core.markLost(lease, new LockhostError("LOST", `lock ${kindName(kind, name)} (fence ${lease.fence}) was lost: it was force-released by an operator`));
    }
  }
  return released;
}
