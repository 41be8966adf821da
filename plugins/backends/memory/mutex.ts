// The memory backend's mutex: its MutexStore (kit/mutex.ts), one entry per key in a Map of
// this process, which MutexSteps serves, through MemoryBackend's methods (index.ts), as the
// mutex's and the leader kind's steps. Expired entries are swept lazily; watches are woken in this process, with
// no subscription round trip.
import { ReleaseListeners } from "../../../kit/index.js";
import type {
  Holder,
  ListRequest,
  LockPage,
  LockRecord,
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";

interface Entry {
  owner: string;
  fence: number;
  holder: Holder;
  acquiredAtMs: number;
  expiresAtMs: number;
  /** The TTL of the current lease (acquire or the latest renew), reported by status. */
  ttlMs: number;
  /** What the holder proclaimed (MutexStore.proclaim), if it did. */
  value?: string;
}

/** How many operations pass between two incremental sweeps of expired entries. */
const SWEEP_EVERY_OPS = 1024;
/** How many entries one sweep looks at, so a sweep never stalls the event loop. */
const SWEEP_BATCH = 256;

/** What the mutex borrows from its MemoryBackend: the clock and loss notices. */
export interface MemoryMutexParts {
  /** The backend's clock (MemoryBackendOptions.now). */
  readonly now: () => number;
  /** Tells every onLost listener of the backend that `owner`'s lock is gone. */
  readonly lost: (owner: string) => void;
}

/**
 * The mutex's steps in one MemoryBackend (see kit/steps.ts for each step's
 * contract); every time it reports is an integer number of ms on the backend's clock.
 */
export class MemoryMutex implements MutexStore {
  readonly #locks = new Map<string, Entry>();
  /** Fence counters are never deleted, so fences keep increasing after a lock expires. */
  readonly #fences = new Map<string, number>();
  readonly #now: () => number;
  readonly #lost: (owner: string) => void;
  /** Release listeners per key (MutexStore.watch): in-process, so no subscription round trip. */
  readonly #watchers = new ReleaseListeners();
  #opsSinceSweep = 0;
  #sweepCursor: Iterator<[string, Entry]> | undefined;

  constructor(parts: MemoryMutexParts) {
    this.#now = parts.now;
    this.#lost = parts.lost;
  }

  /** Entries in the map, including expired ones not swept yet (for tests and metrics). */
  get size(): number {
    return this.#locks.size;
  }

  /** The next fence of `name`: its counter, shared with the queue kinds' steps, is never deleted. */
  nextFence(name: string): number {
    const fence = (this.#fences.get(name) ?? 0) + 1;
    this.#fences.set(name, fence);
    return fence;
  }

  /** Takes `req.name` if it is free or its lease ended, with the next fence (MutexStore.acquire). */
  async acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    const now = this.#now();
    this.#maybeSweep(now);
    const held = this.#live(req.name, now);
    if (held) return { acquired: false, retryAfterMs: held.expiresAtMs - now };
    const fence = (this.#fences.get(req.name) ?? 0) + 1;
    this.#fences.set(req.name, fence);
    const entry: Entry = {
      owner: req.owner,
      fence,
      holder: req.holder,
      acquiredAtMs: now,
      expiresAtMs: now + req.ttlMs,
      ttlMs: req.ttlMs,
    };
    this.#locks.set(req.name, entry);
    return { acquired: true, fence, acquiredAtMs: now, expiresAtMs: entry.expiresAtMs };
  }

  /** Sets the lease to `ttlMs` from now if `owner` still holds `name` (the one-lock form of MutexStore.renewMany). */
  async renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    const now = this.#now();
    const entry = this.#live(name, now);
    if (!entry) return { ok: false, reason: "not_found" };
    if (entry.owner !== owner) return { ok: false, reason: "mismatch" };
    entry.expiresAtMs = now + ttlMs;
    entry.ttlMs = ttlMs;
    return { ok: true, expiresAtMs: entry.expiresAtMs };
  }

  /** Renews each lock as renew() would (MutexStore.renewMany). */
  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return Promise.all(reqs.map((r) => this.renew(r.name, r.owner, r.ttlMs)));
  }

  /** Deletes the lock if `owner` still holds `name` (MutexStore.release). */
  async release(name: string, owner: string): Promise<ReleaseResult> {
    const entry = this.#live(name, this.#now());
    if (!entry) return "not_found";
    if (entry.owner !== owner) return "mismatch";
    this.#locks.delete(name);
    this.#released(name);
    // The releaser may not be the holder (restore by owner token): every service sharing this
    // instance hears it; the holder's marks its lease lost, the releaser's has let go already.
    this.#lost(owner);
    return "released";
  }

  /** Stores `value` in the record if `owner` still holds `name`, then wakes its watchers (MutexStore.proclaim). */
  async proclaim(name: string, owner: string, value: string): Promise<boolean> {
    const entry = this.#live(name, this.#now());
    if (!entry || entry.owner !== owner) return false;
    entry.value = value;
    this.#released(name);
    return true;
  }

  /** Calls `listener` after every release, force-release or proclamation of `name` in this instance (MutexStore.watch). */
  watch(name: string, listener: () => void): ReleaseWatch {
    return { ready: Promise.resolve(), close: this.#watchers.add(name, listener) };
  }

  /** The live holder of `name`, or null (MutexStore.status). */
  async status(name: string): Promise<LockRecord | null> {
    const now = this.#now();
    const entry = this.#live(name, now);
    if (!entry) return null;
    return { name, ...entry, ttlRemainingMs: Math.max(0, entry.expiresAtMs - now) };
  }

  /** A page of live locks in name order; the cursor is the last name listed (MutexStore.list). */
  async list(req: ListRequest): Promise<LockPage> {
    const now = this.#now();
    const { prefix = "", cursor } = req;
    const names = [...this.#locks.keys()].filter((k) => k.startsWith(prefix) && (cursor === undefined || k > cursor)).sort();
    const page = names.slice(0, req.limit);
    const locks: LockRecord[] = [];
    for (const name of page) {
      const entry = this.#live(name, now);
      if (entry) locks.push({ name, ...entry, ttlRemainingMs: Math.max(0, entry.expiresAtMs - now) });
    }
    return names.length > page.length ? { locks, cursor: page[page.length - 1]! } : { locks };
  }

  /** Deletes the lock whoever holds it; fence counters stay (MutexStore.forceRelease). */
  async forceRelease(name: string): Promise<boolean> {
    const entry = this.#live(name, this.#now());
    this.#locks.delete(name);
    if (entry) {
      this.#released(name);
      this.#lost(entry.owner);
    }
    return entry !== undefined;
  }

  /** Drops every lock (fence counters stay, so a reused instance keeps fences increasing). */
  clear(): void {
    this.#locks.clear();
  }

  /** Tells the key's watchers, after the caller's step has returned (as a server's message would). */
  #released(name: string): void {
    if (this.#watchers.has(name)) queueMicrotask(() => this.#watchers.wake(name));
  }

  /** The entry for `name` if its lease has not ended; an ended one is dropped on the way. */
  #live(name: string, now: number): Entry | undefined {
    const entry = this.#locks.get(name);
    if (entry && entry.expiresAtMs <= now) {
      this.#locks.delete(name);
      return undefined;
    }
    return entry;
  }

  /** Drops a bounded batch of expired entries every few operations, keys never touched again included. */
  #maybeSweep(now: number): void {
    if (++this.#opsSinceSweep < SWEEP_EVERY_OPS) return;
    this.#opsSinceSweep = 0;
    for (let i = 0; i < SWEEP_BATCH; i++) {
      this.#sweepCursor ??= this.#locks.entries();
      const next = this.#sweepCursor.next();
      if (next.done) {
        this.#sweepCursor = undefined;
        return;
      }
      const [key, entry] = next.value;
      if (entry.expiresAtMs <= now) this.#locks.delete(key);
    }
  }
}
