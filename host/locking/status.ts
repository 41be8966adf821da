// The operator's view of a lock: who holds it, and force-release. Asked by key and scope like
// tryLock, or by the fully qualified name (scope prefix included) that logs and `lockhost
// status` show, through the *ByName variants.
import { LockhostError } from "../../kit/errors.js";
import type { LockRecord } from "../../kit/backend.js";
import type { ServiceCore } from "./core.js";
import { MUTEX } from "../../kit/kinds.js";
import { heldElsewhere, type LockRef } from "./elsewhere.js";
import { scopeOf } from "./request.js";
import { qualify, type Scope } from "./scope.js";
import { validateKey, validateName, validateOptions } from "./validate.js";

/** Options of status and forceRelease by key. */
export interface LockRefOptions {
  /** Where the key lives (default "global"), as in tryLock. */
  readonly scope?: Scope;
}

/** Options of status. */
export interface StatusOptions {
  /**
   * When the lock is free, look for locks of its key held in the other scope or of another kind
   * (`heldElsewhere`; default true). Up to five more backend reads: callers that only want
   * `held` turn it off.
   */
  readonly elsewhere?: boolean;
}

/**
 * The full name of `key` in `options.scope`, as tryLock would take it. A key that starts with
 * "global:" without an explicit scope is refused (INVALID_ARGUMENT): it is almost always a
 * full name passed where a key belongs, and would silently name "global:global:…".
 */
export function nameOfKey(key: unknown, options: LockRefOptions | undefined, method: string): string {
  validateKey(key);
  const scope = scopeOf(validateOptions(options, "options"));
  if (options?.scope === undefined && (key as string).startsWith("global:")) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `key ${JSON.stringify(key)} looks like a full lock name: pass the key without its scope prefix, ` +
        `use ${method}ByName for a full name, or give scope "global" explicitly for a key that starts with "global:"`,
    );
  }
  return qualify(key as string, scope);
}

/** The status of a lock name, as the CLI and the host API show it. */
export type LockStatus =
  | {
      readonly key: string;
      readonly held: false;
      /** Present when locks of the same key are held in the other scope or of another kind (see heldElsewhere). */
      readonly heldElsewhere?: readonly LockRef[];
    }
  | ({ readonly held: true } & LockRecord);

/** Who holds the lock `name` (see LockService.statusByName). */
export async function status(core: ServiceCore, name: string, options?: StatusOptions): Promise<LockStatus> {
  core.checkOpen();
  validateName(name);
  const record = await core.backendCall(() => core.backend.status(name));
  if (record) return { held: true, ...record };
  const elsewhere = options?.elsewhere === false ? [] : await heldElsewhere(core, name, MUTEX.kind);
  return elsewhere.length > 0 ? { key: name, held: false, heldElsewhere: elsewhere } : { key: name, held: false };
}

/** Deletes the lock `name` whoever holds it; a lease of this service on it is lost at once (see LockService.forceReleaseByName). */
export async function forceRelease(core: ServiceCore, name: string): Promise<boolean> {
  core.checkOpen();
  validateName(name);
  core.forceReleasing.add(name);
  let released: boolean;
  try {
    released = await core.backendCall(() => core.backend.forceRelease(name));
  } finally {
    core.forceReleasing.delete(name);
  }
  if (core.events.wants("force-released")) core.events.emit({ type: "force-released", name, found: released, atMs: Date.now() });
  for (const lease of core.held.values()) {
    if (lease.kind === MUTEX.kind && lease.name === name) {
      core.markLost(lease, new LockhostError("LOST", `lock ${name} (fence ${lease.fence}) was lost: it was force-released by an operator`));
    }
  }
  return released;
}
