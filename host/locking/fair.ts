// The mutex's short forms (tryLock, acquire, withLock) take `fair: true` for the fair mutex
// (kit/kinds.ts): one option rather than a fourth family of verbs, since a fair mutex is taken,
// held and released exactly as a mutex is; only who gets it next differs.
import { FAIR, MUTEX, type LockSpec } from "../../kit/kinds.js";
import { validateFlag } from "./validate.js";

/** The option of the mutex's short forms that makes the mutex fair. */
export interface FairOption {
  /**
   * Take the key's fair mutex instead of its mutex: waiters on every host are served first come,
   * first served, and a try is refused while anyone waits (default false). A fair mutex "a" and
   * a mutex "a" are two locks: every party of a key must agree on it.
   */
  readonly fair?: boolean;
}

/** The spec of a mutex short form's `options`: FAIR with `fair: true`, else MUTEX (INVALID_ARGUMENT for a non-boolean). */
export function mutexSpecOf(options: FairOption | undefined): LockSpec {
  return validateFlag(options?.fair, "fair") === true ? FAIR : MUTEX;
}
