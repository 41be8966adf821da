// Release listeners (LockBackend.watch) by advisory id: woken by NOTIFYs on the table's
// released channel, which the backend's one LISTEN connection (listener.ts) receives.
/** Calls a watcher: its bug must not reach the backend. */
const callSafely = (listener: () => void): void => {
  try {
    listener();
  } catch {
    // ignored: see above
  }
};

/** The listeners of one backend (colliding names share an id, so they share listeners: a spurious wake-up is allowed). */
export class Watchers {
  readonly #byId = new Map<string, Set<() => void>>();

  /** Adds `listener` for `id`; the returned function removes it (idempotent). */
  add(id: string, listener: () => void): () => void {
    let set = this.#byId.get(id);
    if (set === undefined) this.#byId.set(id, (set = new Set()));
    // A function of its own per watch: the same listener may be watched twice and closed once.
    const own = (): void => listener();
    set.add(own);
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      set.delete(own);
      if (set.size === 0 && this.#byId.get(id) === set) this.#byId.delete(id);
    };
  }

  /** Calls the listeners of `id` (a release NOTIFY's payload). */
  wake(id: string): void {
    const set = this.#byId.get(id);
    if (set !== undefined) for (const listener of [...set]) callSafely(listener);
  }

  /** Calls every listener once (releases may have been missed). */
  wakeAll(): void {
    for (const set of this.#byId.values()) for (const listener of [...set]) callSafely(listener);
  }

  /** Forgets every listener. */
  clear(): void {
    this.#byId.clear();
  }
}
