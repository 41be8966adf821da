// Locks left behind by calls whose outcome nobody knows. An acquisition or release that failed
// in the client (timed out, its connection cut with the command in flight) may have run on the
// server, or may run later: a paused Redis runs what was sent to it once it resumes, after the
// client gave up. Such a lock would be held by nobody until its TTL, and a schedule whose tick
// lock it is would skip every tick meanwhile. So the owner token of every failed acquisition
// (one this service minted: only then can a release by owner delete nothing else) and of every
// failed release waits here and is released by owner as soon as the backend answers: tried at
// once, then every RETRY_MS (one timer, one round at a time) until the backend's answer settles
// it. The book is bounded (MAX_UNSETTLED entries, each at most MAX_AGE_MS old): past that, a
// lock is left to its TTL, as before (a lease whose release was owed loses its keepalive, or
// its renewals would keep it alive until the host stops).
import type { ReleaseResult } from "../../kit/backend.js";
import type { LockKind } from "../../kit/kinds.js";
import type { Lease } from "./lease.js";
import { jittered, timerMs } from "./waiting.js";

/** The most owner tokens the book keeps; a new one pushes out the oldest. */
export const MAX_UNSETTLED = 1_024;
/** How often the book asks again while the backend does not answer (jittered). */
export const RETRY_MS = 500;
/** An entry older than this is dropped: a backend away so long leaves the lock to its TTL. */
export const MAX_AGE_MS = 10 * 60_000;
/**
 * Answers that found nothing under an acquisition's owner before it counts as settled. One is
 * not enough: the release by owner goes on a new connection, and may be answered before the
 * server runs the acquisition still waiting on the old one; the next round comes RETRY_MS later.
 */
const EMPTY_ANSWERS = 2;

/** A lock the book released (the backend still held it under its owner). */
export interface CleanedLock {
  readonly name: string;
  readonly kind: LockKind;
  readonly owner: string;
}

/** What the book needs of the service it serves. */
export interface UnsettledHost {
  /** Releases `owner`'s lock by owner (the backend's release step). */
  release(kind: LockKind, name: string, owner: string): Promise<ReleaseResult>;
  /**
   * Releases `lease` (its release failed before): "released" when the backend released it now,
   * "ended" when it answered otherwise (the lease is released or lost by then), "failed" when
   * it did not answer; never rejects.
   */
  settleLease(lease: Lease): Promise<"released" | "ended" | "failed">;
  /** Whether `lease` is still held here with its release owed (not released or lost meanwhile). */
  owes(lease: Lease): boolean;
  /** Whether a lease held here now has `owner` (then its lock is that lease's, not one left behind). */
  inUse(owner: string): boolean;
  /**
   * The book gives up on `lease`'s owed release (pushed out, or too old): if it is still held
   * here, its keepalive goes off, so it ends at its TTL instead of being renewed until the host
   * stops. Never throws.
   */
  abandon(lease: Lease): void;
}

interface Entry {
  readonly kind: LockKind;
  readonly name: string;
  readonly owner: string;
  /** The lease whose release failed; undefined for a failed acquisition (nobody got a lease). */
  readonly lease: Lease | undefined;
  /** When it was booked (performance.now()). */
  readonly since: number;
  /** Answers so far that found nothing under the owner. */
  empty: number;
  /** A try of it is under way. */
  busy: boolean;
}

/** Owner tokens of locks that may be held on the server with nobody to release them. */
export class UnsettledLocks {
  /** By owner token, oldest first (a Map keeps insertion order). */
  readonly #entries = new Map<string, Entry>();
  readonly #host: UnsettledHost;
  readonly #listeners = new Set<(cleaned: readonly CleanedLock[]) => void>();
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #closed = false;
  /** Locks the book found held and released. */
  cleaned = 0;
  /** Entries pushed out by a full book or dropped for age before the backend answered. */
  dropped = 0;

  constructor(host: UnsettledHost) {
    this.#host = host;
  }

  /** Owner tokens waiting for the backend now. */
  get size(): number {
    return this.#entries.size;
  }

  /**
   * An acquisition under `owner` (minted here) failed, or got a lock nobody may have: the lock
   * is released by owner now and, until the backend answers, every RETRY_MS. `granted`: the
   * backend granted it (a grant given back), so finding it held at once is no cleanup to count.
   * Resolves after the first try; never rejects.
   */
  async giveBack(kind: LockKind, name: string, owner: string, granted = false): Promise<void> {
    const entry = this.#book(kind, name, owner, undefined);
    if (entry === undefined) return;
    if ((await this.#try(entry)) && !granted) this.#count([entry]);
    this.#arm();
  }

  /** `lease`'s release failed: it is released again once the backend answers (first in RETRY_MS). */
  releaseOwed(lease: Lease): void {
    this.#book(lease.kind, lease.name, lease.owner, lease);
    this.#arm();
  }

  /** Calls `listener` with the locks each round found held and released; returns the function that stops. */
  onCleaned(listener: (cleaned: readonly CleanedLock[]) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** One last round (each try bounded by the backend's own timeouts), then no more. */
  async close(): Promise<void> {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#round;
    if (this.#entries.size > 0) await this.#runRound();
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #book(kind: LockKind, name: string, owner: string, lease: Lease | undefined): Entry | undefined {
    if (this.#closed) return undefined;
    const known = this.#entries.get(owner);
    // An owed release outranks an acquisition's entry under the same owner: that entry would
    // be settled by the lease holding the owner now (inUse), and the owed release forgotten.
    if (known !== undefined && (lease === undefined || known.lease !== undefined)) return known.busy ? undefined : known;
    if (known !== undefined) this.#entries.delete(owner);
    if (this.#entries.size >= MAX_UNSETTLED) this.#drop(this.#entries.values().next().value!);
    const entry: Entry = { kind, name, owner, lease, since: performance.now(), empty: 0, busy: false };
    this.#entries.set(owner, entry);
    return entry;
  }

  /** Gives up on `entry`: its lock is left to its TTL (a lease's renewals stop, see UnsettledHost.abandon). */
  #drop(entry: Entry): void {
    this.#entries.delete(entry.owner);
    this.dropped++;
    if (entry.lease !== undefined) this.#host.abandon(entry.lease);
  }

  #arm(): void {
    if (this.#closed || this.#timer !== undefined || this.#round !== undefined || this.#entries.size === 0) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        void this.#runRound().then(() => this.#arm());
      },
      timerMs(jittered(RETRY_MS)),
    );
    this.#timer.unref();
  }

  /** Tries every entry once, together; resolves when all have answered or failed. */
  #runRound(): Promise<void> {
    this.#round ??= (async () => {
      const now = performance.now();
      const due: Entry[] = [];
      for (const entry of this.#entries.values()) {
        if (now - entry.since > MAX_AGE_MS) this.#drop(entry);
        else if (!entry.busy) due.push(entry);
      }
      const cleaned = await Promise.all(due.map((e) => this.#try(e)));
      this.#count(due.filter((_, i) => cleaned[i]));
    })().finally(() => (this.#round = undefined));
    return this.#round;
  }

  /** One try of `entry`; true when it found the lock held and released it. Never rejects. */
  async #try(entry: Entry): Promise<boolean> {
    entry.busy = true;
    let done = false;
    let cleaned = false;
    try {
      if (entry.lease !== undefined) {
        const settled = this.#host.owes(entry.lease) ? await this.#host.settleLease(entry.lease) : "ended";
        cleaned = settled === "released";
        done = settled !== "failed";
      } else if (this.#host.inUse(entry.owner)) {
        done = true;
      } else {
        const result = await this.#host.release(entry.kind, entry.name, entry.owner);
        cleaned = result === "released";
        done = cleaned || ++entry.empty >= EMPTY_ANSWERS;
      }
    } catch {
      // The backend did not answer: the next round asks again.
    } finally {
      entry.busy = false;
    }
    // Only this entry: an owed release may have replaced it meanwhile (#book).
    if (done && this.#entries.get(entry.owner) === entry) this.#entries.delete(entry.owner);
    return cleaned;
  }

  /** Counts the locks a try found held and released, and tells the listeners. */
  #count(cleaned: readonly CleanedLock[]): void {
    if (cleaned.length === 0) return;
    this.cleaned += cleaned.length;
    const locks = cleaned.map(({ name, kind, owner }) => ({ name, kind, owner }));
    for (const listener of this.#listeners) {
      try {
        listener(locks);
      } catch {
        // A logger's bug must not stop the book.
      }
    }
  }
}
