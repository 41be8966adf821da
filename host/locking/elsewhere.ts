// Where else a lock of a name's key is held, for the operator who asked about a free name: the
// same key in the other scope ("global:k" for "p:k", and back) and the other kinds of the name
// and of that one. A lock looked up under the wrong scope or kind otherwise reads "not held".
import type { LockKind } from "../../kit/kinds.js";
import type { ServiceCore } from "./core.js";
import { servedKinds } from "./kinds.js";
import { otherScopeName } from "./scope.js";
import { validateName } from "./validate.js";

/** A lock by its full name and kind. */
export interface LockRef {
  readonly name: string;
  readonly kind: LockKind;
}

/**
 * The locks held now that share `name`'s key but not its scope or kind (`kind`), in kind-table
 * order, each asked of the backend once; those of kinds the backend does not serve are skipped,
 * and so is one whose look fails: this is a hint beside an answer, and must not fail it (a pg
 * install that never made the read/write tables, a third-party backend without a kind).
 */
export async function heldElsewhere(core: ServiceCore, name: string, kind: LockKind): Promise<LockRef[]> {
  const other = otherScopeName(name);
  const names = other !== undefined && fits(other) ? [name, other] : [name];
  const refs = servedKinds(core.backend).flatMap((k) => names.filter((n) => k !== kind || n !== name).map((n) => ({ name: n, kind: k })));
  const held = await Promise.allSettled(refs.map((ref) => core.backendCall(() => isHeld(core, ref))));
  return refs.filter((_, i) => held[i]!.status === "fulfilled" && (held[i] as PromiseFulfilledResult<boolean>).value);
}

async function isHeld(core: ServiceCore, { name, kind }: LockRef): Promise<boolean> {
  return ((await core.steps(kind).status(name))?.holders.length ?? 0) > 0;
}

/** Whether a derived name is one the backend may be asked about (a name at the length limit has no longer twin). */
function fits(name: string): boolean {
  try {
    validateName(name);
    return true;
  } catch {
    return false;
  }
}
