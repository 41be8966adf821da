// The bookkeeping every backend's KindSteps.watch needs, written once: listeners per key,
// a close that is safe to call twice, the set dropped with its last listener, and calls that
// one throwing listener cannot stop. How a backend hears of releases (pub/sub, LISTEN/NOTIFY,
// in-process) stays in the backend; it tells this class through the hooks and wake().

/** What a backend does when a key gains its first listener or loses its last. */
export interface ReleaseListenerHooks<K> {
  /** `key` has its first listener (e.g. subscribe its channel). */
  readonly first?: (key: K) => void;
  /** `key` lost its last listener (e.g. unsubscribe). Not called for keys dropped by clear(). */
  readonly last?: (key: K) => void;
}

/** Release listeners by key (see KindSteps.watch). */
export class ReleaseListeners<K = string> {
  readonly #byKey = new Map<K, Set<() => void>>();
  readonly #hooks: ReleaseListenerHooks<K>;

  constructor(hooks: ReleaseListenerHooks<K> = {}) {
    this.#hooks = hooks;
  }

  /** Whether `key` has listeners. */
  has(key: K): boolean {
    return this.#byKey.has(key);
  }

  /** Keys with listeners. */
  keys(): IterableIterator<K> {
    return this.#byKey.keys();
  }

  /** Adds `listener` for `key`; the returned function removes it (idempotent). */
  add(key: K, listener: () => void): () => void {
    let set = this.#byKey.get(key);
    const isFirst = set === undefined;
    if (set === undefined) this.#byKey.set(key, (set = new Set()));
    // A function of its own per watch: the same listener may be watched twice and closed once.
    const own = (): void => listener();
    set.add(own);
    if (isFirst) this.#hooks.first?.(key);
    const watched = set;
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      watched.delete(own);
      // Not the map's set any more only once clear() dropped it.
      if (watched.size > 0 || this.#byKey.get(key) !== watched) return;
      this.#byKey.delete(key);
      this.#hooks.last?.(key);
    };
  }

  /** Calls the listeners of `key`. */
  wake(key: K): void {
    const set = this.#byKey.get(key);
    if (set !== undefined) callAll(set);
  }

  /** Calls every listener once (after a reconnect: releases may have been missed). */
  wakeAll(): void {
    for (const set of this.#byKey.values()) callAll(set);
  }

  /** Forgets every listener (the backend is closing). */
  clear(): void {
    this.#byKey.clear();
  }
}

function callAll(set: Set<() => void>): void {
  for (const listener of [...set]) {
    try {
      listener();
    } catch {
      // A watcher's bug must not reach the backend, nor stop the others.
    }
  }
}
