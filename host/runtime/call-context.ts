// What an operation's implementation gets besides its arguments, from the runtime serving the
// call. Its own file: the lock operations and the capabilities both read it.
import type { WaitLimit } from "./guest-locks.js";

/** What an operation's implementation gets besides its arguments. */
export interface CallContext {
  /** How long a waiting acquisition may last within the running call's time limit (worker runtime). */
  readonly waitLimit: () => WaitLimit | undefined;
  /** For a host function call: which of the guest's function imports it is. */
  readonly fn?: number;
}
