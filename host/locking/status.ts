// The operator's view of a lock name: who holds it, and force-release. Names are fully
// qualified (scope prefix included), as logs and `lockhost status` show them.
import { LockhostError } from "../../kit/errors.js";
import type { LockRecord } from "../../kit/backend.js";
import type { ServiceCore } from "./core.js";
import { validateName } from "./validate.js";

/** The status of a lock name, as the CLI and the host API show it. */
export type LockStatus =
  | { readonly key: string; readonly held: false }
  | ({ readonly held: true } & LockRecord);

/** Who holds the lock `name` (see LockService.status). */
export async function status(core: ServiceCore, name: string): Promise<LockStatus> {
  core.checkOpen();
  validateName(name);
  const record = await core.backendCall(() => core.backend.status(name));
  return record ? { held: true, ...record } : { key: name, held: false };
}

/** Deletes the lock `name` whoever holds it; a lease of this service on it is lost at once (see LockService.forceRelease). */
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
    if (lease.name === name) {
      core.markLost(lease, new LockhostError("LOST", `lock ${name} (fence ${lease.fence}) was lost: it was force-released by an operator`));
    }
  }
  return released;
}
