// How the host API names a lock outside an acquisition: a reference (a key in `options.scope`,
// or `{ name }`, the fully qualified name that logs and `lockhost status` show) and its kind
// (`options.kind`, the mutex by default). Every verb that takes a lock it does not hold (status,
// forceRelease, release by owner, restore) reads both here, so they all name locks one way.
import { LockhostError } from "../../kit/errors.js";
import { checkKind, LOCK_KINDS, MUTEX, type LockKind } from "../../kit/kinds.js";
import { scopeOf } from "./request.js";
import { qualify, type Scope } from "./scope.js";
import { validateKey, validateName, validateOptions } from "./validate.js";

/** A lock by its key (in `options.scope`, default "global") or by its full name. */
export type LockRefInput = string | { readonly name: string };

/** Options naming a lock by reference: its scope (for a key) and its kind. */
export interface LockRefOptions {
  /** Where a key lives (default "global"), as in tryLock; not with `{ name }`. */
  readonly scope?: Scope;
  /** The lock's kind (default "mutex"): a mutex "a" and a read/write lock "a" are two locks. */
  readonly kind?: LockKind;
}

/** A checked reference: the full name and the kind. */
export interface CheckedRef {
  readonly name: string;
  readonly kind: LockKind;
}

/**
 * `ref` and `options` checked (INVALID_ARGUMENT naming the input at fault). A key that starts
 * with "global:" without an explicit scope is refused: it is almost always a full name passed
 * where a key belongs, and would silently name "global:global:…".
 */
export function checkRef(ref: unknown, options: LockRefOptions | undefined, among: readonly LockKind[] = LOCK_KINDS): CheckedRef {
  validateOptions(options, "options");
  const kind = options?.kind === undefined ? MUTEX.kind : checkKind(options.kind, among);
  return { name: nameOf(ref, options), kind };
}

/** The full name `ref` stands for (see checkRef). */
export function nameOf(ref: unknown, options: { readonly scope?: Scope } | undefined): string {
  if (typeof ref === "object" && ref !== null && !Array.isArray(ref)) {
    if (options?.scope !== undefined) throw new LockhostError("INVALID_ARGUMENT", "scope must not be given with { name }: a full name carries its scope");
    return validateName((ref as { name?: unknown }).name);
  }
  if (typeof ref !== "string") throw new LockhostError("INVALID_ARGUMENT", `key must be a string or { name }, got ${ref === null ? "null" : typeof ref}`);
  validateKey(ref);
  const scope = scopeOf(options);
  if (options?.scope === undefined && ref.startsWith("global:")) {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `key ${JSON.stringify(ref)} looks like a full lock name: pass { name: ${JSON.stringify(ref)} } for a full name, ` +
        `the key without its scope prefix, or scope "global" explicitly for a key that starts with "global:"`,
    );
  }
  return qualify(ref, scope);
}

/**
 * The key an acquisition takes for `ref`, and options with its scope: a key as given (its scope
 * in `options`), or a full name split at its first ':' into its scope and key.
 */
export function keyOf<O extends { readonly scope?: Scope }>(ref: unknown, options: O): { readonly key: string; readonly options: O } {
  if (typeof ref === "string") return { key: ref, options };
  const name = nameOf(ref, options);
  const at = name.indexOf(":");
  if (at <= 0 || at === name.length - 1)
    throw new LockhostError("INVALID_ARGUMENT", `name ${JSON.stringify(name)} is not a full lock name ("global:<key>" or "<plugin>:<key>")`);
  const prefix = name.slice(0, at);
  const scope: Scope = prefix === "global" ? "global" : { plugin: prefix };
  return { key: name.slice(at + 1), options: { ...options, scope } };
}
