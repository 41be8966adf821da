// Waiting for a held key, written once for every backend. The waiters of one host on one key
// form a FIFO queue and only its head asks the backend, so they are served in arrival order
// and a release costs one attempt, not one per waiter. The head sleeps until the key may be
// free: a release notification (LockBackend.watch: Redis pub/sub, PostgreSQL LISTEN/NOTIFY,
// in-process for memory; or a release by this host), the moment the holder's lease ends
// (retryAfterMs from the failed attempt), or, as a fallback for lost notifications, a
// jittered poll interval. The backend subscription is shared by a key's waiters and dropped
// with the last of them.
import type { ReleaseWatch } from "../../kit/backend.js";

/** Why a sleeping waiter woke up. */
type Wake = "timer" | "release" | "promoted";

/** One acquire call waiting in a key's queue. */
export class Waiter {
  /**
   * Whether it keeps its own place in the backend's queue of exclusive waiters (a waiting writer,
   * a fair mutex's waiter): then the backend orders the waiters of every host, and this one asks
   * it on every wake-up, as a head does, so its place stays fresh and it is served in turn even
   * when a waiter of another host stands between it and this host's head.
   */
  readonly placed: boolean;
  #wake: ((why: Wake) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Set when a wake came while the waiter was not sleeping (between two attempts). */
  #pending: Wake | undefined;

  constructor(placed = false) {
    this.placed = placed;
  }

  /** Sleeps up to `ms`, or until woken. */
  sleep(ms: number): Promise<Wake> {
    if (this.#pending) {
      const why = this.#pending;
      this.#pending = undefined;
      return Promise.resolve(why);
    }
    return new Promise<Wake>((resolve) => {
      this.#wake = resolve;
      this.#timer = setTimeout(() => this.wake("timer"), timerMs(ms));
    });
  }

  /** Ends the current sleep (or the next one, if the waiter is busy trying). */
  wake(why: Wake): void {
    const resolve = this.#wake;
    if (!resolve) {
      // A release beats a promotion: both mean "try", but a release says the key is free.
      if (this.#pending !== "release") this.#pending = why;
      return;
    }
    this.#wake = undefined;
    clearTimeout(this.#timer);
    resolve(why);
  }
}

interface KeyQueue {
  readonly waiters: Waiter[];
  watch: ReleaseWatch | undefined;
}

/**
 * The waiters of one LockService, per lock: a mutex's fully qualified name, or that name with
 * its kind for the other kinds (kinds.ts waitKey).
 */
export class WaitQueues {
  readonly #queues = new Map<string, KeyQueue>();
  #count = 0;

  /** Waiters queued now, over every key. */
  get size(): number {
    return this.#count;
  }

  /** Waiters queued now on `name` (a wait key: kinds.ts waitKey). */
  waitingOn(name: string): number {
    return this.#queues.get(name)?.waiters.length ?? 0;
  }

  /** Every name someone on this service waits for, with how many wait. */
  *waiting(): IterableIterator<[name: string, waiters: number]> {
    for (const [name, queue] of this.#queues) if (queue.waiters.length > 0) yield [name, queue.waiters.length];
  }

  /**
   * Queues `waiter` on `name` and subscribes to the key's releases if it is the first.
   * Resolves once notifications flow (or the subscription gave up): attempts made after that
   * cannot miss a release.
   */
  join(name: string, waiter: Waiter, watch: (listener: () => void) => ReleaseWatch): Promise<void> {
    let queue = this.#queues.get(name);
    if (!queue) {
      queue = { waiters: [], watch: undefined };
      this.#queues.set(name, queue);
      queue.watch = watch(() => this.notify(name));
    }
    queue.waiters.push(waiter);
    this.#count++;
    return queue.watch!.ready;
  }

  /** Whether `waiter` asks the backend: it is first in line for `name`, or keeps its own place there. */
  isHead(name: string, waiter: Waiter): boolean {
    return waiter.placed || this.#queues.get(name)?.waiters[0] === waiter;
  }

  /**
   * Takes `waiter` out of the queue. When it was the head, the next waiter becomes head: it
   * tries at once if the key may be free (`acquired` false: the head gave up), and otherwise
   * sleeps until a release (the head now holds the key).
   */
  leave(name: string, waiter: Waiter, acquired: boolean): void {
    const queue = this.#queues.get(name);
    if (!queue) return;
    const i = queue.waiters.indexOf(waiter);
    if (i < 0) return;
    queue.waiters.splice(i, 1);
    this.#count--;
    if (queue.waiters.length === 0) {
      this.#queues.delete(name);
      queue.watch?.close();
      return;
    }
    if (i === 0) queue.waiters[0]!.wake(acquired ? "promoted" : "release");
  }

  /** The key may be free (a release here or anywhere): the head, and every waiter with a place of its own, tries again. */
  notify(name: string): void {
    const waiters = this.#queues.get(name)?.waiters;
    if (!waiters) return;
    waiters[0]?.wake("release");
    for (let i = 1; i < waiters.length; i++) if (waiters[i]!.placed) waiters[i]!.wake("release");
  }

  /** Wakes every head (e.g. on close, so their calls can end). */
  wakeAll(): void {
    for (const queue of this.#queues.values()) queue.waiters[0]?.wake("release");
  }
}

/**
 * The longest delay setTimeout keeps (about 24.8 days): a longer one, or Infinity (an
 * unlimited wait), would fire at once. A sleep cut to it just wakes and sleeps again.
 */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** `ms` as a delay setTimeout honours: at least 0, at most MAX_TIMER_MS. */
export function timerMs(ms: number): number {
  return Math.min(MAX_TIMER_MS, Math.max(0, ms));
}

/** `ms` with ±20% jitter, so hosts polling the same key do not fall into step. */
export function jittered(ms: number): number {
  return ms * (0.8 + Math.random() * 0.4);
}
