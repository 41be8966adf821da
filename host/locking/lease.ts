import type { Holder } from "./backend.js";

/** Where a lease stands, as the host last saw it. */
export type LeaseState = "held" | "released" | "lost";

/** One acquisition: the host-side record of a held lock. */
export class Lease {
  /** Server clock, ms since epoch; moves on renew. */
  expiresAtMs: number;
  /** Host monotonic clock (performance.now()) by which the lease ends at the latest. */
  deadline: number;
  /** "held" until released ("released") or found ended by renew/release ("lost"). */
  state: LeaseState = "held";

  constructor(
    /** Fully qualified lock name, e.g. "billing:nightly". */
    readonly name: string,
    /** The owner token: renew and release compare-and-set on it. */
    readonly owner: string,
    /** Strictly increasing per key across holders. */
    readonly fence: number,
    /** The TTL the lock was taken with; renew reuses it by default. */
    readonly ttlMs: number,
    /** Who holds the lock: the plugin (or "host") and this host's node name. */
    readonly holder: Holder,
    /** Server clock, ms since epoch. */
    readonly acquiredAtMs: number,
    /** Initial value of the expiresAtMs field. */
    expiresAtMs: number,
    /** Initial value of the deadline field. */
    deadline: number,
  ) {
    this.expiresAtMs = expiresAtMs;
    this.deadline = deadline;
  }
}
