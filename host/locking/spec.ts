// Which kind of lock an acquisition takes, read from its options: `kind` (a row of kit/kinds.ts;
// the mutex when absent), `mode` where the row has several, the row's limit field (a semaphore's
// `permits`), and `fair: true`, the mutex's one switch (a fair mutex is taken, held and released
// exactly as a mutex is; only who gets it next differs). One reading for every verb.
import { LockhostError } from "../../kit/errors.js";
import { checkKind, FAIR, KINDS, MUTEX, READ, SPEC_KINDS, WRITE, type LockSpec, type SpecKind } from "../../kit/kinds.js";
import { validateFlag } from "./validate.js";

/** The option of the mutex's forms that makes the mutex fair. */
export interface FairOption {
  /**
   * Take the key's fair mutex instead of its mutex: waiters on every host are served first come,
   * first served, and a try is refused while anyone waits (default false). The same as
   * `kind: "fair"`. A fair mutex "a" and a mutex "a" are two locks: every party of a key must
   * agree on it.
   */
  readonly fair?: boolean;
}

/**
 * The spec fields of an acquisition's options: none (a mutex, fair with `fair: true`), or a lock
 * spec: `{ kind: "rw", mode: "shared" }`, `{ kind: "semaphore", permits: 3 }`, `{ kind: "fair" }`.
 */
export type SpecOptions = ({ readonly kind?: "mutex" } & FairOption) | Exclude<LockSpec, { readonly kind: "mutex" }>;

/** The spec `options` name (INVALID_ARGUMENT naming the field at fault); the ready-made frozen specs where one fits. */
export function specOf(options: SpecOptions | undefined): LockSpec {
  const given = options as { kind?: unknown; mode?: unknown; permits?: unknown; fair?: unknown } | undefined;
  if (given?.kind === undefined || given.kind === MUTEX.kind) {
    if (given?.mode !== undefined && given.mode !== "exclusive")
      throw new LockhostError("INVALID_ARGUMENT", `mode must be "exclusive" or absent for a mutex, got ${show(given.mode)}`);
    if (given?.permits !== undefined) throw new LockhostError("INVALID_ARGUMENT", `permits is for ${limitKinds()}, not a mutex`);
    return validateFlag(given?.fair, "fair") === true ? FAIR : MUTEX;
  }
  const kind: SpecKind = checkKind(given.kind, SPEC_KINDS);
  const row = KINDS[kind];
  if (given.fair !== undefined)
    throw new LockhostError("INVALID_ARGUMENT", `fair is for the mutex; kind ${kind} takes no fair option (kind "fair" is the fair mutex)`);
  const modes: readonly string[] = row.modes;
  let mode = given.mode;
  if (modes.length > 1) {
    if (!modes.includes(mode as string))
      throw new LockhostError("INVALID_ARGUMENT", `mode must be ${modes.map(show).join(" or ")} for a ${row.label}, got ${show(mode)}`);
  } else if (mode !== undefined && mode !== modes[0]) {
    throw new LockhostError("INVALID_ARGUMENT", `mode must be ${show(modes[0])} or absent for a ${row.label}, got ${show(mode)}`);
  } else {
    mode = undefined;
  }
  if (row.limit === null && given.permits !== undefined) throw new LockhostError("INVALID_ARGUMENT", `permits is for ${limitKinds()}, not a ${row.label}`);
  if (kind === FAIR.kind) return FAIR;
  if (kind === READ.kind) return mode === "shared" ? READ : WRITE;
  // The limit itself is checked with the rest of the request (checkRequest).
  return { kind, ...(mode !== undefined && { mode }), ...(row.limit !== null && { [row.limit.field]: given[row.limit.field] }) } as LockSpec;
}

/** The kinds whose row takes a limit, for messages: 'kind "semaphore"'. */
const limitKinds = (): string =>
  SPEC_KINDS.filter((kind) => KINDS[kind].limit !== null)
    .map((kind) => `kind "${kind}"`)
    .join(" or ");

const show = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : String(value));
