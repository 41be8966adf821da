// The lock ABI as seen from one guest instance, independent of how the guest runs: the worker
// runtime calls it from the main thread after copying bytes out of guest memory, an inline
// runtime would call it directly. It owns the guest's handle table, enforces scopes and
// permissions, turns every failure into (-code, message), does auto-release, and tells the
// runtime when a lock the guest holds is lost (so it can call the guest's lockhost_on_lost).
import type { Logger } from "pino";
import { FLAG_GLOBAL, FLAG_KEEP, FLAG_KEEPALIVE, STATE_HELD, STATE_LOST, STATE_RELEASED, TRY_CONTENDED } from "../../abi/status.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { Lease } from "../locking/lease.js";
import { qualify, type Scope } from "../locking/scope.js";
import { checkRequest, type CheckedRequest } from "../locking/request.js";
import type { LockService, LockStatus } from "../locking/service.js";
import { kindName } from "../locking/kinds.js";
import { flaggedSpec, KINDS, LEADER, MUTEX, QUEUE_KINDS, type LockSpec, type QueueKind } from "../../kit/kinds.js";
import { validateTtl, validateWaitMs } from "../locking/validate.js";
import { electionKey, validateLeaderValue, type Leadership } from "../locking/election.js";
import { stateOf } from "./abi-args.js";
import { HandleTable } from "./handle-table.js";

/**
 * The answer to one ABI call: `result < 0` is -code and `text` its message; otherwise `text` is
 * the output string, if any, or `bytes` the output of a call whose reply is bytes (an HTTP
 * response, a host function's result).
 */
export interface AbiReply {
  readonly result: number;
  readonly text?: string;
  readonly bytes?: Uint8Array;
}

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

interface Held {
  readonly lease: Lease;
  keep: boolean;
  /** Set while the guest or auto-release lets go of it: its loss is then no news for the guest. */
  quiet: boolean;
  /** Stops listening for its loss. */
  unwatch: () => void;
}


/** One guest instance's view of the lock service. */
export class GuestLocks {
  readonly #service: LockService;
  readonly #policy: GuestPolicy;
  readonly #log: Logger;
  /** The plugin's own namespace, made once rather than per call. */
  readonly #ownScope: Scope;
  /** Live handles, and how released ones ended (STATE_RELEASED or STATE_LOST). */
  readonly #handles = new HandleTable<Held, number>();
  /** Bumped by reset(): an acquisition that completes after a reset is released at once. */
  #epoch = 0;
  /** Aborted by reset(): a guest that is gone stops waiting. */
  #resetController = new AbortController();
  #lostListener: LostListener | undefined;
  /** Set by cancelWaits(): waits end at once with it. */
  #cancelled: LockhostError | undefined;
  /** The schedule's lock while a scheduled call (or its lockhost_on_lost(0)) runs: handle 0. */
  #schedule: Lease | undefined;
  /** The leaderships among the guest's leases (lock.campaign), for proclaim and resign. */
  readonly #leaderships = new WeakMap<Lease, Leadership>();

  constructor(service: LockService, policy: GuestPolicy, log: Logger) {
    this.#service = service;
    this.#policy = policy;
    this.#ownScope = Object.freeze({ plugin: policy.plugin });
    this.#log = log;
  }

  /** How many locks the guest holds. */
  get heldCount(): number {
    return this.#handles.size;
  }

  /**
   * Aborted when the guest stops waiting: its instance is replaced (trap, time limit, crash),
   * closed, or the host shuts down. What a call of the guest waits on (a host function, an
   * HTTP request) ends with it.
   */
  get signal(): AbortSignal {
    return this.#resetController.signal;
  }

  /** Throws CANCELLED once the host is shutting down (cancelWaits): a new request or host function call is not started then. */
  checkNotCancelled(): void {
    if (this.#cancelled) throw this.#cancelled;
  }

  /** The locks the guest holds now and still has by the host's own deadline, with their fences; the schedule's lock as handle 0. */
  held(): HeldLock[] {
    const out: HeldLock[] = [];
    const schedule = this.#schedule;
    if (schedule && stateOf(schedule) === STATE_HELD) out.push(heldLock(0, schedule));
    for (const [handle, { lease }] of this.#handles.entries()) if (stateOf(lease) === STATE_HELD) out.push(heldLock(handle, lease));
    return out;
  }

  /**
   * The lock `handle` names (0: the schedule's lock during a scheduled call) with its fence,
   * for a request that carries it; throws LOST once its lease has ended, and INVALID_HANDLE or
   * ALREADY_RELEASED as the lock calls do.
   */
  fenceOf(handle: number): HeldLock {
    if (handle !== 0) return heldLock(handle, this.#current(handle));
    const schedule = this.#schedule;
    if (!schedule) throw new LockhostError("INVALID_HANDLE", "handle 0 names the schedule's lock, and only during a scheduled call");
    if (stateOf(schedule) !== STATE_HELD) throw new LockhostError("LOST", `lock ${schedule.name} (fence ${schedule.fence}) is no longer held: its lease ended`);
    return heldLock(0, schedule);
  }

  /** `lock.try` (key and flags checked by the boundary, lock-ops.ts): a handle, TRY_CONTENDED, or -code. */
  async try(key: string, ttlMs: number, flags: number, spec: LockSpec = MUTEX): Promise<AbiReply> {
    const epoch = this.#epoch;
    // FLAG_FAIR on a mutex's try: the fair mutex (the kind table says which flag picks which kind).
    spec = flaggedSpec(spec, flags);
    try {
      this.#checkRoom();
      const lease = await this.#service.tryChecked(this.#request(key, ttlMs, flags, spec));
      // The note becomes the guest's last_error: contention is no error, but says whose key it is.
      if (!lease) return { result: TRY_CONTENDED, text: contendedNote(key, flags, this.#policy.plugin, spec) };
      if (epoch !== this.#epoch) await this.#abandon(lease, true);
      return { result: await this.#adopt(lease, flags, epoch, true) };
    } catch (err) {
      return this.failure(err);
    }
  }

  /**
   * `lock.acquire`: a handle, or -TIMEOUT when the key stayed held for `waitMs` (the message
   * says how long the guest waited), or -code. A wait longer than `limit.budgetMs` (what is
   * left of the call's time limit) is cut to it, so the guest gets -TIMEOUT while its call
   * can still return instead of being stopped.
   */
  async acquire(key: string, ttlMs: number, waitMs: number, flags: number, limit?: WaitLimit, spec: LockSpec = MUTEX): Promise<AbiReply> {
    const epoch = this.#epoch;
    spec = flaggedSpec(spec, flags);
    const signal = this.#resetController.signal;
    try {
      this.#checkRoom();
      const request = this.#request(key, ttlMs, flags, spec);
      validateWaitMs(waitMs);
      if (this.#cancelled && waitMs > 0) throw this.#cancelled;
      const budget = limit ? Math.max(0, Math.floor(limit.budgetMs)) : waitMs;
      const cut = waitMs > budget;
      let lease: Lease;
      try {
        lease = await this.#service.acquireChecked(request, cut ? budget : waitMs, signal);
      } catch (err) {
        const e = toLockhostError(err);
        if (!cut || e.code !== "TIMEOUT") throw e;
        throw new LockhostError(
          "TIMEOUT",
          `${e.message}; waitMs ${waitMs} was cut to ${budget} ms so the call can return before its time limit of ${limit!.callTimeoutMs} ms`,
          { details: { ...e.details, waitMs: budget } },
        );
      }
      if (epoch !== this.#epoch) await this.#abandon(lease, true);
      return { result: await this.#adopt(lease, flags, epoch, true) };
    } catch (err) {
      return this.failure(err);
    }
  }

  /**
   * `lock.restore`: a handle for a lock taken elsewhere, given its owner token. `ttlMs` 0
   * keeps the lock's current lease length. -NOT_FOUND when nobody holds the key,
   * -OWNERSHIP_MISMATCH when another owner does, -ALREADY_RELEASED when this host released
   * that owner's lock. A lock this guest already has a handle for gets that handle back.
   */
  async restore(key: string, owner: string, ttlMs: number, flags: number): Promise<AbiReply> {
    const epoch = this.#epoch;
    try {
      const scope = this.#scopeOf(key, flags);
      const keepalive = (flags & FLAG_KEEPALIVE) !== 0;
      // 0 keeps the lock's lease length; anything else must be a valid TTL.
      if (ttlMs !== 0) validateTtl(ttlMs);
      // A lease this host already holds (another guest's, maybe) is shared, not this call's to undo.
      const shared = this.#service.leaseOf(owner) !== undefined;
      const lease = await this.#service.restore(key, owner, { scope, keepalive, ...(ttlMs !== 0 && { ttlMs }) });
      for (const [handle, held] of this.#handles.entries()) {
        if (held.lease !== lease) continue;
        // One lock, one handle: a second handle would let auto-release free a kept one.
        if ((flags & FLAG_KEEP) !== 0) held.keep = true;
        return { result: handle };
      }
      if (epoch !== this.#epoch) await this.#abandon(lease, !shared);
      return { result: await this.#adopt(lease, flags, epoch, !shared) };
    } catch (err) {
      return this.failure(err);
    }
  }

  /**
   * `lock.state`: STATE_HELD, STATE_LOST or STATE_RELEASED. A released handle answers how it
   * ended until its slot is reused (then INVALID_HANDLE). Handle 0 is the schedule's lock
   * during a scheduled call.
   */
  state(handle: number): AbiReply {
    try {
      if (handle === 0) {
        if (!this.#schedule) {
          throw new LockhostError("INVALID_HANDLE", "handle 0 names the schedule's lock, and only during a scheduled call");
        }
        return { result: stateOf(this.#schedule) };
      }
      const entry = this.#handles.lookup(handle);
      return { result: entry.live ? stateOf(entry.value.lease) : (entry.tombstone ?? STATE_RELEASED) };
    } catch (err) {
      return this.failure(err);
    }
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
    const unwatch = notify && this.#lostListener
      ? lease.onLost(() => {
          if (epoch === this.#epoch) this.#lostListener?.(0, lease);
        })
      : noop;
    return () => {
      unwatch();
      if (this.#schedule === lease) this.#schedule = undefined;
    };
  }

  /** `lock.renew`: OK or -code; ttlMs 0 reuses the acquisition TTL. */
  renew(handle: number, ttlMs: number): Promise<AbiReply> {
    return this.#quietly(handle, ({ lease }) => this.#service.renew(lease, ttlMs === 0 ? lease.ttlMs : ttlMs));
  }

  /**
   * Runs `step` on a handle's lock and answers OK or -code. A loss the step finds is told to the
   * guest by its -LOST, not again by callback (renew, proclaim).
   */
  async #quietly(handle: number, step: (held: Held) => Promise<unknown>): Promise<AbiReply> {
    try {
      const held = this.#handles.get(handle);
      held.quiet = true;
      try {
        await step(held);
      } finally {
        held.quiet = false;
      }
      return { result: 0 };
    } catch (err) {
      return this.failure(err);
    }
  }

  /**
   * `lock.release`: OK or -code (LOST when the lease had ended: nothing is deleted). When the
   * backend fails, the handle stays valid so the guest can retry (and auto-release still runs).
   */
  async release(handle: number): Promise<AbiReply> {
    try {
      const held = this.#handles.get(handle);
      const { lease } = held;
      held.quiet = true;
      try {
        await this.#service.release(lease);
      } finally {
        if (lease.state !== "held") this.#forget(handle, held);
        else held.quiet = false;
      }
      return { result: 0 };
    } catch (err) {
      return this.failure(err);
    }
  }

  /** `lock.fence`: the fencing token, or -LOST once the lease has ended. */
  fence(handle: number): AbiReply {
    try {
      return { result: this.#current(handle).fence };
    } catch (err) {
      return this.failure(err);
    }
  }

  /** `lock.owner`: the owner token, or -LOST once the lease has ended. */
  owner(handle: number): AbiReply {
    try {
      const lease = this.#current(handle);
      return { result: lease.owner.length, text: lease.owner };
    } catch (err) {
      return this.failure(err);
    }
  }

  /** `lock.status`: the key's status JSON (without the owner token); a read/write lock's or semaphore's with FLAG_RW / FLAG_SEMAPHORE. */
  async status(key: string, flags: number): Promise<AbiReply> {
    try {
      const scope = this.#scopeOf(key, flags);
      const kind = sharedKindOfFlags(flags);
      // A guest reads `held`; the operator's hint of locks held elsewhere would cost it more reads.
      const s = await this.#service.status({ name: qualify(key, scope) }, { ...(kind !== undefined && { kind }), elsewhere: false });
      if (kind !== undefined) return textReply(sharedStatusJson(s));
      const one = s.holders[0];
      // ABI v1's mutex status: the holder's fields at the top.
      const json = JSON.stringify(
        one !== undefined
          ? {
              key: s.name, held: true, holder: { plugin: one.plugin, node: one.node },
              fence: one.fence, acquired_at_ms: one.acquiredAtMs, expires_at_ms: one.expiresAtMs,
              ttl_remaining_ms: one.ttlRemainingMs, ttl_ms: one.ttlMs,
            }
          : { key: s.name, held: false },
      );
      return textReply(json);
    } catch (err) {
      return this.failure(err);
    }
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

  async #releaseWhere(pick: (held: Held) => boolean, reason: string): Promise<void> {
    const picked: [number, Lease][] = [];
    for (const [handle, held] of [...this.#handles.entries()]) {
      if (pick(held)) {
        this.#forget(handle, held);
        picked.push([handle, held.lease]);
      }
    }
    await Promise.all(
      picked.map(async ([handle, lease]) => {
        await this.#release(lease, reason);
        // The release may have found the lease already ended.
        this.#handles.mark(handle, lease.state === "lost" ? STATE_LOST : STATE_RELEASED);
      }),
    );
  }

  /**
   * The guest was reset while `lease` was being taken: nobody can use it, so it is released
   * (unless it is not `ours` but shared with another holder on this host, which keeps it).
   * Always throws LOST. Off the hot path: callers await it only when the epoch moved.
   */
  async #abandon(lease: Lease, ours: boolean): Promise<never> {
    if (ours) await this.#release(lease, "acquired after its guest was reset");
    throw new LockhostError("LOST", "the guest was reset while the lock was being acquired");
  }

  /**
   * Gives the guest (instance `epoch`, still current) a handle for `lease`. When none is left
   * the lock is released at once (when `ours`: not a lease another guest shares): a lock nobody
   * has a handle for could never be released by the guest, and would outlive it.
   */
  async #adopt(lease: Lease, flags: number, epoch: number, ours: boolean): Promise<number> {
    const held: Held = { lease, keep: (flags & FLAG_KEEP) !== 0, quiet: false, unwatch: noop };
    let handle: number;
    try {
      handle = this.#handles.add(held);
    } catch (err) {
      if (ours) await this.#release(lease, "no handle was left to give the guest");
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
  #current(handle: number): Lease {
    const { lease } = this.#handles.get(handle);
    if (lease.state === "lost" || performance.now() >= lease.deadline) {
      throw new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) is no longer held: its lease ended`);
    }
    return lease;
  }

  /** Drops a handle (a concurrent reset() may already have dropped it), recording how it ended. */
  #forget(handle: number, held: Held): void {
    held.quiet = true;
    held.unwatch();
    try {
      this.#handles.remove(handle, "handle", held.lease.state === "lost" ? STATE_LOST : STATE_RELEASED);
    } catch {
      // Already gone: reset() released everything while this release was in flight.
    }
  }

  async #release(lease: Lease, reason: string): Promise<void> {
    const e = await this.#service.releaseIfHeld(lease);
    if (e) this.#log.warn({ lock: lease.name, code: e.code, err: e.message, reason }, "auto-release failed; the lock will expire at its TTL");
    else this.#log.debug({ lock: lease.name, fence: lease.fence, reason }, "auto-released lock");
  }

  /** Refuses, before anything is taken, a lock no handle would be left for. */
  #checkRoom(): void {
    if (this.#handles.full) {
      throw new LockhostError("INVALID_ARGUMENT", `this guest already holds ${this.#handles.size} locks, every handle there is; release some first (nothing was taken)`);
    }
  }

  /** A call that takes a lock, checked once: the service trusts it from here. */
  #request(key: string, ttlMs: number, flags: number, spec: LockSpec): CheckedRequest {
    const scope = this.#scopeOf(key, flags);
    return checkRequest(key, { ttlMs, scope, plugin: this.#policy.plugin, keepalive: (flags & FLAG_KEEPALIVE) !== 0 }, spec);
  }

  /** Where `key` lives for these flags: the plugin's namespace, or global if its config allows. */
  #scopeOf(key: string, flags: number): Scope {
    if ((flags & FLAG_GLOBAL) === 0) return this.#ownScope;
    if (!this.#policy.allowsGlobal(key)) {
      throw new LockhostError(
        "PERMISSION_DENIED",
        `plugin ${this.#policy.plugin} may not use global key "${key}": add a matching pattern to its global_keys`,
      );
    }
    return "global";
  }

  /**
   * `lock.campaign` (`waitMs` > 0) and `lock.try_campaign` (0: TRY_CONTENDED while another
   * leads): a handle for the leadership of election `key` (the key in the leader kind, kept
   * alive), proclaiming `value`. The wait is cut to the call's time limit as acquire's is.
   */
  async campaign(key: string, value: string, ttlMs: number, waitMs: number, flags: number, limit?: WaitLimit): Promise<AbiReply> {
    const epoch = this.#epoch;
    try {
      this.#checkRoom();
      const lockKey = electionKey(key);
      const scope = this.#scopeOf(lockKey, flags);
      const request = checkRequest(lockKey, { ttlMs, scope, plugin: this.#policy.plugin, keepalive: true }, LEADER);
      validateLeaderValue(value);
      validateWaitMs(waitMs);
      if (this.#cancelled && waitMs > 0) throw this.#cancelled;
      const budget = limit ? Math.max(0, Math.floor(limit.budgetMs)) : waitMs;
      let leadership: Leadership;
      try {
        leadership = await this.#service.campaignChecked(key, request, value, Math.min(waitMs, budget), this.#resetController.signal);
      } catch (err) {
        const e = toLockhostError(err);
        if (waitMs === 0 && e.code === "TIMEOUT") return { result: TRY_CONTENDED, text: `CONTENDED: election ${request.name} has another leader` };
        throw e;
      }
      const { lease } = leadership;
      if (epoch !== this.#epoch) await this.#abandon(lease, true);
      this.#leaderships.set(lease, leadership);
      return { result: await this.#adopt(lease, flags, epoch, true) };
    } catch (err) {
      return this.failure(err);
    }
  }

  /** `lock.proclaim`: OK, or -LOST when the guest no longer leads (the handle is then lost). */
  proclaim(handle: number, value: string): Promise<AbiReply> {
    return this.#quietly(handle, (held) => this.#leadershipOf(handle, held.lease).proclaim(value));
  }

  /** `lock.resign`: `lock.release` of a leadership handle. */
  async resign(handle: number): Promise<AbiReply> {
    try {
      this.#leadershipOf(handle, this.#handles.get(handle).lease);
    } catch (err) {
      return this.failure(err);
    }
    return this.release(handle);
  }

  /** `lock.leader`: who leads election `key` now, as JSON in the ABI's snake_case. */
  async leader(key: string, flags: number): Promise<AbiReply> {
    try {
      const scope = this.#scopeOf(electionKey(key), flags);
      const l = await this.#service.leader(key, { scope });
      return textReply(JSON.stringify(l.held ? { key, held: true, node: l.node, plugin: l.plugin, value: l.value, term: l.term, since_ms: l.sinceMs } : { key, held: false }));
    } catch (err) {
      return this.failure(err);
    }
  }

  #leadershipOf(handle: number, lease: Lease): Leadership {
    const leadership = this.#leaderships.get(lease);
    if (!leadership) throw new LockhostError("INVALID_HANDLE", `handle ${handle} is lock ${lease.name}, not a leadership (lock.campaign)`);
    return leadership;
  }

  /** The reply for a failed call: -code and its message (a host bug is logged too). */
  failure(err: unknown): AbiReply {
    const e = toLockhostError(err);
    if (e.code === "INTERNAL") this.#log.error({ err }, "lock call failed inside the host");
    return { result: -e.status, text: e.message };
  }
}

const noop = (): void => undefined;

const heldLock = (handle: number, lease: Lease): HeldLock => ({ handle, name: lease.name, kind: lease.kind, fence: lease.fence });

/** The kind a status call's flags ask for (each kind's status flag): undefined for the mutex; two at once is INVALID_ARGUMENT. */
function sharedKindOfFlags(flags: number): QueueKind | undefined {
  const asked = QUEUE_KINDS.filter((kind) => (flags & KINDS[kind].statusFlag) !== 0);
  if (asked.length > 1) throw new LockhostError("INVALID_ARGUMENT", `flags may hold ${QUEUE_KINDS.map((kind) => KINDS[kind].statusFlagName).join(" or ")}, not ${asked.length === 2 ? "both" : "several"}`);
  return asked[0];
}

/** The status JSON of a read/write lock or semaphore, in the ABI's snake_case. */
function sharedStatusJson(s: LockStatus): string {
  return JSON.stringify({
    key: s.name,
    kind: s.kind,
    held: s.held,
    limit: s.limit,
    queued: s.queued,
    holders: s.holders.map((h) => ({
      mode: h.mode, fence: h.fence, holder: { plugin: h.plugin, node: h.node },
      acquired_at_ms: h.acquiredAtMs, expires_at_ms: h.expiresAtMs, ttl_remaining_ms: h.ttlRemainingMs, ttl_ms: h.ttlMs,
    })),
  });
}

const textReply = (json: string): AbiReply => ({ result: Buffer.byteLength(json), text: json });

/** What last_error says after a contended lock.try: the full lock name the guest could not take. */
function contendedNote(key: string, flags: number, plugin: string, spec: LockSpec): string {
  const name = qualify(key, (flags & FLAG_GLOBAL) !== 0 ? "global" : { plugin });
  return `CONTENDED: ${KINDS[spec.kind].isDefault ? `lock ${name}` : kindName(spec.kind, name)} is held by another owner`;
}
