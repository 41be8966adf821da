// LockService: the one place that turns backend steps into locks with a lifecycle. It
// validates input, applies scopes, mints owner tokens, tracks leases and reports lost ones.
// Backends stay atomic steps; guests and embedders both come through here.
import { v4 as uuidv4 } from "uuid";
import { LockhostError, toLockhostError } from "../errors.js";
import type { AcquireResult, Holder, LockBackend, LockRecord } from "./backend.js";
import { Lease } from "./lease.js";
import { qualify, type Scope } from "./scope.js";
import { validateKey, validateName, validateTtl } from "./validate.js";

/** Options of a LockService. */
export interface LockServiceOptions {
  /** This host's node name, recorded as the holder of every lock it takes. */
  readonly node: string;
}

/** Options of one acquisition. */
export interface TryLockOptions {
  /** The lease, in ms (1 to MAX_TTL_MS), on the backend's clock. */
  readonly ttlMs: number;
  /** Where the key lives: a plugin's namespace or "global" (the default for host-side callers). */
  readonly scope?: Scope;
  /** Recorded as the holder's plugin; defaults to the scope's plugin, or "host". */
  readonly plugin?: string;
}

/** The status of a lock name, as the CLI and the host API show it. */
export type LockStatus =
  | { readonly key: string; readonly held: false }
  | ({ readonly held: true } & LockRecord);

/** Validated, scoped locking over one backend, shared by every guest of a host. */
export class LockService {
  readonly #backend: LockBackend;
  readonly #node: string;
  readonly #held = new Set<Lease>();
  /** Acquisitions still waiting on the backend; close() waits for them. */
  readonly #acquiring = new Set<Promise<Lease | null>>();
  /** Set when close() starts: no new acquisitions; leases held can still renew and release. */
  #closing = false;
  /** Set when close() is done: every call rejects with CLOSED. */
  #closed = false;
  #closePromise?: Promise<LockhostError[]>;

  constructor(backend: LockBackend, options: LockServiceOptions) {
    this.#backend = backend;
    this.#node = options.node;
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
    const acquisition = this.#acquire(key, options);
    this.#acquiring.add(acquisition);
    const forget = (): void => void this.#acquiring.delete(acquisition);
    acquisition.then(forget, forget);
    return acquisition;
  }

  async #acquire(key: string, options: TryLockOptions): Promise<Lease | null> {
    validateKey(key);
    const ttlMs = validateTtl(options.ttlMs);
    const scope = options.scope ?? "global";
    const name = qualify(key, scope);
    const holder: Holder = {
      plugin: options.plugin ?? (scope === "global" ? "host" : scope.plugin),
      node: this.#node,
    };
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
    if (!result.acquired) return null;
    const lease = new Lease(
      name, owner, result.fence, ttlMs, holder,
      result.acquiredAtMs, result.expiresAtMs, sentAt + ttlMs,
    );
    this.#held.add(lease);
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
    const result = await this.#backendCall(() => this.#backend.renew(lease.name, lease.owner, ttlMs));
    if (!result.ok) {
      this.#markLost(lease);
      throw lostError(lease, result.reason);
    }
    lease.expiresAtMs = result.expiresAtMs;
    lease.deadline = sentAt + ttlMs;
  }

  /**
   * Releases `lease`. Rejects with ALREADY_RELEASED on a second release, and with LOST when
   * the lease had already ended: then nothing is deleted, whoever holds the key now keeps it.
   */
  async release(lease: Lease): Promise<void> {
    this.#checkUsable(lease);
    // Leave the set first: a concurrent releaseAll must not release the same lease again.
    this.#held.delete(lease);
    lease.state = "released";
    const result = await this.#backendCall(() => this.#backend.release(lease.name, lease.owner)).catch(
      (err: unknown) => {
        // The release did not happen: the lease is still ours until its TTL ends.
        lease.state = "held";
        this.#held.add(lease);
        throw err;
      },
    );
    if (result !== "released") {
      lease.state = "lost";
      throw lostError(lease, result);
    }
  }

  /** Who holds the fully qualified lock `name` (as logs and `lockhost status` show it). */
  async status(name: string): Promise<LockStatus> {
    this.#checkOpen();
    validateName(name);
    const record = await this.#backendCall(() => this.#backend.status(name));
    return record ? { held: true, ...record } : { key: name, held: false };
  }

  /** Deletes the lock `name` whoever holds it (an operator action); true when one was held. */
  async forceRelease(name: string): Promise<boolean> {
    this.#checkOpen();
    validateName(name);
    return this.#backendCall(() => this.#backend.forceRelease(name));
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
      return e.code === "LOST" || e.code === "ALREADY_RELEASED" ? undefined : e;
    }
  }

  /** Releases every lease this service holds; failures are returned, not thrown. */
  async releaseAll(): Promise<LockhostError[]> {
    const leases = [...this.#held];
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
    // An acquisition that completes now gives its lock back itself (see #acquire).
    await Promise.allSettled([...this.#acquiring]);
    const failed = await this.releaseAll();
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

  #markLost(lease: Lease): void {
    lease.state = "lost";
    this.#held.delete(lease);
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
