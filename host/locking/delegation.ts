// Lock delegation (hot keys), written once above the backends. A host that holds a mutex for one
// local caller keeps the backend lock while its other local callers wait, and hands the key
// between them without a round trip, as Lustre's LDLM lock caching, GFS2's glocks and Chubby's
// cached locks do. It sits between the host and the backend's mutex steps (DelegatingSteps), so
// the rest of the lifecycle is the one every lock has: the waiting line and the handoff of
// waiting.ts and handoff.ts pick the next local caller, the renewal manager renews, a loss notice
// or a failed renewal ends the holder's lease as `lost`.
//
// - Fences: a delegated grant reserves a block of `fence_block` fences (kit/delegation.ts); the
//   first holder gets the base, each local handoff the next one, and any later grant anywhere is
//   at least base + block. At most one fence per µs since the grant was sent is handed out
//   (redis/delegation.ts says why). A used-up block is renewed in one atomic step (`from`).
// - Exclusion is the backend lease: the grant's lease runs from its send time, by this host's
//   clock; a local handoff happens only while at least the next holder's TTL / 2 of it is left
//   (else the grant is renewed with a new block, one round trip), and the next holder's lease
//   ends no later than the grant's. Each local holder has its own owner token; the backend owner
//   stays the grant's (its first holder's token), and this layer maps one to the other for
//   renew, release, status and the backend's loss notices.
// - Fairness: a waiter of another host marks the key wanted (the grant's contended outcome);
//   this host then stops handing it on (after `min_hold_ms` from the grant, or
//   `wanted_handoffs` more handoffs) and releases it, and its own waiters stand back while the
//   mark lasts. `max_hold_ms` bounds a grant however busy the host (for waiters that do not
//   delegate, and so do not mark).
import type { AcquireRequest, AcquireResult, HandoffResult, KindSteps, LockState, LockStatePage } from "../../kit/steps.js";
import type { DelegationSteps } from "../../kit/delegation.js";
import type { ListRequest, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "../../kit/common.js";
import type { LockBackend } from "../../kit/backend.js";
import { MUTEX } from "../../kit/kinds.js";
import type { DelegationSettings } from "./options.js";

/** An acquisition as the host sends it down: with the caller's `delegate` option, when it gave one. */
export interface DelegatedRequest extends AcquireRequest {
  /** Delegate this acquisition (true), never (false), or as `[locking.delegation] enabled` says (absent). */
  readonly delegate?: boolean;
  /**
   * Made for a waiting acquisition: only a waiter marks a key wanted (a try that finds it held
   * does not come back for it, and a mark would keep it idle for nobody).
   */
  readonly waiting?: boolean;
}

/** One delegated grant this host holds. */
interface Grant {
  readonly name: string;
  /** The backend's owner of the record: the token of the grant's first holder. */
  owner: string;
  /** The block's base, and how many of its fences were handed out. */
  base: number;
  used: number;
  /** The owner token of the current local holder. */
  local: string;
  /** When the backend lease ends by this host's clock (performance.now(), from the send time of the grant or the latest renewal). */
  deadline: number;
  /** When the current block's grant was sent (performance.now()): the one-fence-per-µs rule. */
  sentAt: number;
  /** How long the grant took to come back, ms: the stand-back after giving the key up is a few of these. */
  rttMs: number;
  /** When the key was first granted to this host in this run of grants (max_hold_ms, min_hold_ms). */
  readonly since: number;
  /** When another host marked it wanted (0: not yet), and local handoffs since. */
  wanted: number;
  wantedHandoffs: number;
  watch: ReleaseWatch | undefined;
}

const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });

/** Round trips (of this host's grant) its own waiters stand back after it gave a key up for another host's waiter. */
const STAND_BACK_RTTS = 4;

/**
 * The mutex's steps with delegation: DelegatingSteps when the backend has the steps of
 * kit/delegation.ts and serves the mutex, else undefined (delegation silently off).
 */
export function delegatingSteps(backend: LockBackend, settings: DelegationSettings): DelegatingSteps | undefined {
  const steps = backend.delegation;
  if (steps === undefined || !backend.kinds.includes(MUTEX.kind)) return undefined;
  return new DelegatingSteps(backend.steps(MUTEX.kind), steps, settings);
}

/** The mutex's KindSteps with delegation (see above); requests without it go to the backend's steps untouched. */
export class DelegatingSteps implements KindSteps {
  readonly kind = MUTEX.kind;
  readonly #inner: KindSteps;
  readonly #steps: DelegationSteps;
  readonly #settings: DelegationSettings;
  readonly #grants = new Map<string, Grant>();
  /** Keys given up for another host's waiter, and until when (performance.now()) this host's own grants stand back for it. */
  readonly #standBack = new Map<string, number>();
  /** Grants by their backend owner (loss notices name it). */
  readonly #byOwner = new Map<string, Grant>();
  readonly proclaim?: (name: string, owner: string, value: string) => Promise<boolean>;
  /** Grants taken from the backend, local handoffs, and grants given up for another host (stats, bench). */
  readonly counts = { grants: 0, localHandoffs: 0, yielded: 0 };
  /** Fences per grant: `fence_block`, at most the backend's largest block. */
  readonly #block: number;

  constructor(inner: KindSteps, steps: DelegationSteps, settings: DelegationSettings) {
    this.#inner = inner;
    this.#steps = steps;
    this.#settings = settings;
    this.#block = Math.min(settings.fenceBlock, steps.maxBlock ?? settings.fenceBlock);
    if (inner.proclaim !== undefined) this.proclaim = inner.proclaim.bind(inner);
  }

  /** Whether `owner` holds `name` through a live grant of this host (handoff.ts then lifts the local handoff bound). */
  delegates(name: string, owner: string): boolean {
    const g = this.#live(name);
    return g !== undefined && g.local === owner;
  }

  /** The owner token a backend's loss notice about `owner` means here: a grant's current local holder (the grant ends), or `owner` itself. */
  localOwnerOf(owner: string): string {
    const g = this.#byOwner.get(owner);
    if (g === undefined) return owner;
    this.#drop(g);
    return g.local;
  }

  acquire(req: DelegatedRequest): Promise<AcquireResult> {
    if (!(req.delegate ?? this.#settings.enabled)) return this.#inner.acquire(req);
    const g = this.#live(req.name);
    // Held here already (a tryLock's holder, outside the waiting line): contended, without asking.
    if (g !== undefined) return Promise.resolve({ acquired: false, retryAfterMs: Math.max(0, Math.floor(g.deadline - performance.now())) });
    if (this.#standBack.size > 0) {
      const until = this.#standBack.get(req.name);
      if (until !== undefined) {
        const left = until - performance.now();
        if (left > 0) return Promise.resolve({ acquired: false, retryAfterMs: Math.ceil(left) });
        this.#standBack.delete(req.name);
      }
    }
    return this.#grant(req, undefined, undefined);
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    if (this.#grants.size === 0) return this.#inner.renewMany(reqs);
    return this.#renewMany(reqs);
  }

  async #renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    let sent: RenewRequest[] | undefined;
    for (let i = 0; i < reqs.length; i++) {
      const r = reqs[i]!;
      const g = this.#grants.get(r.name);
      if (g !== undefined && g.local === r.owner && g.owner !== r.owner) (sent ??= reqs.slice())[i] = { name: r.name, owner: g.owner, ttlMs: r.ttlMs };
    }
    const sentAt = performance.now();
    const results = await this.#inner.renewMany(sent ?? reqs);
    for (let i = 0; i < reqs.length; i++) {
      const r = reqs[i]!;
      const g = this.#grants.get(r.name);
      if (g === undefined || g.local !== r.owner) continue;
      if (results[i]!.ok) g.deadline = sentAt + r.ttlMs;
      else this.#drop(g);
    }
    return results;
  }

  release(name: string, owner: string): Promise<ReleaseResult> {
    const g = this.#grants.get(name);
    if (g === undefined || g.local !== owner) return this.#inner.release(name, owner);
    this.#drop(g);
    return this.#inner.release(name, g.owner);
  }

  handoff(name: string, owner: string, next: AcquireRequest): Promise<HandoffResult> {
    const g = this.#live(name);
    if (g === undefined || g.local !== owner) return this.#plainHandoff(name, owner, next);
    const now = performance.now();
    const s = this.#settings;
    if (!((next as DelegatedRequest).delegate ?? s.enabled)) return this.#giveUp(g);
    if (s.maxHoldMs > 0 && now - g.since >= s.maxHoldMs) return this.#giveUp(g);
    if (g.wanted !== 0) {
      // Another host waits: this one hands on only within its minimum hold, or its allowance of handoffs.
      if (now - g.since >= s.minHoldMs && g.wantedHandoffs >= s.wantedHandoffs) return this.#giveUp(g);
      g.wantedHandoffs++;
    }
    const left = g.deadline - now;
    // A block used up, one fence per µs since the grant, or too little lease left for the next holder: a new grant, in one step.
    if (g.used >= this.#block || g.used > (now - g.sentAt) * 1_000 || left < next.ttlMs / 2) return this.#regrant(g, next);
    g.local = next.owner;
    const fence = g.base + g.used++;
    this.counts.localHandoffs++;
    const acquiredAtMs = Date.now();
    const handed: HandoffResult = { released: "released", next: { acquired: true, fence, acquiredAtMs, expiresAtMs: acquiredAtMs + Math.floor(left) } };
    return Promise.resolve(handed);
  }

  leaveQueue(name: string, owner: string): Promise<void> {
    return this.#inner.leaveQueue(name, owner);
  }

  /** The backend's record, with this host's current local holder and fence when it delegates the key (other hosts see the grant's). */
  async status(name: string): Promise<LockState | null> {
    const state = await this.#inner.status(name);
    const g = this.#live(name);
    const first = state?.holders[0];
    if (state === null || g === undefined || first === undefined || first.owner !== g.owner) return state;
    return { ...state, holders: [{ ...first, owner: g.local, fence: g.base + g.used - 1 }] };
  }

  forceRelease(name: string): Promise<number> {
    const g = this.#grants.get(name);
    if (g !== undefined) this.#drop(g);
    return this.#inner.forceRelease(name);
  }

  list(req: ListRequest): Promise<LockStatePage> {
    return this.#inner.list(req);
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#inner.watch(name, listener);
  }

  /** Drops every grant (the service closes: its leases are released or given up). */
  clear(): void {
    for (const g of [...this.#grants.values()]) this.#drop(g);
    this.#standBack.clear();
  }

  /** A grant of this host on `name` whose lease has not ended by this host's clock. */
  #live(name: string): Grant | undefined {
    const g = this.#grants.get(name);
    if (g === undefined || performance.now() < g.deadline) return g;
    this.#drop(g);
    return undefined;
  }

  /** A new grant for `req` (replacing `prev`, this host's grant of the name, when given). */
  async #grant(req: AcquireRequest, prev: Grant | undefined, since: number | undefined): Promise<AcquireResult> {
    const s = this.#settings;
    const sentAt = performance.now();
    const result = await this.#steps.grant({
      name: req.name,
      owner: req.owner,
      ttlMs: req.ttlMs,
      holder: req.holder,
      block: this.#block,
      wantedMs: (req as DelegatedRequest).waiting === true ? s.wantedMs : 0,
      ...(prev && { from: prev.owner }),
    });
    const watch = prev?.watch;
    if (prev !== undefined) this.#drop(prev, result.acquired);
    if (!result.acquired) return result;
    this.counts.grants++;
    const life = Math.min(req.ttlMs, result.expiresAtMs - result.acquiredAtMs);
    const g: Grant = {
      name: req.name,
      owner: req.owner,
      base: result.fence,
      used: 1,
      local: req.owner,
      deadline: sentAt + life,
      sentAt,
      rttMs: performance.now() - sentAt,
      since: since ?? sentAt,
      wanted: prev?.wanted ?? 0,
      wantedHandoffs: prev?.wantedHandoffs ?? 0,
      watch: result.acquired ? watch : undefined,
    };
    const old = this.#grants.get(req.name);
    if (old !== undefined && old !== prev) this.#drop(old);
    this.#grants.set(req.name, g);
    this.#byOwner.set(g.owner, g);
    g.watch ??= this.#steps.wanted(req.name, () => this.#wanted(g.name));
    return result;
  }

  #wanted(name: string): void {
    const g = this.#grants.get(name);
    if (g !== undefined && g.wanted === 0) g.wanted = performance.now();
  }

  /** The next holder's grant in place of `g`'s: a new block and a fresh lease, in one round trip. */
  async #regrant(g: Grant, next: AcquireRequest): Promise<HandoffResult> {
    const result = await this.#grant(next, g, g.since);
    if (result.acquired) return { released: "released", next: result };
    // Someone else holds it: this host's grant had ended (expired, force-released).
    return { released: "mismatch" };
  }

  /** Releases `g` for the other hosts: the next local waiter gets no lease from it and tries on its own. */
  async #giveUp(g: Grant): Promise<HandoffResult> {
    this.counts.yielded++;
    // Given up for a waiter of another host: this host's own waiters let it take the key, for the
    // few round trips that takes (its notice, its grant), at most wanted_ms. A backend that keeps a
    // wanted mark (Redis) also refuses them on the server until the marking host has it.
    if (g.wanted !== 0) this.#standBack.set(g.name, performance.now() + Math.min(this.#settings.wantedMs, Math.max(1, STAND_BACK_RTTS * g.rttMs)));
    const released = await this.release(g.name, g.local);
    // Nothing is taken for `next`: it was not given this step's owner, so the host tries (and waits) for it as for any waiter.
    return released === "released" ? { released, next: NOT_ACQUIRED } : { released };
  }

  /** A handoff of a lock this layer does not delegate: the backend's, or its release then the acquisition. */
  async #plainHandoff(name: string, owner: string, next: AcquireRequest): Promise<HandoffResult> {
    if ((next as DelegatedRequest).delegate ?? this.#settings.enabled) {
      const released = await this.#inner.release(name, owner);
      if (released !== "released") return { released };
      // The next holder's own grant (a delegated one): contended when another host got there first.
      return { released, next: await this.#grant(next, undefined, undefined).catch(() => NOT_ACQUIRED) };
    }
    if (this.#inner.handoff !== undefined) return this.#inner.handoff(name, owner, next);
    const released = await this.#inner.release(name, owner);
    if (released !== "released") return { released };
    return { released, next: await this.#inner.acquire(next).catch(() => NOT_ACQUIRED) };
  }

  /** Forgets `g` (the backend lock is released, lost, or replaced: `keepWatch` when its successor takes the watch over). */
  #drop(g: Grant, keepWatch = false): void {
    if (this.#grants.get(g.name) === g) this.#grants.delete(g.name);
    if (this.#byOwner.get(g.owner) === g) this.#byOwner.delete(g.owner);
    if (!keepWatch) g.watch?.close();
    g.watch = undefined;
  }
}
