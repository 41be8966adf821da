// Noticing a leader that ended without a word. A leader process that dies sends no release: on
// PostgreSQL its session ends and frees the advisory lock with no NOTIFY, and a backend's notice
// can be lost. So while someone on this host observes or campaigns for an election of a
// distributed backend whose locks may end before their lease does (not LockBackend
// endsOnlyAtExpiry: there the lease's end is read anyway), one sentinel per service reads each such election's leader every
// `electionPollMs` and, when the leader ended or changed, wakes that election's observers and
// campaigners (which then read or try themselves). One status read per watched election per
// interval for the whole host, however many observers and campaigners it has: the cost of a
// lost leader being seen within about one interval rather than one poll interval.
import type { LockState } from "../../kit/steps.js";

/** What the sentinel compares: the leader's term, or null when nobody leads; undefined before the first read. */
type Seen = number | null | undefined;

interface Watched {
  readonly listeners: Set<() => void>;
  seen: Seen;
}

/** One service's sentinel over the elections its callers watch (see the file comment). */
export class ElectionSentinel {
  readonly #read: (name: string) => Promise<LockState | null>;
  readonly #intervalMs: number;
  readonly #watched = new Map<string, Watched>();
  #timer: NodeJS.Timeout | undefined;
  #stopped = false;

  /** `read` is the backend's status step; `intervalMs` 0 turns the sentinel off (watch does nothing). */
  constructor(read: (name: string) => Promise<LockState | null>, intervalMs: number) {
    this.#read = read;
    this.#intervalMs = intervalMs;
  }

  /**
   * Calls `listener` whenever the leader of lock `name` is seen to end or change, until the
   * returned function is called.
   */
  watch(name: string, listener: () => void): () => void {
    if (this.#intervalMs === 0 || this.#stopped) return () => undefined;
    let watched = this.#watched.get(name);
    if (!watched) this.#watched.set(name, (watched = { listeners: new Set(), seen: undefined }));
    watched.listeners.add(listener);
    this.#schedule();
    return () => {
      watched.listeners.delete(listener);
      if (watched.listeners.size === 0 && this.#watched.get(name) === watched) this.#watched.delete(name);
    };
  }

  /** Stops for good (the service closes): no more reads; listeners are not called again. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#watched.clear();
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#stopped || this.#watched.size === 0) return;
    // Unref'd: the sentinel serves callers that keep the process alive themselves.
    this.#timer = setTimeout(() => void this.#tick(), this.#intervalMs).unref();
  }

  async #tick(): Promise<void> {
    await Promise.all([...this.#watched].map(([name, watched]) => this.#check(name, watched)));
    this.#timer = undefined;
    this.#schedule();
  }

  async #check(name: string, watched: Watched): Promise<void> {
    let record: LockState | null;
    try {
      record = await this.#read(name);
    } catch {
      // A failed read tells nothing: the callers' own reads and polls report the backend's state.
      return;
    }
    const seen = record?.holders[0]?.fence ?? null;
    const before = watched.seen;
    watched.seen = seen;
    // A first read that finds nobody leading wakes too: the leader may have ended before it.
    if (before === seen || (before === undefined && seen !== null) || this.#stopped) return;
    for (const listener of [...watched.listeners]) listener();
  }
}
