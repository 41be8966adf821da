// One timer for many deadlines: a min-heap (indexed, so moving or removing an item is
// O(log n)) with the timer armed for the earliest deadline only. The pg backend ends its
// host-enforced leases with it; the LockService's renewal manager schedules renewals and
// lease ends with it, so a host runs one timer however many locks it keeps alive.

/** Something with a deadline on the host's monotonic clock (performance.now()). */
export interface Timed {
  deadline: number;
  /** Position in the queue's heap; -1 when not queued. Owned by the queue. */
  heapIndex: number;
}

/** Options of a DeadlineQueue beyond its onDue callback. */
export interface DeadlineQueueOptions<T> {
  /**
   * How early an item may be taken when the timer fires anyway (ms): items due within their
   * slack of a firing go with it, so deadlines close together cost one wake-up and one batch.
   */
  readonly slackMs?: (item: T) => number;
  /** Called after every firing that took at least one item (e.g. to send a batch). */
  readonly afterFire?: () => void;
}

/**
 * Calls `onDue(item)` once each queued item's deadline has passed, earliest first, from a
 * single unref'd timer. An item leaves the queue before `onDue` sees it.
 */
export class DeadlineQueue<T extends Timed> {
  readonly #heap: T[] = [];
  readonly #onDue: (item: T) => void;
  readonly #slackMs: ((item: T) => number) | undefined;
  readonly #afterFire: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for (Infinity: none). */
  #armedFor = Infinity;

  constructor(onDue: (item: T) => void, options: DeadlineQueueOptions<T> = {}) {
    this.#onDue = onDue;
    this.#slackMs = options.slackMs;
    this.#afterFire = options.afterFire;
  }

  /** Items queued. */
  get size(): number {
    return this.#heap.length;
  }

  /** Timers armed now: 1 while anything is queued, else 0. */
  get timers(): number {
    return this.#timer === undefined ? 0 : 1;
  }

  /** Queues `item` at its `deadline`. */
  add(item: T): void {
    item.heapIndex = this.#heap.length;
    this.#heap.push(item);
    this.#up(item.heapIndex);
    this.#arm();
  }

  /** Re-sorts `item` after its `deadline` changed (queues it if it was not). */
  update(item: T): void {
    if (item.heapIndex < 0) return this.add(item);
    this.#down(this.#up(item.heapIndex));
    this.#arm();
  }

  /** Takes `item` out; a no-op when it is not queued. */
  remove(item: T): void {
    const i = item.heapIndex;
    if (i < 0 || this.#heap[i] !== item) return;
    item.heapIndex = -1;
    const last = this.#heap.pop()!;
    if (i < this.#heap.length) {
      this.#heap[i] = last;
      last.heapIndex = i;
      this.#down(this.#up(i));
    }
    // A timer armed for a removed item fires early and re-arms: cheaper than re-arming here.
  }

  /** Empties the queue and stops the timer. */
  clear(): void {
    for (const item of this.#heap) item.heapIndex = -1;
    this.#heap.length = 0;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Infinity;
  }

  #arm(): void {
    const first = this.#heap[0];
    if (first === undefined || first.deadline >= this.#armedFor) return;
    clearTimeout(this.#timer);
    this.#armedFor = first.deadline;
    this.#timer = setTimeout(() => this.#fire(), Math.max(0, Math.ceil(first.deadline - performance.now())));
    this.#timer.unref();
  }

  #fire(): void {
    this.#timer = undefined;
    this.#armedFor = Infinity;
    // Timers run on a whole-ms clock: treat "due within the next ms" as due rather than spin.
    const now = performance.now() + 1;
    const slack = this.#slackMs;
    let took = false;
    try {
      for (let first = this.#heap[0]; first !== undefined && first.deadline <= (slack === undefined ? now : now + slack(first)); first = this.#heap[0]) {
        took = true;
        this.remove(first);
        this.#onDue(first);
      }
    } finally {
      this.#arm();
      if (took) this.#afterFire?.();
    }
  }

  /** Moves the item at `i` up while it is earlier than its parent; returns where it ended. */
  #up(i: number): number {
    const heap = this.#heap;
    const item = heap[i]!;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const parent = heap[p]!;
      if (parent.deadline <= item.deadline) break;
      heap[i] = parent;
      parent.heapIndex = i;
      i = p;
    }
    heap[i] = item;
    item.heapIndex = i;
    return i;
  }

  #down(i: number): void {
    const heap = this.#heap;
    const n = heap.length;
    const item = heap[i]!;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && heap[r]!.deadline < heap[l]!.deadline ? r : l;
      const child = heap[c]!;
      if (child.deadline >= item.deadline) break;
      heap[i] = child;
      child.heapIndex = i;
      i = c;
    }
    heap[i] = item;
    item.heapIndex = i;
  }
}
