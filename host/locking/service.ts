// LockService: the one place that turns backend steps into locks with a lifecycle. It
// validates input, applies scopes, mints owner tokens, tracks leases and reports lost ones.
// Backends stay atomic steps; guests and embedders both come through here. This file is the
// facade: each job lives in its own module (acquire, restore, release, renew, status, stats,
// close), working on one ServiceCore per service.
import type { KeepaliveSettings, WaitingSettings } from "./options.js";
import { LockhostError } from "../../kit/errors.js";
import type { LockBackend } from "../../kit/backend.js";
import { acquireChecked, tryChecked, type AcquireOptions } from "./acquire.js";
import { close } from "./close.js";
import { closedError, ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { resolveKeepalive, resolveWaiting } from "./options.js";
import { release, releaseAll, releaseIfHeld } from "./release.js";
import { renew, renewalHost, setKeepalive } from "./renew.js";
import { checkRequest, type CheckedRequest, type TryLockOptions } from "./request.js";
import { restore, type RestoreOptions } from "./restore.js";
import { qualify } from "./scope.js";
import { statsOf, type LockStats } from "./stats.js";
import { forceRelease, status, type LockStatus } from "./status.js";
import { list, type ListOptions, type LockListPage } from "./list.js";
import type { LockEventListener, LockEventType } from "./events.js";
import { validateWaitMs } from "./validate.js";

export type { AcquireOptions } from "./acquire.js";
export type { CheckedRequest, TryLockOptions } from "./request.js";
export type { RestoreOptions } from "./restore.js";
export type { LockStatus } from "./status.js";
export type { ListOptions, LockListing, LockListPage } from "./list.js";
export type { LockEvent, LockEventListener, LockEventType } from "./events.js";

/** Options of a LockService. */
export interface LockServiceOptions {
  /** This host's node name, recorded as the holder of every lock it takes. */
  readonly node: string;
  /**
   * How keepalive leases are renewed (defaults KEEPALIVE_DEFAULTS: renew at half the TTL, 3
   * retries, 10% margin, 20 ms batches). Validated by the constructor (INVALID_ARGUMENT).
   */
  readonly keepalive?: Partial<KeepaliveSettings>;
  /** How waiting acquisitions fall back to polling (default: at most 1,000 ms between tries, jittered). */
  readonly waiting?: Partial<WaitingSettings>;
}

/** Options of withLock. */
export interface WithLockOptions extends Omit<AcquireOptions, "waitMs" | "keepalive"> {
  /** Wait up to this long for the key (default 0: reject with CONTENDED at once when held). */
  readonly waitMs?: number;
  /** Renew the lease while `fn` runs (default true: `fn` may take longer than the TTL). */
  readonly keepalive?: boolean;
}

/** Validated, scoped locking over one backend, shared by every guest of a host. */
export class LockService {
  readonly #core: ServiceCore;

  constructor(backend: LockBackend, options: LockServiceOptions) {
    this.#core = new ServiceCore({
      backend,
      node: options.node,
      keepalive: resolveKeepalive(options.keepalive),
      pollIntervalMs: resolveWaiting(options.waiting).pollIntervalMs,
      renewalHost,
    });
  }

  /** A snapshot of this service's counters (see LockStats). */
  stats(): LockStats {
    return statsOf(this.#core);
  }

  /** The backend's kind ("memory", "redis", "pg"). */
  get backendKind(): string {
    return this.#core.backend.kind;
  }

  /** Whether the backend is shared between host processes. */
  get distributed(): boolean {
    return this.#core.backend.distributed;
  }

  /** How many leases this service currently holds. */
  get heldCount(): number {
    return this.#core.held.size;
  }

  /**
   * Takes `key` if it is free. Resolves to a Lease when acquired and to null when someone
   * else holds it (contention is not an error); rejects with a LockhostError on bad input
   * (INVALID_ARGUMENT) or a backend failure (BACKEND_UNAVAILABLE). Rejects with CLOSED once
   * close() has started, also when the backend answers after that: a lock acquired then is
   * released on the backend at once, so close() never leaves a lease nobody can release.
   */
  tryLock(key: string, options: TryLockOptions): Promise<Lease | null> {
    // Not async: the lock path is measured in microseconds, and one more frame is one more microtask.
    if (this.#core.closing) return Promise.reject(closedError());
    let request: CheckedRequest;
    try {
      request = checkRequest(key, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return tryChecked(this.#core, request);
  }

  /**
   * tryLock for a request already checked by checkRequest: no input is checked again.
   * @internal For the guest runtime, which checks its inputs at its own boundary.
   */
  tryChecked(request: CheckedRequest): Promise<Lease | null> {
    return tryChecked(this.#core, request);
  }

  /**
   * Takes `key`, waiting up to `options.waitMs` for its holder to release it. Waiters on this
   * host are served in arrival order; each is woken by a release (on any host sharing the
   * backend), by the end of the holder's lease, or, as a fallback, by jittered polling.
   * Rejects with TIMEOUT (`details.waitedMs`) when the key stayed held, with the signal's
   * reason when `options.signal` aborts, and like tryLock on bad input or a backend failure.
   */
  async acquire(key: string, options: AcquireOptions): Promise<Lease> {
    if (this.#core.closing) throw closedError();
    const request = checkRequest(key, options);
    return acquireChecked(this.#core, request, validateWaitMs(options.waitMs), options.signal);
  }

  /**
   * acquire for a request already checked by checkRequest, with `waitMs` already validated
   * (validateWaitMs): no input is checked again.
   * @internal For the guest runtime, which checks its inputs at its own boundary.
   */
  acquireChecked(request: CheckedRequest, waitMs: number, signal?: AbortSignal): Promise<Lease> {
    return acquireChecked(this.#core, request, waitMs, signal);
  }

  /**
   * Runs `fn` holding `key`, and always releases it afterwards. `fn` gets an AbortSignal that
   * aborts when the lock is lost (or when `options.signal` aborts) and the Lease. With
   * `waitMs` 0 (the default) a held key rejects at once with CONTENDED. Keepalive is on by
   * default. Resolves to what `fn` returns; a failed release is not an error of the call (the
   * lock ends at its TTL).
   */
  async withLock<T>(
    key: string,
    fn: (signal: AbortSignal, lease: Lease) => Promise<T> | T,
    options: WithLockOptions,
  ): Promise<T> {
    const taking = { ...options, keepalive: options.keepalive ?? true };
    options.signal?.throwIfAborted();
    const lease = options.waitMs !== undefined && options.waitMs !== 0 ? await this.acquire(key, { ...taking, waitMs: options.waitMs }) : await this.tryLock(key, taking);
    if (!lease) throw new LockhostError("CONTENDED", `lock ${qualify(key, options.scope ?? "global")} is held by someone else`);
    try {
      const signal = options.signal ? AbortSignal.any([lease.signal, options.signal]) : lease.signal;
      return await fn(signal, lease);
    } finally {
      await this.releaseIfHeld(lease);
    }
  }

  /**
   * A Lease for a lock taken by another process (or another guest) that handed over its owner
   * token, so this one can renew or release it. Rejects with NOT_FOUND when nobody holds
   * `key`, OWNERSHIP_MISMATCH when someone else does, ALREADY_RELEASED when this service
   * released that owner's lock itself. A lease this service already holds is returned as is.
   */
  restore(key: string, owner: string, options: RestoreOptions = {}): Promise<Lease> {
    return restore(this.#core, key, owner, options);
  }

  /** Turns keepalive on or off for a held lease. */
  setKeepalive(lease: Lease, on: boolean): void {
    setKeepalive(this.#core, lease, on);
  }

  /**
   * Extends `lease` to `ttlMs` (default: its original TTL) from now on the server's clock.
   * Rejects with LOST when the lock expired or changed hands, ALREADY_RELEASED after release.
   */
  renew(lease: Lease, ttlMs: number = lease.ttlMs): Promise<void> {
    return renew(this.#core, lease, ttlMs);
  }

  /**
   * Releases `lease`. Rejects with ALREADY_RELEASED on a second release, and with LOST when
   * the lease had already ended: then nothing is deleted, whoever holds the key now keeps it.
   */
  release(lease: Lease): Promise<void> {
    return release(this.#core, lease);
  }

  /**
   * One page of the locks held now on the backend, by any host: fully qualified names, holder,
   * fence, age, remaining lease, and this host's waiters; owner tokens are not listed.
   * @throws LockhostError INVALID_ARGUMENT (a bad limit or cursor), BACKEND_UNAVAILABLE, CLOSED.
   */
  list(options?: ListOptions): Promise<LockListPage> {
    return list(this.#core, options);
  }

  /**
   * Tells `listener` what happens to locks on this service from now on: acquired, released,
   * lost, force-released, and each wait's end (or only the `types` given). Returns the
   * function that stops it. An event nobody listens to is never built.
   */
  onEvent(listener: LockEventListener, types?: readonly LockEventType[]): () => void {
    return this.#core.events.on(listener, types);
  }

  /**
   * Resolves once the backend answers a trivial request; rejects with BACKEND_UNAVAILABLE
   * (`details.permanent` = 1 when retrying cannot help) or CLOSED.
   */
  ping(): Promise<void> {
    this.#core.checkOpen();
    return this.#core.backendCall(() => this.#core.backend.ping());
  }

  /** Who holds the fully qualified lock `name` (as logs and `lockhost status` show it). */
  status(name: string): Promise<LockStatus> {
    return status(this.#core, name);
  }

  /**
   * Deletes the lock `name` whoever holds it (an operator action); true when one was held.
   * When this service itself held it, that lease is lost at once (its signal aborts), rather
   * than at its next renewal.
   */
  forceRelease(name: string): Promise<boolean> {
    return forceRelease(this.#core, name);
  }

  /**
   * Releases `lease` if it is still held, for callers cleaning up (auto-release, schedules,
   * shutdown): a lease that had already ended or been released is not a failure here.
   * Resolves to the error of a release that did fail (the lock then ends at its TTL).
   */
  releaseIfHeld(lease: Lease): Promise<LockhostError | undefined> {
    return releaseIfHeld(this.#core, lease);
  }

  /** The lease this service holds for the owner token `owner`, if any (restore hands out that one). */
  leaseOf(owner: string): Lease | undefined {
    return this.#core.held.get(owner);
  }

  /** Releases every lease this service holds; failures are returned, not thrown. */
  releaseAll(): Promise<LockhostError[]> {
    return releaseAll(this.#core);
  }

  /**
   * Refuses new acquisitions (tryLock rejects with CLOSED from now on), waits for the ones
   * in flight, releases every lease, then closes the backend (unless `closeBackend: false`).
   * Later calls reject with CLOSED. Calling it again returns the first call's promise.
   * Resolves to the errors of releases that failed; those locks end at their TTL.
   */
  close(options: { closeBackend?: boolean } = {}): Promise<LockhostError[]> {
    return close(this.#core, options.closeBackend ?? true);
  }
}
