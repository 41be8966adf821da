// One guest instance's locks, independent of how the guest runs: its handle table, its
// namespace and permissions, auto-release, and telling the runtime when a lock the guest holds is
// lost (so it can call the guest's lockhost_on_lost). The lock calls themselves live by job in
// lock-calls/ (acquisition, renew-release, queries, election), and the operation table
// (lock-ops.ts) names which serves each import; they throw, and the dispatch turns what they
// throw into the guest's reply in one place (guest-reply.ts).
import type { Logger } from "pino";
import { FLAG_GLOBAL, FLAG_KEEP, FLAG_KEEPALIVE, STATE_HELD, STATE_LOST, STATE_RELEASED } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "../locking/core.js";
import type { Lease } from "../locking/lease.js";
import { requestFor, type CheckedRequest } from "../locking/request.js";
import type { Scope } from "../locking/scope.js";
import { serviceCore, type LockService } from "../locking/service.js";
import type { TakeSpec } from "../../kit/kinds.js";
import type { Leadership } from "../locking/election.js";
import { stateOf } from "./abi-args.js";
import { errorReply, type AbiReply } from "./guest-reply.js";
import { HandleTable } from "./handle-table.js";

export type { AbiReply } from "./guest-reply.js";

/** A lock the calling guest holds, as a host function's context and a fenced request see it. */
export interface HeldLock {
  /** The guest's handle for it; 0 for the lock of the scheduled call running now. */
  readonly handle: number;
  /** Its full name (`<plugin>:<key>`, `global:<key>`). */
  readonly name: string;
  /** mutex, rw, semaphore or fair. */
  readonly kind: string;
  /** Its fencing token: send it with a write so the resource can refuse a stale holder. */
  readonly fence: number;
}

/** What a guest is allowed to do. */
export interface GuestPolicy {
  readonly plugin: string;
  /** Whether the plugin's config grants this global key. */
  readonly allowsGlobal: (key: string) => boolean;
}

/**
 * Told when a lock the guest holds is lost: `handle` is the guest's handle, or 0 for the lock
 * of the scheduled call running now (then `scheduleLease` is that lock).
 */
export type LostListener = (handle: number, scheduleLease?: Lease) => void;

/** How long a waiting acquisition may wait before the running call's time limit. */
export interface WaitLimit {
  /** The most the wait may last (ms) so the call can still return in time. */
  readonly budgetMs: number;
  /** The call's time limit, for the message of a cut-short wait. */
  readonly callTimeoutMs: number;
}

/** A lock the guest has a handle for. */
export interface Held {
  readonly lease: Lease;
  keep: boolean;
  /** Set while the guest or auto-release lets go of it: its loss is then no news for the guest. */
  quiet: boolean;
  /** Stops listening for its loss. */
  unwatch: () => void;
}

/** One guest instance's view of the lock service: its handles, namespace and lifecycle. */
export class GuestLocks {
  /** The public service, for the calls that take a Lease (renew, release, auto-release): they check only what the key is not (a renewal's TTL). */
  readonly service: LockService;
  /** The service's internals (the internal door): the guest's checked requests go straight to the steps. */
  readonly core: ServiceCore;
  readonly policy: GuestPolicy;
  readonly #log: Logger;
  /** The plugin's own namespace, made once rather than per call. */
  readonly #ownScope: Scope;
  /** Live handles, and how released ones ended (STATE_RELEASED or STATE_LOST). */
  readonly handles = new HandleTable<Held, number>();
  /** The leaderships among the guest's leases (lock.campaign), for proclaim and resign. */
  readonly leaderships = new WeakMap<Lease, Leadership>();
  /** Bumped by reset(): an acquisition that completes after a reset is released at once. */
  #epoch = 0;
  /** Aborted by reset(): a guest that is gone stops waiting. */
  #resetController = new AbortController();
  #lostListener: LostListener | undefined;
  /** Set by cancelWaits(): waits end at once with it. */
  #cancelled: LockhostError | undefined;
  /** The schedule's lock while a scheduled call (or its lockhost_on_lost(0)) runs: handle 0. */
  #schedule: Lease | undefined;

  constructor(service: LockService, policy: GuestPolicy, log: Logger) {
    this.service = service;
    this.core = serviceCore(service);
    this.policy = policy;
    this.#ownScope = Object.freeze({ plugin: policy.plugin });
    this.#log = log;
  }

  /** How many locks the guest holds. */
  get heldCount(): number {
    return this.handles.size;
  }

  /**
   * Aborted when the guest stops waiting: its instance is replaced (trap, time limit, crash),
   * closed, or the host shuts down. What a call of the guest waits on (a lock wait, a host
   * function, an HTTP request) ends with it.
   */
  get signal(): AbortSignal {
    return this.#resetController.signal;
  }

  /** Throws CANCELLED once the host is shutting down (cancelWaits): a new request or host function call is not started then. */
  checkNotCancelled(): void {
    if (this.#cancelled) throw this.#cancelled;
  }

  /** Throws CANCELLED for a wait (`waitMs` > 0) asked for once the host is shutting down. */
  checkWait(waitMs: number): void {
    if (this.#cancelled && waitMs > 0) throw this.#cancelled;
  }

  /** The locks the guest holds now and still has by the host's own deadline, with their fences; the schedule's lock as handle 0. */
  held(): HeldLock[] {
    const out: HeldLock[] = [];
    const schedule = this.#schedule;
    if (schedule && stateOf(schedule) === STATE_HELD) out.push(heldLock(0, schedule));
    for (const [handle, { lease }] of this.handles.entries()) if (stateOf(lease) === STATE_HELD) out.push(heldLock(handle, lease));
    return out;
  }

  /**
   * The lock `handle` names (0: the schedule's lock during a scheduled call) with its fence,
   * for a request that carries it; throws LOST once its lease has ended, and INVALID_HANDLE or
   * ALREADY_RELEASED as the lock calls do.
   */
  fenceOf(handle: number): HeldLock {
    if (handle !== 0) return heldLock(handle, this.current(handle));
    return heldLock(0, this.scheduleLease(true));
  }

  /**
   * The schedule's lock (handle 0); INVALID_HANDLE outside a scheduled call, and with
   * `mustHold`, LOST once its lease has ended.
   */
  scheduleLease(mustHold: boolean): Lease {
    const schedule = this.#schedule;
    if (!schedule) throw new LockhostError("INVALID_HANDLE", "handle 0 names the schedule's lock, and only during a scheduled call");
    if (mustHold && stateOf(schedule) !== STATE_HELD)
      throw new LockhostError("LOST", `lock ${schedule.name} (fence ${schedule.fence}) is no longer held: its lease ended`);
    return schedule;
  }

  /**
   * Tells `listener` when a lock the guest holds is lost (a renewal refused or not confirmed,
   * or its lease ran out), for locks taken from now on and the schedule's lock. Losses of
   * locks the guest is releasing itself are not reported (the release says LOST).
   */
  listenLost(listener: LostListener): void {
    this.#lostListener = listener;
  }

  /**
   * Makes `lease` handle 0 (lock.state(0)) until the returned function is called; with
   * `notify`, its loss is reported to the lost listener as handle 0.
   */
  attachSchedule(lease: Lease, notify: boolean): () => void {
    this.#schedule = lease;
    const epoch = this.#epoch;
    const unwatch =
      notify && this.#lostListener
        ? lease.onLost(() => {
            if (epoch === this.#epoch) this.#lostListener?.(0, lease);
          })
        : noop;
    return () => {
      unwatch();
      if (this.#schedule === lease) this.#schedule = undefined;
    };
  }

  /** Auto-release after an export call returned: every lock not taken with FLAG_KEEP. */
  async endCall(): Promise<void> {
    await this.#releaseWhere((held) => !held.keep, "its export call returned");
  }

  /** Releases every lock, kept ones included (trap, time limit, crash, close). */
  async reset(reason: string): Promise<void> {
    this.invalidate(reason);
    await this.#releaseWhere(() => true, reason);
  }

  /**
   * The synchronous first step of reset(), for the moment the instance stops answering: from
   * now on nothing that happens to its locks is reported to the guest (its lost notices, an
   * acquisition completing), and its waits end. reset() does this too; calling both is fine.
   */
  invalidate(reason: string): void {
    this.#epoch++;
    this.#schedule = undefined;
    const controller = this.#resetController;
    this.#resetController = new AbortController();
    controller.abort(new LockhostError("CLOSED", `the guest stopped waiting: ${reason}`));
  }

  /**
   * The host is shutting down: every wait of this guest ends now with -CANCELLED, and so does
   * every later one, at once. The guest's running call can then return instead of sitting out
   * its wait_ms.
   */
  cancelWaits(reason: string): void {
    this.#cancelled = new LockhostError("CANCELLED", `the wait was cancelled: ${reason}`);
    const controller = this.#resetController;
    this.#resetController = new AbortController();
    controller.abort(this.#cancelled);
  }

  /** Which instance of the guest the handles belong to; bumped by invalidate() and reset(). */
  get epoch(): number {
    return this.#epoch;
  }

  /** The reply for a failed call (guest-reply.ts), for the capabilities that answer their own failures. */
  failure(err: unknown): AbiReply {
    return errorReply(err, this.#log);
  }

  /** What logs this guest's lock calls (errorReply's INTERNAL). */
  get log(): Logger {
    return this.#log;
  }

  async #releaseWhere(pick: (held: Held) => boolean, reason: string): Promise<void> {
    const picked: [number, Lease][] = [];
    for (const [handle, held] of [...this.handles.entries()]) {
      if (pick(held)) {
        this.forget(handle, held);
        picked.push([handle, held.lease]);
      }
    }
    await Promise.all(
      picked.map(async ([handle, lease]) => {
        await this.autoRelease(lease, reason);
        // The release may have found the lease already ended.
        this.handles.mark(handle, lease.state === "lost" ? STATE_LOST : STATE_RELEASED);
      }),
    );
  }

  // What the lock calls (lock-calls/) share.

  /**
   * The guest was reset while `lease` was being taken: nobody can use it, so it is released
   * (unless it is not `ours` but shared with another holder on this host, which keeps it).
   * Always throws LOST. Off the hot path: callers await it only when the epoch moved.
   */
  async abandon(lease: Lease, ours: boolean): Promise<never> {
    if (ours) await this.autoRelease(lease, "acquired after its guest was reset");
    throw new LockhostError("LOST", "the guest was reset while the lock was being acquired");
  }

  /**
   * Gives the guest (instance `epoch`) a handle for `lease`, when that instance still runs
   * (else it is abandoned). When no handle is left the lock is released at once (when `ours`:
   * not a lease another guest shares): a lock nobody has a handle for could never be released
   * by the guest, and would outlive it.
   */
  async adopt(lease: Lease, flags: number, epoch: number, ours: boolean): Promise<number> {
    if (epoch !== this.#epoch) await this.abandon(lease, ours);
    const held: Held = { lease, keep: (flags & FLAG_KEEP) !== 0, quiet: false, unwatch: noop };
    let handle: number;
    try {
      handle = this.handles.add(held);
    } catch (err) {
      if (ours) await this.autoRelease(lease, "no handle was left to give the guest");
      throw err;
    }
    const listener = this.#lostListener;
    if (listener) {
      held.unwatch = lease.onLost(() => {
        if (!held.quiet && epoch === this.#epoch) listener(handle);
      });
    }
    return handle;
  }

  /** The lease of a handle whose lease has not ended by the host's own (conservative) deadline. */
  current(handle: number): Lease {
    const { lease } = this.handles.get(handle);
    if (lease.state === "lost" || performance.now() >= lease.deadline) {
      throw new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) is no longer held: its lease ended`);
    }
    return lease;
  }

  /** Drops a handle (a concurrent reset() may already have dropped it), recording how it ended. */
  forget(handle: number, held: Held): void {
    held.quiet = true;
    held.unwatch();
    try {
      this.handles.remove(handle, "handle", held.lease.state === "lost" ? STATE_LOST : STATE_RELEASED);
    } catch {
      // Already gone: reset() released everything while this release was in flight.
    }
  }

  /** Releases a lock the guest lets go of without asking (auto-release): a failure is logged, not thrown. */
  async autoRelease(lease: Lease, reason: string): Promise<void> {
    const e = await this.service.releaseIfHeld(lease);
    if (e) this.#log.warn({ lock: lease.name, code: e.code, err: e.message, reason }, "auto-release failed; the lock will expire at its TTL");
    else this.#log.debug({ lock: lease.name, fence: lease.fence, reason }, "auto-released lock");
  }

  /** Refuses, before anything is taken, a lock no handle would be left for. */
  checkRoom(): void {
    if (this.handles.full) {
      throw new LockhostError(
        "INVALID_ARGUMENT",
        `this guest already holds ${this.handles.size} locks, every handle there is; release some first (nothing was taken)`,
      );
    }
  }

  /**
   * A call that takes the lock `key` (checked at the boundary, lock-ops.ts, when the guest's
   * bytes became it): its scope and the rest checked once, the key not again.
   */
  request(key: string, ttlMs: number, flags: number, spec: TakeSpec, keepalive = (flags & FLAG_KEEPALIVE) !== 0): CheckedRequest {
    const scope = this.scopeOf(key, flags);
    return requestFor(key, { ttlMs, scope, plugin: this.policy.plugin, keepalive }, spec);
  }

  /** Where `key` lives for these flags: the plugin's namespace, or global if its config allows. */
  scopeOf(key: string, flags: number): Scope {
    if ((flags & FLAG_GLOBAL) === 0) return this.#ownScope;
    if (!this.policy.allowsGlobal(key)) {
      throw new LockhostError("PERMISSION_DENIED", `plugin ${this.policy.plugin} may not use global key "${key}": add a matching pattern to its global_keys`);
    }
    return "global";
  }
}

const noop = (): void => undefined;

const heldLock = (handle: number, lease: Lease): HeldLock => ({ handle, name: lease.name, kind: lease.kind, fence: lease.fence });
