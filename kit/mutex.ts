// A backend may keep a mutex in a record of its own, one holder per name, when that is faster
// than its general steps (the Redis mutex's one-key script, PostgreSQL's advisory locks): it
// implements MutexStore, and MutexSteps serves it behind the one interface of kit/steps.ts. The
// host never sees the difference; this is the only place the single record is mapped.
import type { Acquired, Holder, ListRequest, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "./common.js";
import { checkKind, isQueueKind, KINDS, LOCK_KINDS, MUTEX, type LockKind, type QueueKind } from "./kinds.js";
import type { AcquireRequest, AcquireResult, HandoffResult, HolderRecord, KindSteps, LockState, LockStatePage } from "./steps.js";

/** One mutex acquisition attempt (AcquireRequest without the fields a mutex has no use for). */
export interface MutexAcquireRequest {
  /** Fully qualified lock name (scope applied), e.g. "billing:nightly". */
  readonly name: string;
  /** Random owner token; renew and release compare-and-set on it. */
  readonly owner: string;
  readonly ttlMs: number;
  readonly holder: Holder;
}

/** The outcome of a mutex acquisition: never an error for contention. */
export type MutexAcquireResult =
  | Acquired
  | {
      readonly acquired: false;
      /** How long until the holder's lease ends, in ms on the server's clock, when learned in the same step. */
      readonly retryAfterMs?: number;
    };

/** What a mutex handoff did (MutexStore.handoff; KindSteps.handoff's result with a mutex acquisition). */
export type MutexHandoffResult = HandoffResult<MutexAcquireResult>;

/** A mutex's one record: its name and its one holder (whose mode is always "exclusive"). */
export interface LockRecord extends Omit<HolderRecord, "mode"> {
  readonly name: string;
}

/** One page of held mutexes. */
export interface LockPage {
  readonly locks: readonly LockRecord[];
  readonly cursor?: string;
}

/** The steps of a mutex kept in one record per name: KindSteps' rules with one exclusive holder and no queue. */
export interface MutexStore {
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult>;
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  release(name: string, owner: string): Promise<ReleaseResult>;
  /** Optional: release and the next owner's acquisition in one atomic step (KindSteps.handoff). */
  handoff?(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult>;
  status(name: string): Promise<LockRecord | null>;
  /** True when there was a holder. */
  forceRelease(name: string): Promise<boolean>;
  list(req: ListRequest): Promise<LockPage>;
  watch(name: string, listener: () => void): ReleaseWatch;
  proclaim?(name: string, owner: string, value: string): Promise<boolean>;
}

/** What starts every namespaced name in a store (no lock name can: see KindRow.namespace). */
const NAMESPACED = "\u0001";

/**
 * A MutexStore served as the KindSteps of `kind`: the mutex, or another kind whose row has store
 * "single" (leader election), whose names the store keeps under the row's namespace. The
 * mutex's own steps pass names through untouched, so its lock path pays nothing for this.
 */
export class MutexSteps implements KindSteps {
  readonly kind: LockKind;
  readonly #store: MutexStore;
  readonly #ns: string;
  readonly proclaim?: (name: string, owner: string, value: string) => Promise<boolean>;
  readonly handoff?: (name: string, owner: string, next: AcquireRequest) => Promise<HandoffResult>;

  constructor(store: MutexStore, kind: LockKind = MUTEX.kind) {
    if (KINDS[kind].store !== "single") throw new TypeError(`MutexSteps serves kinds stored as one record, not ${kind}`);
    this.kind = kind;
    this.#store = store;
    this.#ns = KINDS[kind].namespace;
    if (typeof store.proclaim === "function") {
      const proclaim = store.proclaim.bind(store);
      this.proclaim = this.#ns === "" ? proclaim : (name, owner, value) => proclaim(this.#ns + name, owner, value);
    }
    // Only a kind that hands off locally is ever handed off (host/locking/handoff.ts): the mutex,
    // whose names go to the store as they are.
    if (typeof store.handoff === "function" && KINDS[kind].handsOffLocally && this.#ns === "") this.handoff = store.handoff.bind(store);
    if (this.#ns === "") {
      // The mutex's lock path goes straight to the store: no layer of its own per call.
      this.acquire = (req) => store.acquire(req);
      this.release = (name, owner) => store.release(name, owner);
      this.renewMany = (reqs) => store.renewMany(reqs);
    }
  }

  acquire(req: AcquireRequest): Promise<AcquireResult> {
    return this.#store.acquire(this.#ns === "" ? req : { ...req, name: this.#ns + req.name });
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#store.renewMany(this.#ns === "" ? reqs : reqs.map((r) => ({ ...r, name: this.#ns + r.name })));
  }

  release(name: string, owner: string): Promise<ReleaseResult> {
    return this.#store.release(this.#ns + name, owner);
  }

  leaveQueue(): Promise<void> {
    return Promise.resolve();
  }

  async status(name: string): Promise<LockState | null> {
    const record = await this.#store.status(this.#ns + name);
    return record === null ? null : this.#state(record);
  }

  async forceRelease(name: string): Promise<number> {
    return (await this.#store.forceRelease(this.#ns + name)) ? 1 : 0;
  }

  async list(req: ListRequest): Promise<LockStatePage> {
    const page = await this.#store.list(this.#ns === "" ? req : { ...req, prefix: this.#ns + (req.prefix ?? "") });
    const records: LockState[] = [];
    for (const record of page.locks) {
      // The mutex's pages skip the other namespaces' names (a page may hold fewer than asked).
      if (this.#ns === "" ? !record.name.startsWith(NAMESPACED) : record.name.startsWith(this.#ns)) records.push(this.#state(record));
    }
    return page.cursor === undefined ? { records } : { records, cursor: page.cursor };
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#store.watch(this.#ns + name, listener);
  }

  #state({ name, ...holder }: LockRecord): LockState {
    const one: HolderRecord = { ...holder, mode: "exclusive" };
    return { name: name.slice(this.#ns.length), kind: this.kind, limit: 0, holders: [one], queued: 0 };
  }
}

/**
 * A backend's steps per kind, each made on first use and then kept: a kind stored as one record
 * from the backend's MutexStore (MutexSteps), a queue kind by `queue`. Refuses a kind that is not
 * a row (INVALID_ARGUMENT), so LockBackend.steps needs no check of its own.
 */
export class StepsByKind<Q extends KindSteps = KindSteps> {
  readonly #made = new Map<LockKind, KindSteps>();
  readonly #single: MutexStore;
  readonly #queue: (kind: QueueKind) => Q;
  readonly #queues: Q[] = [];

  constructor(single: MutexStore, queue: (kind: QueueKind) => Q) {
    this.#single = single;
    this.#queue = queue;
  }

  /** The steps of `kind`. */
  get(kind: LockKind): KindSteps {
    let steps = this.#made.get(kind);
    if (steps === undefined) {
      checkKind(kind, LOCK_KINDS);
      if (isQueueKind(kind)) {
        const made = this.#queue(kind);
        this.#queues.push(made);
        steps = made;
      } else {
        steps = new MutexSteps(this.#single, kind);
      }
      this.#made.set(kind, steps);
    }
    return steps;
  }

  /** The queue kinds' steps made so far (a backend clears or closes them). */
  get queues(): readonly Q[] {
    return this.#queues;
  }
}
