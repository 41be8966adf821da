// The state one LockService shares between its job modules (acquire, restore, release, renew,
// status, stats, close), and the few steps they all take. One object per service, passed to
// each job: no globals, and the facade (service.ts) stays a list of entry points.
import { ElectionSentinel } from "./election-sentinel.js";
import type { DelegationSettings, KeepaliveSettings } from "./options.js";
import { delegatingSteps, type DelegatingSteps } from "./delegation.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { Holder, LockBackend } from "../../kit/backend.js";
import type { Lease, LeaseHooks } from "./lease.js";
import { LockEvents, type LockEvent } from "./events.js";
import { leases } from "./lease-control.js";
import { HeldLeases } from "./held-leases.js";
import { ReleasedOwners } from "./released-owners.js";
import { UnsettledLocks, type UnsettledHost } from "./unsettled.js";
import { RenewalManager, type RenewalHost } from "./renewal.js";
import { verifyHeld } from "./verify.js";
import { releaseIfHeld } from "./release.js";
import { WaitQueues } from "./waiting.js";
import { stepsOf, waitKey } from "./kinds.js";
import type { KindSteps } from "../../kit/steps.js";
import { ELECTION, KINDS, MUTEX, type LockKind } from "../../kit/kinds.js";
import { ServiceLife } from "./service-life.js";
import { LockCounters } from "./stats.js";
import { endHold } from "../tracing/tracer.js";

export { closedError } from "./service-life.js";

/** What a service is told to be: its node name and how often a waiter polls. */
export interface ServiceConfig {
  /** This host's node name, recorded as the holder of every lock it takes. */
  readonly node: string;
  /** The longest pause between two tries of a waiting acquisition (jittered). */
  readonly pollIntervalMs: number;
}

/** What a ServiceCore is made of (the LockService's options, resolved). */
export interface ServiceParts {
  readonly backend: LockBackend;
  readonly node: string;
  /** Validated (resolveKeepalive). */
  readonly keepalive: KeepaliveSettings;
  /** Validated (resolveWaiting). */
  readonly pollIntervalMs: number;
  /** Validated (resolveWaiting): the election sentinel's interval, 0 for none. */
  readonly electionPollMs: number;
  /** Validated (resolveDelegation). */
  readonly delegation: DelegationSettings;
  /** The renewal manager's events, applied to the core being made (renew.ts). */
  readonly renewalHost: (core: ServiceCore) => RenewalHost;
  /** What the book of unsettled locks asks of the core being made (release-books.ts). */
  readonly unsettledHost: (core: ServiceCore) => UnsettledHost;
}

/**
 * Internal to host/locking: one LockService's shared state and its common steps. Each field is
 * one object with one job (what it was told, its life, its counters, its books of leases, its
 * waiters, renewals and events); none is a bare number or flag that any module may set.
 */
export class ServiceCore {
  readonly backend: LockBackend;
  /** What the service was told to be (frozen). */
  readonly config: ServiceConfig;
  /** Open, closing or closed, and the acquisitions in flight close() waits for. */
  readonly life = new ServiceLife();
  /** The counters LockStats reads, bumped on the lock path. */
  readonly counts = new LockCounters();
  /** Held leases by owner token (restore finds a lease this service holds by it). */
  readonly held = new HeldLeases();
  readonly renewals: RenewalManager;
  readonly waits: WaitQueues;
  /** Reads the watched elections' leaders to notice one that ended without a notice (election-sentinel.ts). */
  readonly sentinel: ElectionSentinel;
  /** Installed in every lease this service makes: an observed lease's end gets watched. */
  readonly hooks: LeaseHooks;
  /** Locks this service is force-releasing now (wait keys: name, with its kind unless a mutex): forceRelease marks their leases lost itself. */
  readonly forceReleasing = new Set<string>();
  /** What happens to locks, for logs and the dashboard (see LockService.onEvent). */
  readonly events = new LockEvents();
  /** Owner tokens released here, for restore's ALREADY_RELEASED. */
  readonly released = new ReleasedOwners();
  /** Locks whose acquisition or release failed with the outcome unknown, released by owner once the backend answers. */
  readonly unsettled: UnsettledLocks;

  /** The mutex's steps with delegation (delegation.ts), when the backend has its steps. */
  readonly delegation: DelegatingSteps | undefined;
  /** The mutex's steps, asked for on every acquisition, release and renewal: made at once, kept apart from the map. */
  readonly #mutexSteps: KindSteps | undefined;
  /** The other kinds' steps, asked for once each. */
  readonly #steps = new Map<LockKind, KindSteps>();
  /** The holder record of each plugin that took a lock here (bounded: cleared when full), and the last one asked for. */
  readonly #holders = new Map<string, Holder>();
  #lastHolder: Holder | undefined = undefined;

  constructor(parts: ServiceParts) {
    this.backend = parts.backend;
    this.delegation = delegatingSteps(parts.backend, parts.delegation);
    this.#mutexSteps = this.delegation ?? (parts.backend.kinds.includes(MUTEX.kind) ? parts.backend.steps(MUTEX.kind) : undefined);
    this.config = Object.freeze({ node: parts.node, pollIntervalMs: parts.pollIntervalMs });
    this.waits = new WaitQueues();
    // Only a backend whose locks may end silently before their lease does needs the sentinel: an
    // in-process one hears of every end, and one whose leases run to their end is re-read then.
    const silentEnds = parts.backend.distributed && parts.backend.endsOnlyAtExpiry !== true;
    this.sentinel = new ElectionSentinel((name) => this.steps(ELECTION).status(name), silentEnds ? parts.electionPollMs : 0);
    this.renewals = new RenewalManager(parts.renewalHost(this), parts.keepalive);
    this.unsettled = new UnsettledLocks(parts.unsettledHost(this));
    this.hooks = {
      observe: (lease) => this.renewals.watch(lease),
      // After close, nothing is left to do: close released the lease, or returned why it could not.
      dispose: (lease) => (this.life.closed ? Promise.resolve(undefined) : releaseIfHeld(this, lease)),
    };
    // Told by the backend that a lock was taken from under us: the lease is lost now, not at its next renewal.
    parts.backend.onLost?.(
      (backendOwner) => {
        // A delegated grant's backend owner is its first holder's: the loss is its current local holder's.
        const owner = this.delegation === undefined ? backendOwner : this.delegation.localOwnerOf(backendOwner);
        const lease = this.held.get(owner);
        // This service's own force-release marks its lease itself, with the operator as the reason.
        if (lease && !this.forceReleasing.has(waitKey(lease.kind, lease.name)))
          this.markLost(lease, new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) was lost: another process released or force-released it`));
      },
      () => void verifyHeld(this),
    );
  }

  /** The backend's steps of `kind`; INVALID_ARGUMENT naming the backend when it does not serve the kind. */
  steps(kind: LockKind): KindSteps {
    if (kind === MUTEX.kind && this.#mutexSteps !== undefined) return this.#mutexSteps;
    let steps = this.#steps.get(kind);
    if (steps === undefined) this.#steps.set(kind, (steps = stepsOf(this.backend, kind)));
    return steps;
  }

  /**
   * Takes a new lease into the service's books: held, counted, and renewed if it has keepalive.
   * `minted`: its owner token is one this service minted for it (not a caller's).
   */
  hold(lease: Lease, minted: boolean): void {
    this.held.add(lease, minted);
    this.counts.acquisitions++;
    if (lease.keepalive) this.renewals.start(lease);
    if (this.events.wants("acquired")) {
      this.events.emit(
        kinded(lease.kind, { type: "acquired", name: lease.name, fence: lease.fence, plugin: lease.holder.plugin, ttlMs: lease.ttlMs, atMs: Date.now() }),
      );
    }
  }

  /**
   * What every acquisition of `plugin` records as its holder: one frozen object per plugin,
   * shared by its leases, rather than one per attempt. A host has a handful of plugins; the
   * last one asked for is found without a lookup.
   */
  holderOf(plugin: string): Holder {
    const last = this.#lastHolder;
    if (last !== undefined && last.plugin === plugin) return last;
    let holder = this.#holders.get(plugin);
    if (holder === undefined) {
      if (this.#holders.size >= KNOWN_HOLDERS) this.#holders.clear();
      this.#holders.set(plugin, (holder = Object.freeze({ plugin, node: this.config.node })));
    }
    this.#lastHolder = holder;
    return holder;
  }

  /** Runs a backend step; any failure becomes BACKEND_UNAVAILABLE (not async: it is on the lock path). */
  backendCall<T>(step: () => Promise<T>): Promise<T> {
    try {
      return step().catch(backendFailure);
    } catch (err) {
      return backendFailure(err);
    }
  }

  /**
   * Releases a lock this service may have taken but hands to nobody. Only we know `owner`, so
   * this can delete only that orphan, never another holder's lock; if the backend does not
   * answer, it is released as soon as it does (unsettled.ts). `granted`: the backend granted it
   * (not a failed acquisition). Resolves after the first try; never rejects.
   */
  giveBack(name: string, owner: string, kind: LockKind = MUTEX.kind, granted = false): Promise<void> {
    return this.unsettled.giveBack(kind, name, owner, granted);
  }

  /** Throws unless `lease` is still held (ALREADY_RELEASED, LOST) and the service open (CLOSED). */
  checkUsable(lease: Lease): void {
    this.life.checkOpen();
    if (lease.state === "released") {
      throw new LockhostError("ALREADY_RELEASED", `lock ${lease.name} (fence ${lease.fence}) was already released`);
    }
    if (lease.state === "lost") {
      throw new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) was lost earlier: its lease ended`);
    }
  }

  /** Ends `lease` as lost for `reason`: out of the books, no more renewals, observers told. */
  markLost(lease: Lease, reason: LockhostError): void {
    this.counts.lost++;
    this.held.delete(lease.owner);
    this.renewals.forget(lease);
    leases.markLost(lease, reason);
    endHold(lease, reason);
    // Its line's waiters no longer count it as this host's hold: the key's release notice (or the
    // lease's end, for a lease that ran out) wakes them to try. Not woken here: the backend may
    // still be letting go of it (PostgreSQL unlocks a force-released lock after telling the loss).
    this.waits.forget(waitKey(lease.kind, lease.name), lease);
    if (this.events.wants("lost")) {
      const atMs = Date.now();
      this.events.emit({
        type: "lost",
        ...kindOf(lease),
        name: lease.name,
        fence: lease.fence,
        plugin: lease.holder.plugin,
        reason: reason.message,
        heldMs: atMs - lease.acquiredAtMs,
        atMs,
      });
    }
  }
}

/** How many plugins' holder records holderOf keeps before it starts over. */
const KNOWN_HOLDERS = 1_024;

/** An event's kind field: absent for a mutex, so mutex events look as they always did. */
export function kindOf(lease: { readonly kind: LockKind }): { kind?: LockKind } {
  return KINDS[lease.kind].isDefault ? {} : { kind: lease.kind };
}

/**
 * `event` with its kind field (kindOf) for a lock of `kind`. A mutex's event is the literal as
 * built, with no spread: acquisitions and releases build one per operation while a feed listens.
 */
export function kinded<E extends LockEvent>(kind: LockKind, event: E): E {
  return KINDS[kind].isDefault ? event : { ...event, kind };
}

function backendFailure(err: unknown): never {
  throw backendError(err);
}

/** What a failed backend step is to the caller: BACKEND_UNAVAILABLE, unless it already was a LockhostError. */
export function backendError(err: unknown): LockhostError {
  return toLockhostError(err, "BACKEND_UNAVAILABLE");
}

/** The error of a renew or release the backend refused: the lease had ended or changed hands. */
export function lostError(lease: Lease, reason: "not_found" | "mismatch"): LockhostError {
  const why = reason === "mismatch" ? "another owner holds it now" : "it expired or was force-released";
  return new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) is no longer held: ${why}; nothing was changed`);
}
