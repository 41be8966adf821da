// The operator's view of a read/write lock or a semaphore: its holders and queue, and
// force-release. The mutex's is status.ts; these take the kind beside the name.
import { LockhostError } from "../../kit/errors.js";
import type { Holder } from "../../kit/backend.js";
import type { SharedMode } from "../../kit/shared.js";
import type { SharedKind } from "../../kit/kinds.js";
import type { ServiceCore } from "./core.js";
import { kindName, waitKey } from "./kinds.js";
import { validateName } from "./validate.js";

/** One holder of a read/write lock or a semaphore, as status shows it (owner tokens left out). */
export interface SharedHolderStatus extends Holder {
  readonly mode: SharedMode;
  readonly fence: number;
  /** Server clock, ms since epoch. */
  readonly acquiredAtMs: number;
  readonly expiresAtMs: number;
  /** The TTL its current lease was set with, ms. */
  readonly ttlMs: number;
  readonly ttlRemainingMs: number;
}

/** Who holds a read/write lock or a semaphore, and how many writers queue for it. */
export interface SharedLockStatus {
  /** The fully qualified name. */
  readonly name: string;
  readonly kind: SharedKind;
  /** A semaphore's permits as its holders took it (0 for a read/write lock). */
  readonly limit: number;
  /** Live holders in fence order. */
  readonly holders: readonly SharedHolderStatus[];
  /** Writers waiting in the queue (read/write locks). */
  readonly queued: number;
}

/** The holders and queue of the `kind` lock `name`, or null when it has neither (see LockService.sharedStatusByName). */
export async function sharedStatus(core: ServiceCore, kind: SharedKind, name: string): Promise<SharedLockStatus | null> {
  core.checkOpen();
  validateName(name);
  const record = await core.backendCall(() => core.shared(kind).status(name));
  if (!record) return null;
  const holders = record.holders.map(({ owner: _owner, holder, ...rest }) => ({ ...holder, ...rest }));
  return { name, kind, limit: record.limit, holders, queued: record.queued };
}

/** Removes every holder of the `kind` lock `name`; this service's leases on it are lost at once. Resolves to how many there were. */
export async function forceReleaseShared(core: ServiceCore, kind: SharedKind, name: string): Promise<number> {
  core.checkOpen();
  validateName(name);
  const key = waitKey(kind, name);
  core.forceReleasing.add(key);
  let released: number;
  try {
    released = await core.backendCall(() => core.shared(kind).forceRelease(name));
  } finally {
    core.forceReleasing.delete(key);
  }
  if (core.events.wants("force-released")) core.events.emit({ type: "force-released", kind, name, found: released > 0, atMs: Date.now() });
  for (const lease of core.held.values()) {
    if (lease.kind === kind && lease.name === name) {
      core.markLost(lease, new LockhostError("LOST", `lock ${kindName(kind, name)} (fence ${lease.fence}) was lost: it was force-released by an operator`));
    }
  }
  return released;
}
