// LockService: the one place that turns backend steps into locks with a lifecycle. It
// validates input, applies scopes, mints owner tokens, tracks leases and reports lost ones.
// Backends stay atomic steps; guests and embedders both come through here. This file is the
// facade: each job lives in its own module (acquire, restore, release, renew, status, stats,
// close), working on one ServiceCore per service.
import { canonicalKeys, type LockSet, remainingWait, takeAll } from "./lock-set.js";
import type { DelegationSettings, KeepaliveSettings, WaitingSettings } from "./options.js";
import { LockhostError } from "../../kit/errors.js";
import type { LockBackend } from "../../kit/backend.js";
import { acquireChecked, tryChecked, type AcquireOptions } from "./acquire.js";
import { close } from "./close.js";
import { closedError, ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import { DEFAULT_KEEPALIVE, resolveDelegation, resolveKeepalive, resolveWaiting } from "./options.js";
import { release, releaseAll, releaseIfHeld } from "./release.js";
import { unsettledHost } from "./release-books.js";
import type { CleanedLock } from "./unsettled.js";
import { releaseOrThrow, releaseTarget, tryRelease, type ReleaseOptions, type ReleaseOutcome, type ReleaseTarget } from "./release-result.js";
import { renew, renewalHost, setKeepalive } from "./renew.js";
import { checkRequest, type CheckedRequest, type TryLockOptions } from "./request.js";
import { restore, type RestoreOptions } from "./restore.js";
import { statsOf, type LockStats } from "./stats.js";
import { forceRelease, status, type LockStatus, type StatusOptions } from "./status.js";
import { heldElsewhere, type LockRef } from "./elsewhere.js";
import { list, type ListOptions, type LockListPage } from "./list.js";
import { kindName } from "./kinds.js";
import { specOf, type SpecOptions } from "./spec.js";
import { checkRef, keyOf, nameOf, type LockRefInput, type LockRefOptions } from "./ref.js";
import { checkKind, LOCK_KINDS, MUTEX, type LockKind, type LockSpec } from "../../kit/kinds.js";
import { ALL_LOCK_EVENT_TYPES, type LockEventListener, type LockEventType } from "./events.js";
import { validateFlag, validateFunction, validateName, validateOptions, validateSignal, validateTtl, validateWaitMs } from "./validate.js";
import { campaign, campaignWait, electionKey, electionRequest, type CampaignOptions, type Leadership } from "./election.js";
import { observeLeader, readLeader, type LeaderInfo } from "./leader-watch.js";

export type { AcquireOptions } from "./acquire.js";
export type { CheckedRequest, TryLockOptions } from "./request.js";
export type { RestoreOptions } from "./restore.js";
export type { HolderStatus, LockStatus, StatusOptions } from "./status.js";
export type { LockRefInput, LockRefOptions } from "./ref.js";
export type { LockRef } from "./elsewhere.js";
export type { CleanedLock } from "./unsettled.js";
export type { ReleaseOptions, ReleaseOutcome } from "./release-result.js";
export type { ListOptions, LockListing, LockListPage } from "./list.js";
export type { LockEvent, LockEventListener, LockEventType } from "./events.js";
export type { LockKind, LockSpec } from "../../kit/kinds.js";
export type { FairOption, SpecOptions } from "./spec.js";
export { LockSet, MAX_SET_KEYS } from "./lock-set.js";
export { Leadership, MAX_LEADER_VALUE_BYTES, type CampaignOptions } from "./election.js";
export type { LeaderInfo } from "./leader-watch.js";

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
  /**
   * Lock delegation for hot mutexes (default: off; an acquisition's `delegate` option turns it on
   * for that acquisition). Silently off on a backend without the steps (LockBackend.delegation).
   */
  readonly delegation?: Partial<DelegationSettings>;
}

/** Options of withLock. */
export interface WithLockOptions extends Omit<AcquireOptions, "waitMs"> {
  /**
   * Wait up to this long for the key, in ms (0 to MAX_WAIT_MS, or Infinity; default 0: reject
   * with CONTENDED at once when held).
   */
  readonly waitMs?: number;
}

/** Options of try (and tryLock): the acquisition's, and which kind of lock it takes (SpecOptions; a mutex by default). */
export type TryOptions = TryLockOptions & SpecOptions;

/** Options of acquire: try's, and how long to wait. */
export type WaitOptions = AcquireOptions & SpecOptions;

/** Options of with (and withLock). */
export type WithOptions = WithLockOptions & SpecOptions;

/** What `with` runs under the lock. */
export type LockedFn<T> = (signal: AbortSignal, lease: Lease) => Promise<T> | T;

/** Reads a service's core: set by the class's static block, which alone can see #core. */
let coreOf: (service: LockService) => ServiceCore;

/**
 * The internals of `service`, for the host's own guest runtime (host/runtime/lock-calls), which
 * checks its inputs once at its own boundary and then calls the step functions (acquire.ts,
 * election.ts, restore.ts, status.ts) on them directly. The internal door: not a member of
 * LockService, and not exported from the package entry.
 * @internal
 */
export function serviceCore(service: LockService): ServiceCore {
  return coreOf(service);
}

/** Validated, scoped locking over one backend, shared by every guest of a host. */
export class LockService {
  readonly #core: ServiceCore;

  static {
    coreOf = (service) => service.#core;
  }

  constructor(backend: LockBackend, options: LockServiceOptions) {
    if (typeof backend !== "object" || backend === null || typeof backend.steps !== "function" || !Array.isArray(backend.kinds)) {
      throw new LockhostError(
        "INVALID_ARGUMENT",
        `backend must be a LockBackend (with kinds and steps(kind)), got ${backend === null ? "null" : typeof backend}`,
      );
    }
    validateOptions(options, "options", true);
    if (typeof options.node !== "string" || options.node.length === 0) {
      throw new LockhostError("INVALID_ARGUMENT", `node must be a non-empty string, got ${typeof options.node === "string" ? '""' : typeof options.node}`);
    }
    const waiting = resolveWaiting(options.waiting);
    this.#core = new ServiceCore({
      backend,
      node: options.node,
      keepalive: resolveKeepalive(options.keepalive),
      pollIntervalMs: waiting.pollIntervalMs,
      electionPollMs: waiting.electionPollMs,
      delegation: resolveDelegation(options.delegation),
      renewalHost,
      unsettledHost,
    });
  }

  /** A snapshot of this service's counters (see LockStats). */
  stats(): LockStats {
    return statsOf(this.#core);
  }

  /** This host's node name, recorded as the holder of every lock it takes. */
  get node(): string {
    return this.#core.config.node;
  }

  /** The backend's name ("memory", "redis", "pg", "etcd": LockBackend.name). */
  get backendName(): string {
    return this.#core.backend.name;
  }

  /** Whether the backend is shared between host processes. */
  get distributed(): boolean {
    return this.#core.backend.distributed;
  }

  /** How many leases this service currently holds. */
  get heldCount(): number {
    return this.#core.held.size;
  }

  // The verbs (issue 24): try, acquire, with, release, renew, status, forceRelease, list, each
  // taking a lock reference (a key in `options.scope`, default "global", or `{ name }`, a full
  // name) and, in its options, which kind of lock (SpecOptions: a mutex when none is named; a
  // read/write lock with `kind: "rw", mode`, a semaphore with `kind: "semaphore", permits`, a
  // fair mutex with `fair: true`). Every kind has the same lifecycle (keepalive on by default,
  // signal and onLost, release, renew, auto-release, close), options and errors; each kind has
  // its own names, so a mutex "a" and a read/write lock "a" are two locks. tryLock and withLock
  // are the mutex's short forms of try and with (they take the same options).

  /**
   * Takes the lock `ref` (of the kind `options` name; a mutex by default) if it can be had now.
   * Resolves to a Lease when acquired and to null when held (contention is not an error; locks
   * are not reentrant, also under the same `options.owner`): a mutex by anyone; a read lock by a
   * writer or while a writer queues; a write lock by anyone; a semaphore when all its permits are
   * taken; a fair mutex also while anyone waits for it. Keepalive is on unless `options.keepalive`
   * is false (DEFAULT_KEEPALIVE). Rejects with a LockhostError on bad input (INVALID_ARGUMENT),
   * a semaphore named with other permits than its live holders' (PERMITS_MISMATCH), a backend
   * failure (BACKEND_UNAVAILABLE), and with CLOSED once close() has started, also when the
   * backend answers after that: a lock acquired then is released on the backend at once, so
   * close() never leaves a lease nobody can release.
   */
  try(ref: LockRefInput, options: TryOptions): Promise<Lease | null> {
    return this.#try(ref, options);
  }

  /** The mutex's short form of try (the same options: `fair`, or another kind, may be named too). */
  tryLock(key: LockRefInput, options: TryOptions): Promise<Lease | null> {
    return this.#try(key, options);
  }

  /**
   * Takes the lock `ref`, waiting up to `options.waitMs` (Infinity: no limit) for it. Waiters on
   * this host are served in arrival order; each is woken by a release (on any host sharing the
   * backend), by the end of the holder's lease, or, as a fallback, by jittered polling. A waiting
   * writer (or fair mutex waiter) takes a place in the key's queue across hosts: readers arriving
   * after it wait behind it, and it leaves the queue when it gives up. Rejects with TIMEOUT when
   * the lock stayed held (`details`: `waitedMs`, `key`, `scope` — "global" or the plugin — and
   * the full `name`), with the signal's reason when `options.signal` aborts, and like try on bad
   * input or a backend failure.
   */
  async acquire(ref: LockRefInput, options: WaitOptions): Promise<Lease> {
    return this.#acquire(ref, options, specOf(options));
  }

  /**
   * Runs `fn` holding the lock `ref`, and always releases it afterwards. `fn` gets an AbortSignal
   * that aborts when the lock is lost (or when `options.signal` aborts) and the Lease. With
   * `waitMs` 0 (the default) a held lock rejects at once with CONTENDED. Keepalive is on unless
   * `options.keepalive` is false, as in try. Resolves to what `fn` returns; a failed release is
   * not an error of the call (the lock ends at its TTL).
   */
  with<T>(ref: LockRefInput, fn: LockedFn<T>, options: WithOptions): Promise<T> {
    return this.#with(ref, fn, options);
  }

  /** The mutex's short form of with (the same options). */
  withLock<T>(key: LockRefInput, fn: LockedFn<T>, options: WithOptions): Promise<T> {
    return this.#with(key, fn, options);
  }

  /**
   * Takes every key of `keys` (one kind, named in `options` as for try; one scope) or none:
   * in one canonical order (the full names' UTF-8 bytes), so callers naming the same keys in
   * any order never deadlock, and releasing the keys taken so far when one is held. A LockSet
   * (a lease and a fence per key, one signal, one `release()`) or null when a key is held.
   * INVALID_ARGUMENT for an empty list, over MAX_SET_KEYS keys, a key named twice, or an
   * `owner` (each lock gets its own); otherwise as try.
   */
  async tryMany(keys: readonly string[], options: TryOptions): Promise<LockSet | null> {
    const spec = specOf(options);
    const ordered = canonicalKeys(keys, options);
    return takeAll(ordered, { take: (key) => this.#try(key, options, spec), release: (lease) => this.release(lease) });
  }

  /**
   * tryMany, waiting up to `options.waitMs` in all for the keys, one after the other in the
   * canonical order; TIMEOUT (naming the key that stayed held) when they did not all come in
   * time, with the keys taken so far released.
   */
  async acquireMany(keys: readonly string[], options: WaitOptions): Promise<LockSet> {
    const spec = specOf(options);
    const ordered = canonicalKeys(keys, options);
    const startedAt = performance.now();
    const set = await takeAll(ordered, {
      take: (key) => this.#acquire(key, remainingWait(options, startedAt), spec),
      release: (lease) => this.release(lease),
    });
    // acquire never resolves to null: a key that stayed held rejected with TIMEOUT.
    return set!;
  }

  /** Every try of every kind. Not async: the lock path is measured in microseconds, and one more frame is one more microtask. */
  /** Every try of every kind (`spec` when the caller read it already, else from `options`). Not async: one more frame is one more microtask. */
  #try(ref: LockRefInput, options: TryOptions, spec?: LockSpec): Promise<Lease | null> {
    if (this.#core.life.closing) return Promise.reject(closedError());
    let request: CheckedRequest;
    try {
      request = requestOf(ref, options, spec ?? specOf(options));
    } catch (err) {
      return Promise.reject(err);
    }
    return tryChecked(this.#core, request);
  }

  async #acquire(ref: LockRefInput, options: AcquireOptions, spec: LockSpec): Promise<Lease> {
    if (this.#core.life.closing) throw closedError();
    const request = requestOf(ref, options, spec);
    const waitMs = validateWaitMs(options.waitMs);
    return acquireChecked(this.#core, request, waitMs, validateSignal(options.signal, "signal"));
  }

  async #with<T>(ref: LockRefInput, fn: LockedFn<T>, options: WithOptions): Promise<T> {
    validateFunction(fn, "fn");
    validateOptions(options, "options", true);
    const spec = specOf(options);
    validateSignal(options.signal, "signal");
    const taking = { ...options, keepalive: validateFlag(options.keepalive, "keepalive") ?? DEFAULT_KEEPALIVE };
    options.signal?.throwIfAborted();
    const lease =
      options.waitMs !== undefined && options.waitMs !== 0
        ? await this.#acquire(ref, { ...taking, waitMs: options.waitMs }, spec)
        : await this.#try(ref, taking, spec);
    if (!lease) throw new LockhostError("CONTENDED", `lock ${kindName(spec.kind, nameOf(ref, options))} is held by someone else`);
    try {
      const signal = options.signal ? AbortSignal.any([lease.signal, options.signal]) : lease.signal;
      return await fn(signal, lease);
    } finally {
      await this.releaseIfHeld(lease);
    }
  }

  /** Runs `step`, turning a synchronous throw (bad input) into a rejection. */
  #defer<T>(step: () => Promise<T>): Promise<T> {
    try {
      return step();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /**
   * A Lease for the lock `ref` (of `options.kind`, the mutex by default) taken by another
   * process (or another guest) that handed over its owner token, so this one can renew or
   * release it. Rejects with NOT_FOUND when nobody holds it, OWNERSHIP_MISMATCH when only others
   * do, ALREADY_RELEASED when this service released that owner's lock itself. A lease this
   * service already holds is returned as is.
   */
  restore(ref: LockRefInput, owner: string, options: RestoreOptions = {}): Promise<Lease> {
    return restore(this.#core, ref, owner, options);
  }

  /** Turns keepalive on or off for a held lease. */
  setKeepalive(lease: Lease, on: boolean): void {
    checkLease(lease);
    if (typeof on !== "boolean") throw new LockhostError("INVALID_ARGUMENT", `on must be true or false, got ${String(on)}`);
    setKeepalive(this.#core, lease, on);
  }

  /**
   * Extends `lease` to `ttlMs` (default: its original TTL) from now on the server's clock.
   * Rejects with LOST when the lock expired or changed hands, ALREADY_RELEASED after release.
   */
  renew(lease: Lease, ttlMs?: number): Promise<void> {
    try {
      checkLease(lease);
      if (ttlMs !== undefined) validateTtl(ttlMs);
    } catch (err) {
      return Promise.reject(err);
    }
    return renew(this.#core, lease, ttlMs ?? lease.ttlMs);
  }

  /**
   * Releases a lock: `release(lease)`, or `release(key, owner, { scope })` by key and owner
   * token with no Lease at hand (another process took it under an owner it shared, or chose:
   * TryLockOptions.owner). The throwing form of tryRelease: resolves when this call released
   * the lock; rejects with ALREADY_RELEASED on a second release, with LOST when the lock had
   * already ended (nothing is deleted: whoever holds the key now keeps it), and, by key and
   * owner, with NOT_FOUND when nobody holds the key. A lease of this service for that owner
   * and key is released as `release(lease)` would (its signal aborts, "released").
   */
  release(lease: Lease): Promise<void>;
  release(key: string, owner: string, options?: ReleaseOptions): Promise<void>;
  release(target: Lease | string, owner?: string, options?: ReleaseOptions): Promise<void> {
    // Not async: release(lease) hands back the lease path's own promise, not a wrapper around it
    // (an async function returning a promise costs its caller extra microtask turns).
    let checked: ReleaseTarget;
    try {
      checked = releaseTarget(target, owner, options);
    } catch (err) {
      return Promise.reject(err);
    }
    // A Lease keeps its own messages (its fence, why it ended): the lease path throws them itself.
    if (checked instanceof Lease) return release(this.#core, checked);
    return releaseOrThrow(this.#core, checked);
  }

  /**
   * Releases a lock and tells what became of it, without throwing for the lock's state:
   * "released" (this call released it), "already_released", "lost" (it had ended; nothing was
   * deleted) or "not_found" (by key and owner: nobody holds the key). Safe to call twice.
   * Takes a Lease, or a key, an owner token and `{ scope }`, as release does. Rejects only on
   * bad input (INVALID_ARGUMENT), a backend failure (BACKEND_UNAVAILABLE; the lock is then
   * still held until its TTL) or a closed service (CLOSED).
   */
  tryRelease(lease: Lease): Promise<ReleaseOutcome>;
  tryRelease(key: string, owner: string, options?: ReleaseOptions): Promise<ReleaseOutcome>;
  async tryRelease(target: Lease | string, owner?: string, options?: ReleaseOptions): Promise<ReleaseOutcome> {
    return tryRelease(this.#core, releaseTarget(target, owner, options));
  }

  /**
   * One page of the locks held now on the backend, by any host, of every kind the backend serves
   * (or of `options.kind`): fully qualified names, kind and mode (a row per holder of a
   * read/write lock or semaphore), holder, fence, age, remaining lease, and this host's waiters;
   * owner tokens are not listed.
   * @throws LockhostError INVALID_ARGUMENT (a bad limit or cursor), BACKEND_UNAVAILABLE, CLOSED.
   */
  list(options?: ListOptions): Promise<LockListPage> {
    return list(this.#core, options);
  }

  /**
   * Tells `listener` what happens to locks on this service from now on: acquired, released,
   * lost, force-released, and each wait's end (or only the `types` given; "contended", each
   * attempt that found a key held, only when named). Returns the function that stops it. An
   * event nobody listens to is never built.
   */
  onEvent(listener: LockEventListener, types?: readonly LockEventType[]): () => void {
    validateFunction(listener, "listener");
    if (types !== undefined && (!Array.isArray(types) || types.some((t) => !ALL_LOCK_EVENT_TYPES.includes(t)))) {
      throw new LockhostError("INVALID_ARGUMENT", `types must be an array of ${ALL_LOCK_EVENT_TYPES.map((t) => JSON.stringify(t)).join(", ")} when given`);
    }
    return this.#core.events.on(listener, types);
  }

  /**
   * Tells `listener` of the locks this service released by owner because a call that left them
   * behind failed (an acquisition or release that timed out in the client and ran on the
   * server all the same), once per round of such releases. Returns the function that stops it.
   */
  onCleanup(listener: (cleaned: readonly CleanedLock[]) => void): () => void {
    validateFunction(listener, "listener");
    return this.#core.unsettled.onCleaned(listener);
  }

  /**
   * Resolves once the backend answers a trivial request; rejects with BACKEND_UNAVAILABLE
   * (`details.permanent` = 1 when retrying cannot help) or CLOSED.
   */
  ping(): Promise<void> {
    this.#core.life.checkOpen();
    return this.#core.backendCall(() => this.#core.backend.ping());
  }

  /**
   * Who holds the lock `ref` (a key in `options.scope`, default "global", as try takes it, or
   * `{ name }`) of `options.kind` (default the mutex): its holders (owner tokens left out), the
   * limit they took it with, and its queue. A key starting with "global:" with no scope given is
   * refused (INVALID_ARGUMENT): it is a full name, for `{ name }`. When nobody holds it,
   * `heldElsewhere` lists the locks of that key held in the other scope or of another kind, if
   * any (unless `options.elsewhere` is false).
   */
  status(ref: LockRefInput, options?: LockRefOptions & StatusOptions): Promise<LockStatus> {
    return this.#defer(() => {
      const { name, kind } = checkRef(ref, options);
      return status(this.#core, name, kind, checkStatusOptions(options));
    });
  }

  /**
   * The locks held now that share the fully qualified `name`'s key but not its scope or `kind`
   * (default: the mutex): the same key in the other scope ("global:k" for "p:k", and back), and
   * the other kinds of both names. What status adds as `heldElsewhere` for a free lock.
   */
  heldElsewhere(name: string, kind: LockKind = MUTEX.kind): Promise<readonly LockRef[]> {
    return this.#defer(() => {
      this.#core.life.checkOpen();
      return heldElsewhere(this.#core, validateName(name), checkKind(kind, LOCK_KINDS));
    });
  }

  /**
   * Removes every holder of the lock `ref` of `options.kind` (an operator action), named as
   * status names it; resolves to how many held it (0: nobody did). This service's leases on it
   * are lost at once (their signals abort), rather than at their next renewal.
   */
  forceRelease(ref: LockRefInput, options?: LockRefOptions): Promise<number> {
    return this.#defer(() => {
      const { name, kind } = checkRef(ref, options);
      return forceRelease(this.#core, name, kind);
    });
  }

  /**
   * Releases `lease` if it is still held, for callers cleaning up (auto-release, schedules,
   * shutdown): a lease that had already ended or been released is not a failure here.
   * Resolves to the error of a release that did fail (the lock then ends at its TTL).
   */
  releaseIfHeld(lease: Lease): Promise<LockhostError | undefined> {
    try {
      checkLease(lease);
    } catch (err) {
      return Promise.reject(err);
    }
    return releaseIfHeld(this.#core, lease);
  }

  /** The lease this service holds for the owner token `owner`, if any (restore hands out that one). */
  leaseOf(owner: string): Lease | undefined {
    if (typeof owner !== "string") throw new LockhostError("INVALID_ARGUMENT", `owner must be a string, got ${typeof owner}`);
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
   *
   * `releaseTimeoutMs`: a release the backend failed (BACKEND_UNAVAILABLE, TIMEOUT) is tried
   * again, with a growing pause, for up to this long (each lease's first attempt is awaited
   * whatever the time left); each error then names its lock (details `lock`, `kind`, `fence`).
   * Without it each lease is released once.
   */
  close(options: { closeBackend?: boolean; releaseTimeoutMs?: number } = {}): Promise<LockhostError[]> {
    try {
      validateOptions(options, "options");
      validateFlag(options.closeBackend, "closeBackend");
      if (options.releaseTimeoutMs !== undefined && validateWaitMs(options.releaseTimeoutMs, "releaseTimeoutMs") === Infinity) {
        throw new LockhostError("INVALID_ARGUMENT", "releaseTimeoutMs must be a finite number of milliseconds, got Infinity");
      }
    } catch (err) {
      return Promise.reject(err);
    }
    return close(this.#core, options.closeBackend ?? true, options.releaseTimeoutMs);
  }

  // Leader election (issue 24), the kind-table row "leader": a leader holds its election's key
  // (in `options.scope`, default "global") with keepalive, its record carries the leader's value,
  // and its term is the lease's fence. Needs a backend whose leader steps have proclaim (memory,
  // redis, pg).

  /**
   * Campaigns for leadership of `election`, waiting (woken by releases, not polling) until this
   * caller leads, `options.waitMs` runs out (TIMEOUT) or `options.signal` aborts (its reason).
   * Resolves to the Leadership: its `term` (a fence, strictly increasing per election), `value`,
   * `signal` (aborted at once when the leadership is lost or resigned), `proclaim(value)` and
   * `resign()`. INVALID_ARGUMENT for bad input or a backend without elections.
   */
  async campaign(election: string, options: CampaignOptions): Promise<Leadership> {
    if (this.#core.life.closing) throw closedError();
    const request = electionRequest(election, options);
    const { waitMs, signal, value } = campaignWait(options);
    return campaign(this.#core, election, request, value, waitMs, signal);
  }

  /** Who leads `election` (in `options.scope`, default "global") now: node, value, term, since. */
  leader(election: string, options?: LockRefOptions): Promise<LeaderInfo> {
    return this.#defer(() => readLeader(this.#core, election, nameOf(electionKey(election), options)));
  }

  /**
   * Yields who leads `election` now, then each change (a new leader or term, a new value, nobody
   * leading), woken by the backend's release channel, until `options.signal` aborts, the loop
   * breaks or the service closes. Also re-reads when the leader's lease is due to end.
   */
  observe(election: string, options?: LockRefOptions & { readonly signal?: AbortSignal }): AsyncGenerator<LeaderInfo, void, undefined> {
    const name = nameOf(electionKey(election), options);
    return observeLeader(this.#core, election, name, validateSignal(options?.signal, "signal"));
  }
}

/** The checked request of an acquisition of `ref` as `spec`; a key (the common case) goes straight in, with no object made on the lock path. */
function requestOf(ref: LockRefInput, options: TryLockOptions, spec: LockSpec): CheckedRequest {
  if (typeof ref === "string") return checkRequest(ref, options, spec);
  const { key, options: scoped } = keyOf(ref, options);
  return checkRequest(key, scoped, spec);
}

/** The status options, checked (INVALID_ARGUMENT naming a bad `elsewhere`). */
function checkStatusOptions(options: StatusOptions | undefined): StatusOptions | undefined {
  validateFlag(options?.elsewhere, "elsewhere");
  validateFlag(options?.owners, "owners");
  return options;
}

/** Throws INVALID_ARGUMENT unless `lease` is a Lease (the calls that take one). */
function checkLease(lease: unknown): void {
  if (!(lease instanceof Lease)) throw new LockhostError("INVALID_ARGUMENT", `lease must be a Lease, got ${lease === null ? "null" : typeof lease}`);
}
