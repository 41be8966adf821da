// The queue kinds (read/write locks, semaphores, fair mutexes) in this process (kit/steps.ts): one Map of keys per kind,
// each key its holders, its queue of exclusive waiters, its limit and its fence counter.
// Expired holders and queue places are dropped whenever the key is touched.
import { ReleaseListeners } from "../../../kit/index.js";
import type {
  Holder,
  ListRequest,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
  AcquireRequest,
  AcquireResult,
  HolderRecord,
  QueueKind,
  LockMode,
  KindSteps,
  LockState,
  LockStatePage,
} from "../../../kit/index.js";

interface HolderEntry {
  readonly mode: LockMode;
  readonly fence: number;
  readonly holder: Holder;
  readonly acquiredAtMs: number;
  expiresAtMs: number;
  ttlMs: number;
}

interface KeyEntry {
  /** By owner, in acquisition order (a Map keeps insertion order). */
  readonly holders: Map<string, HolderEntry>;
  /** Exclusive waiters' places by owner, in arrival order, with when each lapses. */
  readonly queue: Map<string, number>;
  limit: number;
}

/** What the queue store borrows from its MemoryBackend: the clock, the fence counters and loss notices. */
export interface MemoryQueueParts {
  readonly now: () => number;
  /** The next fence of `name` (the counter is never deleted). */
  readonly nextFence: (name: string) => number;
  /** Tells the backend's onLost listeners that `owner` lost its hold. */
  readonly lost: (owner: string) => void;
}

/** The queue steps of one kind on the memory backend. */
export class MemoryQueueSteps implements KindSteps {
  readonly kind: QueueKind;
  readonly #keys = new Map<string, KeyEntry>();
  readonly #watchers = new ReleaseListeners();
  readonly #parts: MemoryQueueParts;

  constructor(kind: QueueKind, parts: MemoryQueueParts) {
    this.kind = kind;
    this.#parts = parts;
  }

  async acquire(req: AcquireRequest): Promise<AcquireResult> {
    const now = this.#parts.now();
    const entry = this.#entry(req.name, now, true)!;
    const { holders, queue } = entry;
    const earliestEnd = (): number | undefined => {
      let end: number | undefined;
      for (const h of holders.values()) end = end === undefined ? h.expiresAtMs : Math.min(end, h.expiresAtMs);
      return end === undefined ? undefined : Math.max(1, end - now);
    };
    if (holders.has(req.owner)) return contended(earliestEnd());
    if (req.mode === "exclusive") {
      const head = queue.keys().next();
      const mayTake = holders.size === 0 && (head.done === true || head.value === req.owner);
      if (!mayTake) {
        if (req.queueMs > 0) queue.set(req.owner, now + req.queueMs);
        this.#dropIfEmpty(req.name, entry);
        return contended(earliestEnd());
      }
      queue.delete(req.owner);
    } else {
      if (holders.size > 0 && entry.limit !== req.limit) return { acquired: false, limit: entry.limit };
      let exclusive = false;
      for (const h of holders.values()) exclusive ||= h.mode === "exclusive";
      const full = req.limit > 0 && holders.size >= req.limit;
      if (exclusive || queue.size > 0 || full) {
        this.#dropIfEmpty(req.name, entry);
        return contended(earliestEnd());
      }
    }
    if (holders.size === 0) entry.limit = req.mode === "shared" ? req.limit : 0;
    const fence = this.#parts.nextFence(`${this.kind}\u0000${req.name}`);
    const expiresAtMs = now + req.ttlMs;
    holders.set(req.owner, { mode: req.mode, fence, holder: req.holder, acquiredAtMs: now, expiresAtMs, ttlMs: req.ttlMs });
    return { acquired: true, fence, acquiredAtMs: now, expiresAtMs };
  }

  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    const now = this.#parts.now();
    return reqs.map((r) => {
      const h = this.#entry(r.name, now, false)?.holders.get(r.owner);
      if (!h) return { ok: false, reason: "not_found" } as const;
      h.expiresAtMs = now + r.ttlMs;
      h.ttlMs = r.ttlMs;
      return { ok: true, expiresAtMs: h.expiresAtMs } as const;
    });
  }

  async release(name: string, owner: string): Promise<ReleaseResult> {
    const entry = this.#entry(name, this.#parts.now(), false);
    if (!entry?.holders.delete(owner)) return "not_found";
    this.#dropIfEmpty(name, entry);
    this.#wake(name);
    // The releaser may not be the holder: every service sharing this instance hears it.
    this.#parts.lost(owner);
    return "released";
  }

  async leaveQueue(name: string, owner: string): Promise<void> {
    const entry = this.#entry(name, this.#parts.now(), false);
    if (!entry?.queue.delete(owner)) return;
    this.#dropIfEmpty(name, entry);
    this.#wake(name);
  }

  async status(name: string): Promise<LockState | null> {
    const now = this.#parts.now();
    const entry = this.#entry(name, now, false);
    return entry ? this.#record(name, entry, now) : null;
  }

  async forceRelease(name: string): Promise<number> {
    const entry = this.#entry(name, this.#parts.now(), false);
    if (!entry || entry.holders.size === 0) return 0;
    const owners = [...entry.holders.keys()];
    entry.holders.clear();
    this.#dropIfEmpty(name, entry);
    this.#wake(name);
    for (const owner of owners) this.#parts.lost(owner);
    return owners.length;
  }

  async list(req: ListRequest): Promise<LockStatePage> {
    const now = this.#parts.now();
    const { prefix = "", cursor } = req;
    const names = [...this.#keys.keys()].filter((k) => k.startsWith(prefix) && (cursor === undefined || k > cursor)).sort();
    const page = names.slice(0, req.limit);
    const records: LockState[] = [];
    for (const name of page) {
      const entry = this.#entry(name, now, false);
      if (entry && entry.holders.size > 0) records.push(this.#record(name, entry, now));
    }
    return names.length > page.length ? { records, cursor: page[page.length - 1]! } : { records };
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return { ready: Promise.resolve(), close: this.#watchers.add(name, listener) };
  }

  /** Drops everything (the backend is closing); fence counters stay with the backend. */
  clear(): void {
    this.#keys.clear();
  }

  /** The key's entry with lapsed holders and places dropped; made when `create`, else undefined when empty. */
  #entry(name: string, now: number, create: boolean): KeyEntry | undefined {
    let entry = this.#keys.get(name);
    if (entry) {
      for (const [owner, h] of entry.holders) if (h.expiresAtMs <= now) entry.holders.delete(owner);
      for (const [owner, until] of entry.queue) if (until <= now) entry.queue.delete(owner);
      if (!create && entry.holders.size === 0 && entry.queue.size === 0) {
        this.#keys.delete(name);
        return undefined;
      }
    } else if (create) {
      this.#keys.set(name, (entry = { holders: new Map(), queue: new Map(), limit: 0 }));
    }
    return entry;
  }

  #dropIfEmpty(name: string, entry: KeyEntry): void {
    if (entry.holders.size === 0 && entry.queue.size === 0) this.#keys.delete(name);
  }

  #record(name: string, entry: KeyEntry, now: number): LockState {
    const holders: HolderRecord[] = [...entry.holders].map(([owner, h]) => ({
      owner,
      mode: h.mode,
      fence: h.fence,
      holder: h.holder,
      acquiredAtMs: h.acquiredAtMs,
      expiresAtMs: h.expiresAtMs,
      ttlMs: h.ttlMs,
      ttlRemainingMs: Math.max(0, h.expiresAtMs - now),
    }));
    holders.sort((a, b) => a.fence - b.fence);
    return { name, kind: this.kind, limit: entry.holders.size > 0 ? entry.limit : 0, holders, queued: entry.queue.size };
  }

  /** Tells the key's watchers after the caller's step has returned, as a server's message would. */
  #wake(name: string): void {
    if (this.#watchers.has(name)) queueMicrotask(() => this.#watchers.wake(name));
  }
}

const contended = (retryAfterMs: number | undefined): AcquireResult => (retryAfterMs === undefined ? { acquired: false } : { acquired: false, retryAfterMs });
