// Host-enforced lease ends. PostgreSQL's advisory locks never expire by themselves, so the
// backend ends each lease at its deadline. One timer serves every lock of a backend: a
// min-heap of deadlines (indexed, so a renew or release moves or removes its lock in
// O(log n)), with the timer armed for the earliest one only.

/** Something with a deadline on the host's monotonic clock (performance.now()). */
export interface Timed {
  deadline: number;
  /** Position in the queue's heap; -1 when not queued. Owned by the queue. */
  heapIndex: number;
}

/**
 * Calls `onDue(item)` once each queued item's deadline has passed, earliest first, from a
 * single unref'd timer. An item leaves the queue before `onDue` sees it.
 */
export class DeadlineQueue<T extends Timed> {
  readonly #heap: T[] = [];
  readonly #onDue: (item: T) => void;
  #timer: NodeJS.Timeout | undefined;
  /** The deadline the timer is armed for (Infinity: none). */
  #armedFor = Infinity;

  constructor(onDue: (item: T) => void) {
    this.#onDue = onDue;
  }

  /** Items queued. */
  get size(): number {
    return this.#heap.length;
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
    try {
      for (let first = this.#heap[0]; first !== undefined && first.deadline <= now; first = this.#heap[0]) {
        this.remove(first);
        this.#onDue(first);
      }
    } finally {
      this.#arm();
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
