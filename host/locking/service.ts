// LockService: the one place that turns backend steps into locks with a lifecycle. It
// validates input, applies scopes, mints owner tokens, tracks leases and reports lost ones.
// Backends stay atomic steps; guests and embedders both come through here.
import { v4 as uuidv4 } from "uuid";
import type { KeepaliveSettings, WaitingSettings } from "../config/types.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { AcquireResult, Holder, LockBackend, LockRecord, RenewRequest, RenewResult } from "../../kit/backend.js";
import { Lease, markLost, type LeaseHooks } from "./lease.js";
import { resolveKeepalive, resolveWaiting } from "./options.js";
import { RenewalManager } from "./renewal.js";
import { qualify, type Scope } from "./scope.js";
import type { LockStats } from "./stats.js";
import { validateKey, validateName, validateTtl, validateWaitMs } from "./validate.js";
import { jittered, Waiter, WaitQueues } from "./waiting.js";

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

/** How many released owner tokens a service remembers at least (at most twice this), so restore can say ALREADY_RELEASED. */
const RELEASED_MEMORY = 1_024;

/** Options of one acquisition. */
export interface TryLockOptions {
  /** The lease, in ms (1 to MAX_TTL_MS), on the backend's clock. */
  readonly ttlMs: number;
  /** Where the key lives: a plugin's namespace or "global" (the default for host-side callers). */
  readonly scope?: Scope;
  /** Recorded as the holder's plugin; defaults to the scope's plugin, or "host". */
  readonly plugin?: string;
  /**
   * Renew the lease automatically (at `renewAtRatio` of the TTL, batched) until it is
   * released; if a renewal is refused or cannot be confirmed in time, the lease is lost and
   * its `signal` aborts. Default false.
   */
  readonly keepalive?: boolean;
}

/** Options of a waiting acquisition. */
export interface AcquireOptions extends TryLockOptions {
  /**
   * The longest wait for the key, in ms (0 to MAX_WAIT_MS): it is taken as soon as the holder
   * releases it (or its lease ends); after `waitMs` the call rejects with TIMEOUT.
   */
  readonly waitMs: number;
  /** Aborts the wait: the call then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** Options of withLock. */
export interface WithLockOptions extends Omit<AcquireOptions, "waitMs" | "keepalive"> {
  /** Wait up to this long for the key (default 0: reject with CONTENDED at once when held). */
  readonly waitMs?: number;
  /** Renew the lease while `fn` runs (default true: `fn` may take longer than the TTL). */
  readonly keepalive?: boolean;
}

/** Options of restore. */
export interface RestoreOptions {
  /** Where the key lives (default "global"). */
  readonly scope?: Scope;
  /** TTL for renewals of the restored lease (default: the TTL its current lease was set with). */
  readonly ttlMs?: number;
  /** Keep the restored lease alive (see TryLockOptions.keepalive). Default false. */
  readonly keepalive?: boolean;
}

/** The status of a lock name, as the CLI and the host API show it. */
export type LockStatus =
  | { readonly key: string; readonly held: false }
  | ({ readonly held: true } & LockRecord);

/** Validated, scoped locking over one backend, shared by every guest of a host. */
export class LockService {
  readonly #backend: LockBackend;
  readonly #node: string;
  /** Held leases by owner token (restore finds a lease this service holds by it). */
  readonly #held = new Map<string, Lease>();
  readonly #renewals: RenewalManager;
  readonly #waits: WaitQueues;
  readonly #pollIntervalMs: number;
  readonly #hooks: LeaseHooks = { observe: (lease) => this.#renewals.watch(lease) };
  /**
   * Recently released owner tokens, for restore's ALREADY_RELEASED: a bounded memory in two
   * generations (the current one becomes the old one when full), so a release costs one Set
   * add and nothing is ever deleted one by one.
   */
  #released = new Set<string>();
  #releasedBefore = new Set<string>();
  #acquisitions = 0;
  #contended = 0;
  #renewalsOk = 0;
  #renewalsFailed = 0;
  #lost = 0;
  #waitsDone = 0;
  #waitTimeouts = 0;
  #waitTimeMs = 0;
  /** Acquisitions still waiting on the backend; close() waits for them. */
  readonly #acquiring = new Set<Promise<unknown>>();
  /** Set when close() starts: no new acquisitions; leases held can still renew and release. */
  #closing = false;
  /** Set when close() is done: every call rejects with CLOSED. */
  #closed = false;
  #closePromise?: Promise<LockhostError[]>;

  constructor(backend: LockBackend, options: LockServiceOptions) {
    this.#backend = backend;
    this.#node = options.node;
    const keepalive = resolveKeepalive(options.keepalive);
    this.#pollIntervalMs = resolveWaiting(options.waiting).pollIntervalMs;
    this.#waits = new WaitQueues(backend);
    this.#renewals = new RenewalManager(
      {
        renewMany: (reqs) => this.#renewMany(reqs),
        renewed: (lease, expiresAtMs, sentAt) => {
          this.#renewalsOk++;
          lease.expiresAtMs = expiresAtMs;
          lease.deadline = sentAt + lease.ttlMs;
        },
        renewalFailed: () => void this.#renewalsFailed++,
        lost: (lease, reason, stillHeld) => {
          if (lease.state === "held") this.#markLost(lease, reason);
          // Only we know the owner token: giving it back can delete nothing but our own lock.
          if (stillHeld) void this.#giveBack(lease.name, lease.owner);
        },
      },
      keepalive,
    );
  }

  /** A snapshot of this service's counters (see LockStats). */
  stats(): LockStats {
    return {
      held: this.#held.size,
      keepalive: this.#renewals.keepaliveCount,
      acquisitions: this.#acquisitions,
      contended: this.#contended,
      renewalsOk: this.#renewalsOk,
      renewalsFailed: this.#renewalsFailed,
      lost: this.#lost,
      waiters: this.#waits.size,
      waits: this.#waitsDone,
      waitTimeouts: this.#waitTimeouts,
      waitTimeMsTotal: this.#waitTimeMs,
      // Each tick that renews sends exactly one batch.
      renewalTicks: this.#renewals.batches,
      renewalBatches: this.#renewals.batches,
      renewalTimers: this.#renewals.timers,
    };
  }

  /** The backend's kind ("memory", "redis", "pg"). */
  get backendKind(): string {
    return this.#backend.kind;
  }

  /** Whether the backend is shared between host processes. */
  get distributed(): boolean {
    return this.#backend.distributed;
  }

  /** How many leases this service currently holds. */
  get heldCount(): number {
    return this.#held.size;
  }

  /**
   * Takes `key` if it is free. Resolves to a Lease when acquired and to null when someone
   * else holds it (contention is not an error); rejects with a LockhostError on bad input
   * (INVALID_ARGUMENT) or a backend failure (BACKEND_UNAVAILABLE). Rejects with CLOSED once
   * close() has started, also when the backend answers after that: a lock acquired then is
   * released on the backend at once, so close() never leaves a lease nobody can release.
   */
  tryLock(key: string, options: TryLockOptions): Promise<Lease | null> {
    if (this.#closing) return Promise.reject(closedError());
    // Not async: the lock path is measured in microseconds, and one more frame is one more microtask.
    let request: Request;
    try {
      request = this.#request(key, options);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.#track(this.#attempt(request, contendedAsNull));
  }

  /**
   * Takes `key`, waiting up to `options.waitMs` for its holder to release it. Waiters on this
   * host are served in arrival order; each is woken by a release (on any host sharing the
   * backend), by the end of the holder's lease, or, as a fallback, by jittered polling.
   * Rejects with TIMEOUT (`details.waitedMs`) when the key stayed held, with the signal's
   * reason when `options.signal` aborts, and like tryLock on bad input or a backend failure.
   */
  async acquire(key: string, options: AcquireOptions): Promise<Lease> {
    if (this.#closing) throw closedError();
    const request = this.#request(key, options);
    const waitMs = validateWaitMs(options.waitMs);
    const { signal } = options;
    signal?.throwIfAborted();
    const started = performance.now();
    const first = await this.#track(this.#attempt(request, asIs));
    if (first instanceof Lease) return first;
    if (waitMs === 0) throw this.#timeout(request.name, 0, waitMs);
    return this.#wait(request, first, started, waitMs, signal);
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
    if (this.#closing) return Promise.reject(closedError());
    let name: string;
    try {
      validateKey(key);
      validateKey(owner, "owner");
      if (options.ttlMs !== undefined) validateTtl(options.ttlMs);
      name = qualify(key, options.scope ?? "global");
    } catch (err) {
      return Promise.reject(err);
    }
    // Tracked like an acquisition: close() waits for it, and it hands out no lease once closing.
    return this.#track(this.#restore(name, owner, options));
  }

  async #restore(name: string, owner: string, options: RestoreOptions): Promise<Lease> {
    const mine = this.#sameLease(name, owner, options);
    if (mine) return mine;
    const sentAt = performance.now();
    const record = await this.#backendCall(() => this.#backend.status(name));
    if (this.#closing) throw closedError();
    // A concurrent restore of the same owner may have finished meanwhile: one lease per owner.
    const raced = this.#sameLease(name, owner, options);
    if (raced) return raced;
    if (!record || record.owner !== owner) {
      if (this.#released.has(owner) || this.#releasedBefore.has(owner)) {
        throw new LockhostError("ALREADY_RELEASED", `lock ${name} with that owner token was already released by this host`);
      }
      if (!record) throw new LockhostError("NOT_FOUND", `no lock is held under ${name}`);
      throw new LockhostError("OWNERSHIP_MISMATCH", `lock ${name} belongs to another owner token (fence ${record.fence}); nothing was changed`);
    }
    const keepalive = options.keepalive === true;
    const lease = new Lease(
      name, owner, record.fence, options.ttlMs ?? record.ttlMs, record.holder, record.acquiredAtMs, record.expiresAtMs,
      sentAt + record.ttlRemainingMs, keepalive, this.#hooks,
    );
    this.#held.set(owner, lease);
    this.#acquisitions++;
    if (keepalive) this.#renewals.watch(lease);
    return lease;
  }

  /** The lease this service holds for `owner` under `name`, with keepalive turned on if asked. */
  #sameLease(name: string, owner: string, options: RestoreOptions): Lease | undefined {
    const mine = this.#held.get(owner);
    if (!mine || mine.name !== name) return undefined;
    if (options.keepalive && !mine.keepalive) this.setKeepalive(mine, true);
    return mine;
  }

  /** Turns keepalive on or off for a held lease. */
  setKeepalive(lease: Lease, on: boolean): void {
    this.#checkUsable(lease);
    if (lease.keepalive === on) return;
    lease.keepalive = on;
    if (on) this.#renewals.watch(lease);
    else this.#renewals.replan(lease);
  }

  /** Validated inputs of one acquisition. */
  #request(key: string, options: TryLockOptions): Request {
    validateKey(key);
    const ttlMs = validateTtl(options.ttlMs);
    const scope = options.scope ?? "global";
    return {
      name: qualify(key, scope),
      ttlMs,
      keepalive: options.keepalive === true,
      holder: { plugin: options.plugin ?? (scope === "global" ? "host" : scope.plugin), node: this.#node },
    };
  }

  /** Counts an acquisition in flight, so close() can wait for it. */
  #track<T>(acquisition: Promise<T>): Promise<T> {
    this.#acquiring.add(acquisition);
    const forget = (): void => void this.#acquiring.delete(acquisition);
    acquisition.then(forget, forget);
    return acquisition;
  }

  async #wait(request: Request, first: Contended, started: number, waitMs: number, signal: AbortSignal | undefined): Promise<Lease> {
    const { name } = request;
    const deadline = started + waitMs;
    const waiter = new Waiter();
    const onAbort = (): void => waiter.wake("release");
    signal?.addEventListener("abort", onAbort, { once: true });
    let acquired = false;
    try {
      // The subscription is bounded by the wait and its signal: polling covers a late one.
      await untilSettled(this.#waits.join(name, waiter), deadline - performance.now(), signal);
      let hint = first.retryAfterMs;
      // Subscribed now: one more try, or a release just before the subscription would be missed.
      let shouldTry = true;
      for (;;) {
        signal?.throwIfAborted();
        if (this.#closing) throw closedError();
        const head = this.#waits.isHead(name, waiter);
        if (head && shouldTry) {
          const result = await this.#track(this.#attempt(request, asIs));
          if (result instanceof Lease) {
            acquired = true;
            return result;
          }
          hint = result.retryAfterMs;
        }
        const left = deadline - performance.now();
        if (left <= 0) {
          this.#waitTimeouts++;
          throw this.#timeout(name, performance.now() - started, waitMs);
        }
        // The head sleeps until a release, the holder's lease end, or the next poll; the others until promoted.
        const poll = jittered(this.#pollIntervalMs);
        const nap = head ? Math.min(left, hint === undefined ? poll : Math.min(poll, hint + 1)) : left;
        const why = await waiter.sleep(nap);
        shouldTry = why !== "promoted";
        // The lease-end hint is used once: after that, polling or a release decides.
        if (why === "timer") hint = undefined;
      }
    } finally {
      signal?.removeEventListener("abort", onAbort);
      this.#waits.leave(name, waiter, acquired);
      this.#waitsDone++;
      this.#waitTimeMs += performance.now() - started;
    }
  }

  #timeout(name: string, waitedMs: number, waitMs: number): LockhostError {
    const waited = Math.round(waitedMs);
    return new LockhostError("TIMEOUT", `lock ${name} is still held by someone else after waiting ${waited} ms (waitMs ${waitMs})`, {
      details: { waitedMs: waited },
    });
  }

  /**
   * One atomic attempt: a Lease, or what `contended` makes of the contended result (with the
   * backend's retry hint). Mapped here rather than by a `.then` after: one promise less.
   */
  async #attempt<C>(request: Request, contended: (result: Contended) => C): Promise<Lease | C> {
    const { name, ttlMs, holder } = request;
    const owner = uuidv4();
    // The host's deadline counts from before the request left, so it never outlives the server's.
    const sentAt = performance.now();
    let result: AcquireResult;
    try {
      result = await this.#backendCall(() => this.#backend.acquire({ key: name, owner, ttlMs, holder }));
    } catch (err) {
      // A timed-out or cut-off acquire may still have been applied on the server.
      void this.#giveBack(name, owner);
      throw err;
    }
    if (this.#closing) {
      // close() began while the backend worked: nobody may get a lease now (close() waits for this).
      if (result.acquired) await this.#giveBack(name, owner);
      throw closedError();
    }
    if (!result.acquired) {
      this.#contended++;
      return contended(result);
    }
    this.#acquisitions++;
    const lease = new Lease(
      name, owner, result.fence, ttlMs, holder,
      result.acquiredAtMs, result.expiresAtMs, sentAt + ttlMs, request.keepalive, this.#hooks,
    );
    this.#held.set(owner, lease);
    if (request.keepalive) this.#renewals.watch(lease);
    return lease;
  }

  /**
   * Extends `lease` to `ttlMs` (default: its original TTL) from now on the server's clock.
   * Rejects with LOST when the lock expired or changed hands, ALREADY_RELEASED after release.
   */
  async renew(lease: Lease, ttlMs: number = lease.ttlMs): Promise<void> {
    this.#checkUsable(lease);
    validateTtl(ttlMs);
    const sentAt = performance.now();
    let result: RenewResult;
    try {
      result = await this.#backendCall(() => this.#backend.renew(lease.name, lease.owner, ttlMs));
    } catch (err) {
      this.#renewalsFailed++;
      throw err;
    }
    if (!result.ok) {
      this.#renewalsFailed++;
      const e = lostError(lease, result.reason);
      if (lease.state === "held") this.#markLost(lease, e);
      throw e;
    }
    this.#renewalsOk++;
    if (lease.state !== "held") return;
    lease.expiresAtMs = result.expiresAtMs;
    lease.deadline = sentAt + ttlMs;
    this.#renewals.replan(lease);
  }

  /**
   * Releases `lease`. Rejects with ALREADY_RELEASED on a second release, and with LOST when
   * the lease had already ended: then nothing is deleted, whoever holds the key now keeps it.
   */
  async release(lease: Lease): Promise<void> {
    this.#checkUsable(lease);
    // Leave the map first: a concurrent releaseAll must not release the same lease again.
    this.#held.delete(lease.owner);
    this.#renewals.forget(lease);
    lease.state = "released";
    const result = await this.#backendCall(() => this.#backend.release(lease.name, lease.owner)).catch(
      (err: unknown) => {
        // The release did not happen: the lease is still ours until its TTL ends.
        lease.state = "held";
        this.#held.set(lease.owner, lease);
        // Its renewals, or the watch on its end that its observers rely on, resume.
        if (lease.keepalive || lease.observed) this.#renewals.watch(lease);
        throw err;
      },
    );
    if (result !== "released") {
      lease.state = "held";
      const e = lostError(lease, result);
      this.#markLost(lease, e);
      throw e;
    }
    this.#remember(lease.owner);
    // Waiters of this host need no round trip through the backend to hear about it.
    this.#waits.notify(lease.name);
  }

  /** Who holds the fully qualified lock `name` (as logs and `lockhost status` show it). */
  async status(name: string): Promise<LockStatus> {
    this.#checkOpen();
    validateName(name);
    const record = await this.#backendCall(() => this.#backend.status(name));
    return record ? { held: true, ...record } : { key: name, held: false };
  }

  /**
   * Deletes the lock `name` whoever holds it (an operator action); true when one was held.
   * When this service itself held it, that lease is lost at once (its signal aborts), rather
   * than at its next renewal.
   */
  async forceRelease(name: string): Promise<boolean> {
    this.#checkOpen();
    validateName(name);
    const released = await this.#backendCall(() => this.#backend.forceRelease(name));
    for (const lease of this.#held.values()) {
      if (lease.name === name) {
        this.#markLost(lease, new LockhostError("LOST", `lock ${name} (fence ${lease.fence}) was lost: it was force-released by an operator`));
      }
    }
    return released;
  }

  /**
   * Releases `lease` if it is still held, for callers cleaning up (auto-release, schedules,
   * shutdown): a lease that had already ended or been released is not a failure here.
   * Resolves to the error of a release that did fail (the lock then ends at its TTL).
   */
  async releaseIfHeld(lease: Lease): Promise<LockhostError | undefined> {
    try {
      await this.release(lease);
      return undefined;
    } catch (err) {
      const e = toLockhostError(err);
      if (e.code === "LOST" || e.code === "ALREADY_RELEASED") return undefined;
      // The caller is letting go of the lease: nobody would renew or release it any more, so it
      // must not be kept alive forever. It ends at its TTL, as the caller is told.
      if (lease.state === "held" && lease.keepalive) this.setKeepalive(lease, false);
      return e;
    }
  }

  /** The lease this service holds for the owner token `owner`, if any (restore hands out that one). */
  leaseOf(owner: string): Lease | undefined {
    return this.#held.get(owner);
  }

  /** Releases every lease this service holds; failures are returned, not thrown. */
  async releaseAll(): Promise<LockhostError[]> {
    const leases = [...this.#held.values()];
    const settled = await Promise.allSettled(leases.map((l) => this.release(l)));
    return settled.flatMap((s) => (s.status === "rejected" ? [toLockhostError(s.reason)] : []));
  }

  /**
   * Refuses new acquisitions (tryLock rejects with CLOSED from now on), waits for the ones
   * in flight, releases every lease, then closes the backend (unless `closeBackend: false`).
   * Later calls reject with CLOSED. Calling it again returns the first call's promise.
   * Resolves to the errors of releases that failed; those locks end at their TTL.
   */
  close(options: { closeBackend?: boolean } = {}): Promise<LockhostError[]> {
    this.#closePromise ??= this.#close(options.closeBackend ?? true);
    return this.#closePromise;
  }

  /** Resolves to the errors of releases that failed (those locks end at their TTL). */
  async #close(closeBackend: boolean): Promise<LockhostError[]> {
    this.#closing = true;
    // Waiting acquisitions end with CLOSED (they are counted in #acquiring while they try).
    this.#waits.wakeAll();
    // An acquisition that completes now gives its lock back itself (see #acquire).
    await Promise.allSettled([...this.#acquiring]);
    const failed = await this.releaseAll();
    this.#renewals.close();
    this.#closed = true;
    if (closeBackend) await this.#backend.close();
    return failed;
  }

  /**
   * Releases a lock this service may have taken but hands to nobody. Only we know `owner`, so
   * this can delete only that orphan, never another holder's lock; if it fails, the lock ends
   * at its TTL.
   */
  #giveBack(name: string, owner: string): Promise<void> {
    return this.#backend.release(name, owner).then(ignore, ignore);
  }

  #checkOpen(): void {
    if (this.#closed) throw closedError();
  }

  #checkUsable(lease: Lease): void {
    this.#checkOpen();
    if (lease.state === "released") {
      throw new LockhostError("ALREADY_RELEASED", `lock ${lease.name} (fence ${lease.fence}) was already released`);
    }
    if (lease.state === "lost") {
      throw new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) was lost earlier: its lease ended`);
    }
  }

  #markLost(lease: Lease, reason: LockhostError): void {
    this.#lost++;
    this.#held.delete(lease.owner);
    this.#renewals.forget(lease);
    lease[markLost](reason);
  }

  /** Keeps a bounded memory of released owner tokens (for restore's ALREADY_RELEASED). */
  #remember(owner: string): void {
    if (this.#released.size >= RELEASED_MEMORY) {
      this.#releasedBefore = this.#released;
      this.#released = new Set();
    }
    this.#released.add(owner);
  }

  /** One batch of keepalive renewals; failures become BACKEND_UNAVAILABLE. */
  #renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#backendCall(() => this.#backend.renewMany(reqs));
  }

  /** Runs a backend step; any failure becomes BACKEND_UNAVAILABLE (not async: it is on the lock path). */
  #backendCall<T>(step: () => Promise<T>): Promise<T> {
    try {
      return step().catch(backendFailure);
    } catch (err) {
      return backendFailure(err);
    }
  }
}

const ignore = (): void => undefined;

/** Resolves when `promise` settles, `ms` pass, or `signal` aborts, whichever is first. */
function untilSettled(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener("abort", done, { once: true });
    promise.then(done, done);
  });
}

/** Validated inputs of one acquisition. */
interface Request {
  readonly name: string;
  readonly ttlMs: number;
  readonly keepalive: boolean;
  readonly holder: Holder;
}

/** A contended attempt (the backend's result). */
type Contended = Extract<AcquireResult, { acquired: false }>;

const contendedAsNull = (): null => null;
const asIs = (r: Contended): Contended => r;

function backendFailure(err: unknown): never {
  throw toLockhostError(err, "BACKEND_UNAVAILABLE");
}

function closedError(): LockhostError {
  return new LockhostError("CLOSED", "the lock service is closed");
}

function lostError(lease: Lease, reason: "not_found" | "mismatch"): LockhostError {
  const why = reason === "mismatch" ? "another owner holds it now" : "it expired or was force-released";
  return new LockhostError(
    "LOST",
    `lock ${lease.name} (fence ${lease.fence}) is no longer held: ${why}; nothing was changed`,
  );
}
