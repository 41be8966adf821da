// A Lease is what a holder reads; the lock service is the only writer. Its changing state sits
// in private fields behind getters, and the one LeaseControl that can write them is taken by
// host/locking/lease-control.ts at load time, so code outside host/locking cannot move a
// lease's deadline or state, at compile time or at run time.
import { LockhostError } from "../../kit/errors.js";
import type { Holder } from "../../kit/backend.js";
import type { LockMode } from "../../kit/common.js";
import { MUTEX, type LockKind } from "../../kit/kinds.js";

/** Where a lease stands, as the host last saw it. */
export type LeaseState = "held" | "released" | "lost";

/**
 * Internal: what a Lease tells the LockService that made it. Not part of the public API (the
 * hooks are installed by the service; embedders only read leases).
 */
export interface LeaseHooks {
  /** Someone started observing the lease (signal / onLost): its end must be watched. */
  observe(lease: Lease): void;
  /** Lets go of the lease (its `await using` block ended): resolves to the error of a release the backend failed, if any. */
  dispose(lease: Lease): Promise<LockhostError | undefined>;
}

/**
 * Internal: what a new Lease is made of: its fields by name (so no two numbers can be swapped
 * unseen), with the values its changing fields start from.
 */
export interface LeaseInit extends Pick<Lease, "name" | "owner" | "fence" | "ttlMs" | "holder" | "acquiredAtMs" | "expiresAtMs" | "deadline" | "keepalive"> {
  /** The service's hooks (absent: nobody watches the lease's end). */
  readonly hooks?: LeaseHooks | undefined;
  /** What the lease holds (default a mutex, exclusive). */
  readonly kind?: LockKind;
  readonly mode?: LockMode;
}

/**
 * Internal: the one capability that changes a Lease. Only host/locking/lease-control.ts takes
 * it (see takeLeaseControl), for the modules of host/locking.
 */
export interface LeaseControl {
  /** A renewal was confirmed: the lease now ends at `expiresAtMs` (server) / `deadline` (host). */
  extend(lease: Lease, expiresAtMs: number, deadline: number): void;
  /** Turns the lease's keepalive flag on or off (the service re-plans its renewals). */
  setKeepalive(lease: Lease, on: boolean): void;
  /** release() is under way ("released"), or it failed and the lease is ours again ("held"). */
  setState(lease: Lease, state: "held" | "released"): void;
  /** Ends the lease as lost and tells its observers. Idempotent; no-op unless held. */
  markLost(lease: Lease, reason: LockhostError): void;
  /** The backend confirmed the release: the lease's signal aborts (ALREADY_RELEASED); onLost listeners are dropped. */
  markReleased(lease: Lease): void;
  /** The renewal manager's slot for the lease while it watches it (its entry, or its place among pending leases). */
  renewalEntry(lease: Lease): unknown;
  /** Sets (or clears, with undefined) the renewal manager's slot for the lease. */
  setRenewalEntry(lease: Lease, entry: unknown): void;
}

let control: LeaseControl | undefined;

/** One acquisition: the host-side record of a held lock. Read-only to everyone but the lock service. */
export class Lease implements AsyncDisposable {
  /** Fully qualified lock name, e.g. "billing:nightly". */
  readonly name: string;
  /**
   * What is held: a "mutex", a read/write lock ("rw") or a permit of a "semaphore". Each kind
   * has its own names: a mutex "a" and a read/write lock "a" are two locks.
   */
  readonly kind: LockKind;
  /** "exclusive" (a mutex, a writer) or "shared" (a reader, a semaphore permit). */
  readonly mode: LockMode;
  /** The owner token: renew and release compare-and-set on it. */
  readonly owner: string;
  /** Strictly increasing per key across holders. */
  readonly fence: number;
  /** The TTL the lock was taken with; renew and keepalive reuse it by default. */
  readonly ttlMs: number;
  /** Who holds the lock: the plugin (or "host") and this host's node name. */
  readonly holder: Holder;
  /** Server clock, ms since epoch. */
  readonly acquiredAtMs: number;
  #expiresAtMs: number;
  #deadline: number;
  #state: LeaseState = "held";
  #keepalive: boolean;
  #lostReason: LockhostError | undefined = undefined;
  /** Set once the backend confirmed a release (state "released" alone may still be undone). */
  #releaseConfirmed = false;
  readonly #hooks: LeaseHooks | undefined;
  // Made on first use only: most leases are released long before anyone would look.
  #controller: AbortController | undefined = undefined;
  #listeners: ((reason: LockhostError) => void)[] | undefined = undefined;
  #observed = false;
  /** The renewal manager's slot while it watches this lease: release() finds it without a lookup. */
  #renewalEntry: unknown = undefined;

  static {
    control = {
      extend(lease, expiresAtMs, deadline) {
        lease.#expiresAtMs = expiresAtMs;
        lease.#deadline = deadline;
      },
      setKeepalive(lease, on) {
        lease.#keepalive = on;
      },
      setState(lease, state) {
        lease.#state = state;
      },
      markLost(lease, reason) {
        lease.#lose(reason);
      },
      markReleased(lease) {
        lease.#release();
      },
      renewalEntry: (lease) => lease.#renewalEntry,
      setRenewalEntry(lease, entry) {
        lease.#renewalEntry = entry;
      },
    };
  }

  /** Internal: leases are made by the LockService (tryLock, acquire, restore), not by its users. */
  constructor(init: LeaseInit) {
    this.name = init.name;
    this.kind = init.kind ?? MUTEX.kind;
    this.mode = init.mode ?? "exclusive";
    this.owner = init.owner;
    this.fence = init.fence;
    this.ttlMs = init.ttlMs;
    this.holder = init.holder;
    this.acquiredAtMs = init.acquiredAtMs;
    this.#expiresAtMs = init.expiresAtMs;
    this.#deadline = init.deadline;
    this.#keepalive = init.keepalive;
    this.#hooks = init.hooks;
  }

  /** Server clock, ms since epoch; moves on renew. */
  get expiresAtMs(): number {
    return this.#expiresAtMs;
  }

  /** Host monotonic clock (performance.now()) by which the lease ends at the latest; moves on renew. */
  get deadline(): number {
    return this.#deadline;
  }

  /** "held" until released ("released") or found ended ("lost"). */
  get state(): LeaseState {
    return this.#state;
  }

  /** Whether the host's renewal manager keeps this lease alive until it is released (LockService.setKeepalive changes it). */
  get keepalive(): boolean {
    return this.#keepalive;
  }

  /** Why the lease was lost (a LockhostError with code LOST), once it was. */
  get lostReason(): LockhostError | undefined {
    return this.#lostReason;
  }

  /**
   * Aborts when the lease ends, so code parked on it learns that it no longer holds the lock.
   * `signal.reason` is a LockhostError that says how:
   * - code LOST: the lease was lost (a renewal was refused because the lock changed hands,
   *   was deleted or force-released; it could not be confirmed before the lease would end; or
   *   the lease ran out without keepalive);
   * - code ALREADY_RELEASED (`details.reason` "released"): it was released normally (release,
   *   tryRelease, withLock's end, close), once the backend confirmed it.
   */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#state === "lost") this.#controller.abort(this.#lostReason);
      else if (this.#releaseConfirmed) this.#controller.abort(this.#releasedReason());
      else this.#observe();
    }
    return this.#controller.signal;
  }

  /**
   * Calls `listener` once if the lease is lost (at once if it already was); returns a function
   * that removes it. A listener that throws is ignored.
   */
  onLost(listener: (reason: LockhostError) => void): () => void {
    if (this.#state === "lost") {
      safely(listener, this.#lostReason!);
      return noop;
    }
    (this.#listeners ??= []).push(listener);
    this.#observe();
    return () => {
      const i = this.#listeners?.indexOf(listener) ?? -1;
      if (i >= 0) this.#listeners!.splice(i, 1);
    };
  }

  /** Whether anyone watches for the loss of this lease (its `signal` was read or `onLost` used). */
  get observed(): boolean {
    return this.#observed;
  }

  /**
   * Releases the lock when an `await using` block that holds the lease ends
   * (`await using lease = await locks.acquire(...)`), as LockService.releaseIfHeld: nothing to
   * do for a lease released or lost already, or once its service has closed (close released
   * it, or returned why it could not). Rejects with the release's error when the backend failed
   * (BACKEND_UNAVAILABLE, TIMEOUT: the lock then ends at its TTL, no longer kept alive); when the
   * block threw too, the block's exit throws a SuppressedError carrying both.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    if (this.#state !== "held" || !this.#hooks) return;
    const failed = await this.#hooks.dispose(this);
    if (failed) throw failed;
  }

  #lose(reason: LockhostError): void {
    if (this.#state !== "held") return;
    this.#state = "lost";
    this.#lostReason = reason;
    this.#controller?.abort(reason);
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const l of listeners) safely(l, reason);
  }

  #release(): void {
    if (this.#releaseConfirmed || this.#state === "lost") return;
    this.#state = "released";
    this.#releaseConfirmed = true;
    this.#listeners = undefined;
    // The reason is made only for a signal someone holds: an Error captures a stack, which on
    // the lock path cost more than the rest of a release on the host (12% of the CPU of 16
    // concurrent try+release loops on Redis).
    if (this.#controller) this.#controller.abort(this.#releasedReason());
  }

  #releasedReason(): LockhostError {
    return new LockhostError("ALREADY_RELEASED", `lock ${this.name} (fence ${this.fence}) was released`, {
      details: { reason: "released" },
    });
  }

  #observe(): void {
    if (this.#observed || this.#state !== "held") return;
    this.#observed = true;
    this.#hooks?.observe(this);
  }
}

/**
 * Internal: hands out the one LeaseControl, once per loaded copy of this module.
 * host/locking/lease-control.ts takes it when it loads; any later taker gets INTERNAL, so a
 * module outside host/locking that tries to write leases fails loudly instead of quietly
 * sharing the power.
 */
export function takeLeaseControl(): LeaseControl {
  const taken = control;
  if (!taken) throw new LockhostError("INTERNAL", "the LeaseControl was already taken (only host/locking/lease-control.ts may take it)");
  control = undefined;
  return taken;
}

const noop = (): void => undefined;

function safely(listener: (reason: LockhostError) => void, reason: LockhostError): void {
  try {
    listener(reason);
  } catch {
    // An observer's bug must not stop the others from hearing about the loss.
  }
}
