import type { LockhostError } from "../../kit/errors.js";
import type { Holder } from "../../kit/backend.js";

/** Where a lease stands, as the host last saw it. */
export type LeaseState = "held" | "released" | "lost";

/**
 * Internal: what a Lease tells the LockService that made it. Not part of the public API (the
 * hooks are installed by the service; embedders only read leases).
 */
export interface LeaseHooks {
  /** Someone started observing the lease (signal / onLost): its end must be watched. */
  observe(lease: Lease): void;
}

/** Internal key of Lease's "mark lost" step, so only the lock service can end a lease as lost. */
export const markLost: unique symbol = Symbol("lockhost.markLost");
/** Internal key of the slot where the renewal manager keeps its entry for a watched lease. */
export const renewalEntry: unique symbol = Symbol("lockhost.renewalEntry");

/** One acquisition: the host-side record of a held lock. */
export class Lease {
  /** Server clock, ms since epoch; moves on renew. */
  expiresAtMs: number;
  /** Host monotonic clock (performance.now()) by which the lease ends at the latest. */
  deadline: number;
  /** "held" until released ("released") or found ended ("lost"). */
  state: LeaseState = "held";
  /** Whether the host's renewal manager keeps this lease alive until it is released. */
  keepalive: boolean;
  /** Why the lease was lost (a LockhostError with code LOST), once it was. */
  lostReason: LockhostError | undefined;
  readonly #hooks: LeaseHooks | undefined;
  // Made on first use only: most leases are released long before anyone would look.
  #controller: AbortController | undefined;
  #listeners: ((reason: LockhostError) => void)[] | undefined;
  #observed = false;
  /** Internal (renewal manager): its entry while it watches this lease. */
  [renewalEntry]: unknown = undefined;

  constructor(
    /** Fully qualified lock name, e.g. "billing:nightly". */
    readonly name: string,
    /** The owner token: renew and release compare-and-set on it. */
    readonly owner: string,
    /** Strictly increasing per key across holders. */
    readonly fence: number,
    /** The TTL the lock was taken with; renew and keepalive reuse it by default. */
    readonly ttlMs: number,
    /** Who holds the lock: the plugin (or "host") and this host's node name. */
    readonly holder: Holder,
    /** Server clock, ms since epoch. */
    readonly acquiredAtMs: number,
    /** Initial value of the expiresAtMs field. */
    expiresAtMs: number,
    /** Initial value of the deadline field. */
    deadline: number,
    /** Whether the renewal manager keeps the lease alive (default false). */
    keepalive = false,
    hooks?: LeaseHooks,
  ) {
    this.expiresAtMs = expiresAtMs;
    this.deadline = deadline;
    this.keepalive = keepalive;
    this.#hooks = hooks;
  }

  /**
   * Aborts when the lease is lost: a renewal was refused (the lock changed hands, was deleted
   * or force-released), could not be confirmed before the lease would end, or the lease ran
   * out without keepalive. `signal.reason` is the LockhostError (code LOST). Never aborts on
   * a normal release.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.state === "lost") this.#controller.abort(this.lostReason);
      else this.#observe();
    }
    return this.#controller.signal;
  }

  /**
   * Calls `listener` once if the lease is lost (at once if it already was); returns a function
   * that removes it. A listener that throws is ignored.
   */
  onLost(listener: (reason: LockhostError) => void): () => void {
    if (this.state === "lost") {
      safely(listener, this.lostReason!);
      return noop;
    }
    (this.#listeners ??= []).push(listener);
    this.#observe();
    return () => {
      const i = this.#listeners?.indexOf(listener) ?? -1;
      if (i >= 0) this.#listeners!.splice(i, 1);
    };
  }

  /** Internal (LockService): ends the lease as lost and tells its observers. Idempotent. */
  [markLost](reason: LockhostError): void {
    if (this.state !== "held") return;
    this.state = "lost";
    this.lostReason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const l of listeners) safely(l, reason);
  }

  /** Whether anyone watches for the loss of this lease (its `signal` was read or `onLost` used). */
  get observed(): boolean {
    return this.#observed;
  }

  #observe(): void {
    if (this.#observed || this.state !== "held") return;
    this.#observed = true;
    this.#hooks?.observe(this);
  }
}

const noop = (): void => undefined;

function safely(listener: (reason: LockhostError) => void, reason: LockhostError): void {
  try {
    listener(reason);
  } catch {
    // An observer's bug must not stop the others from hearing about the loss.
  }
}
