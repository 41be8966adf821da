// Waiting for a held key, written once for every backend. The waiters of one host on one key
// form a FIFO queue and only its head asks the backend, so they are served in arrival order
// and a release costs one attempt, not one per waiter. The head sleeps until the key may be
// free: a release notification (KindSteps.watch: Redis pub/sub, PostgreSQL LISTEN/NOTIFY,
// in-process for memory; or a release by this host), the moment the holder's lease ends
// (retryAfterMs from the failed attempt), or, as a fallback for lost notifications, a
// jittered poll interval. The backend subscription is shared by a key's waiters and dropped
// with the last of them.
//
// Local contention (a kind whose row says handsOffLocally: the mutex): while this host holds the
// key through its line (`holder`: a lease its waiters took or were handed) or has waiters on it,
// a new attempt is contended, or queues, without asking the backend (acquire.ts), and a release
// hands the key to the sleeping head in one backend step (handoff.ts). The releasing caller's
// next attempt then queues behind the others instead of barging past the woken head, so a
// handoff costs one round trip. Fairness to other hosts: after MAX_LOCAL_HANDOFFS handoffs in a
// row a release frees the key as usual, and this host's head learns of it only as the other
// hosts' waiters do, through the backend's release notification, and tries only a macrotask
// later, after whatever that notice woke in this process (another service's waiters, sharing an
// in-process backend) has asked: the others get the key, or at least a fair race for it.
import type { ReleaseWatch } from "../../kit/backend.js";
import type { Lease } from "./lease.js";
import type { CheckedRequest } from "./request.js";

/** Why a sleeping waiter woke up ("handed": a release handed it the key, see Waiter.claim). */
type Wake = "timer" | "release" | "promoted" | "handed";

/**
 * Most handoffs in a row from one holder of this host to the next: then a release frees the key
 * and lets every host's waiters race for it (see above). High enough that the round trips of
 * those releases cost little (one in this many handoffs), low enough that a waiter of another
 * host gets its chance every few ms of a busy key.
 */
export const MAX_LOCAL_HANDOFFS = 32;

/** One acquire call waiting in a key's queue. */
export class Waiter {
  /**
   * Whether it keeps its own place in the backend's queue of exclusive waiters (a waiting writer,
   * a fair mutex's waiter): then the backend orders the waiters of every host, and this one asks
   * it on every wake-up, as a head does, so its place stays fresh and it is served in turn even
   * when a waiter of another host stands between it and this host's head.
   */
  readonly placed: boolean;
  /** What it asks for (a release may hand it the key: handoff.ts), and until when (performance.now()). */
  readonly request: CheckedRequest | undefined;
  readonly deadline: number;
  #wake: ((why: Wake) => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** Set when a wake came while the waiter was not sleeping (between two attempts), or while claimed. */
  #pending: Wake | undefined;
  /** Set while a release hands it the key: its sleep ends only with deliver(). */
  #claimed = false;
  #handed: Lease | undefined;

  constructor(placed = false, request?: CheckedRequest, deadline = Infinity) {
    this.placed = placed;
    this.request = request;
    this.deadline = deadline;
  }

  /**
   * Takes the sleeping waiter for a handoff: its timer stops and wakes wait (an abort, close())
   * until deliver(). False when it is not asleep (trying, or already claimed) or its wait is
   * over: then it is left to try on its own.
   */
  claim(): boolean {
    if (this.#wake === undefined || this.#claimed || this.request === undefined || performance.now() >= this.deadline) return false;
    clearTimeout(this.#timer);
    this.#claimed = true;
    return true;
  }

  /** Ends a claimed sleep: with the lease it was handed ("handed"), or none, so it tries itself ("release"). */
  deliver(lease: Lease | undefined): void {
    const resolve = this.#wake;
    this.#claimed = false;
    this.#wake = undefined;
    this.#pending = undefined;
    this.#handed = lease;
    resolve?.(lease === undefined ? "release" : "handed");
  }

  /** The lease a handoff gave it (after a "handed" wake). */
  takeHanded(): Lease {
    const lease = this.#handed!;
    this.#handed = undefined;
    return lease;
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
    if (!resolve || this.#claimed) {
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
  /** The lease of this host that its line's waiters took or were handed last, while it may be held. */
  holder: Lease | undefined;
  /** Handoffs in a row from one local holder to the next (MAX_LOCAL_HANDOFFS). */
  handoffs: number;
  /**
   * Set when a release frees the key for every host (the fairness bound): this host's head waits
   * for the backend's notice, then a macrotask (`deferred`), before it tries.
   */
  yielding: boolean;
  deferred: boolean;
}

/** Whether `lease` may still hold its key: held, and its host-side deadline not passed. */
function live(lease: Lease | undefined): lease is Lease {
  return lease !== undefined && lease.state === "held" && performance.now() < lease.deadline;
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
      queue = { waiters: [], watch: undefined, holder: undefined, handoffs: 0, yielding: false, deferred: false };
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
   * Takes `waiter` out of the queue, with `taken`, the lease it leaves with (its own attempt's or
   * a handoff's), if any; with `holds` (a kind that hands off locally) that lease is the line's
   * holder from now on. When it was the head, the next waiter becomes head: it tries at once if
   * the key may be free (the head gave up), and otherwise sleeps until a release or a handoff
   * (the head now holds the key).
   */
  leave(name: string, waiter: Waiter, taken: Lease | undefined, holds: boolean): void {
    const queue = this.#queues.get(name);
    if (!queue) return;
    const i = queue.waiters.indexOf(waiter);
    if (i < 0) return;
    queue.waiters.splice(i, 1);
    this.#count--;
    if (holds && taken !== undefined) queue.holder = taken;
    if (queue.waiters.length === 0) {
      queue.handoffs = 0;
      this.#dropIfIdle(name, queue);
      return;
    }
    if (i === 0) queue.waiters[0]!.wake(taken !== undefined ? "promoted" : "release");
  }

  /**
   * Whether this host holds or queues `name` (a wait key) now: a waiter is in its line, or the
   * line's holder may still hold it. Then a new attempt is contended without asking the backend.
   */
  heldHere(name: string): boolean {
    if (this.#queues.size === 0) return false;
    const queue = this.#queues.get(name);
    return queue !== undefined && (queue.waiters.length > 0 || live(queue.holder));
  }

  /** The lease of this host that holds `name` through its line, while it may (see heldHere). */
  localHolder(name: string): Lease | undefined {
    const holder = this.#queues.get(name)?.holder;
    return live(holder) ? holder : undefined;
  }

  /**
   * The line's sleeping head, claimed for a handoff (Waiter.claim) of `name` from `lease`, which
   * is being released: undefined when there is none to hand it to, or when the fairness bound
   * says this release frees the key for every host (then `released` wakes nobody here).
   * `unbounded`: the key is delegated (delegation.ts), whose grant's own rules bound it instead.
   */
  claimNext(name: string, lease: Lease, unbounded = false): Waiter | undefined {
    if (this.#queues.size === 0) return undefined;
    const queue = this.#queues.get(name);
    if (queue === undefined) return undefined;
    if (queue.holder === lease) queue.holder = undefined;
    const head = queue.waiters[0];
    if (head === undefined || head.placed) return undefined;
    if (queue.handoffs >= MAX_LOCAL_HANDOFFS && !unbounded) {
      queue.handoffs = 0;
      queue.yielding = true;
      return undefined;
    }
    if (!head.claim()) return undefined;
    queue.handoffs++;
    return head;
  }

  /**
   * `lease` of `name` was released (not handed over) or lost: the key may be free. The head
   * tries, unless this release yields the key to every host (claimNext): then it waits for the
   * backend's notice, as other hosts' waiters do.
   */
  released(name: string, lease: Lease): void {
    if (this.#queues.size === 0) return;
    const queue = this.#queues.get(name);
    if (queue === undefined) return;
    if (queue.holder === lease) queue.holder = undefined;
    if (queue.waiters.length === 0) this.#dropIfIdle(name, queue);
    // Yielding: the backend's notice wakes the head (notify).
    else if (!queue.yielding) this.notify(name);
  }

  /** `lease` of `name` was lost: no longer the line's holder (its waiters wake on the key's notices). */
  forget(name: string, lease: Lease): void {
    if (this.#queues.size === 0) return;
    const queue = this.#queues.get(name);
    if (queue === undefined || queue.holder !== lease) return;
    queue.holder = undefined;
    this.#dropIfIdle(name, queue);
  }

  /**
   * Drops a line nobody waits in and no live lease of it holds. The subscription outlives the
   * waiters while the line's holder holds: its next contender (often the holder itself, coming
   * back) queues at once, already subscribed.
   */
  #dropIfIdle(name: string, queue: KeyQueue): void {
    if (queue.waiters.length > 0 || live(queue.holder)) return;
    this.#queues.delete(name);
    queue.watch?.close();
  }

  /** The key may be free (a release here or anywhere): the head, and every waiter with a place of its own, tries again. */
  notify(name: string): void {
    const queue = this.#queues.get(name);
    if (queue === undefined) return;
    if (queue.yielding) {
      // The key was yielded to every host: the others' waiters, woken by the same notice, ask first.
      if (!queue.deferred) {
        queue.deferred = true;
        setImmediate(() => {
          queue.yielding = false;
          queue.deferred = false;
          this.notify(name);
        });
      }
      return;
    }
    const { waiters } = queue;
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
