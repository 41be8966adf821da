// The deferred step that writes holder rows (sql.ts publish). The acquire writes nothing; a lock
// still held PUBLISH_AFTER_MS later gets its row from one statement per session for every lock
// due in that tick, and one that ends sooner never costs a row write. Anything that needs the
// row of a lock this host holds (renew, proclaim, a local status or listing) publishes it first,
// on the same session, so the row is there when that statement runs.
//
// Only locks the bookkeeping says are held are sent, on the session that holds them: an unlock
// of the same lock goes out later on that connection, so the row is always written while the
// lock is held.
import type { Logger } from "pino";
import type { HeldLock } from "./held-lock.js";
import type { AdvisoryKey } from "./key-hash.js";
import type { Session } from "./session.js";
import type { Statement } from "./sql.js";

/** How long a lock is held before its holder row is written. */
export const PUBLISH_AFTER_MS = 5;

/** How long after a failed write its rows are sent again. */
const RETRY_MS = 250;

/** A processed prefix this long is cut off the queue. */
const COMPACT_AT = 1024;

/** What a Publisher needs from its backend. */
export interface PublisherOptions {
  readonly publish: Statement;
  /** This machine's name, recorded with each lock. */
  readonly hostname: string;
  readonly sessionOf: (advisory: AdvisoryKey) => Session;
  readonly log: Logger;
}

/** Writes holder rows of locks held past PUBLISH_AFTER_MS, or at once when asked. */
export class Publisher {
  readonly #options: PublisherOptions;
  /** Locks waiting for their row, by publishAt (in acquisition order, so already sorted). */
  #due: HeldLock[] = [];
  #head = 0;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(options: PublisherOptions) {
    this.#options = options;
  }

  /** Queues a just-acquired `lock` for its row PUBLISH_AFTER_MS from now (dropped if it ends first). */
  later(lock: HeldLock): void {
    if (this.#closed) return;
    lock.publishAt = performance.now() + PUBLISH_AFTER_MS;
    this.#due.push(lock);
    if (this.#timer === undefined) this.#arm(PUBLISH_AFTER_MS);
  }

  /**
   * Sends the rows of those of `locks` (all on `session`) still held and unpublished, in one
   * statement; resolves once it was answered. Never rejects: rows that failed are sent again
   * RETRY_MS later (anything that waits for them waits that much longer).
   */
  now(session: Session, locks: readonly HeldLock[]): Promise<void> {
    const rows = locks.filter((lock) => !lock.published && lock.state === "held" && session.held.get(lock.advisory.id) === lock);
    if (rows.length === 0) return Promise.resolve();
    for (const lock of rows) lock.published = true;
    const values = [
      rows.map((l) => l.advisory.id),
      rows.map((l) => l.key),
      rows.map((l) => l.fence),
      rows.map((l) => l.owner),
      rows.map((l) => l.holder.plugin),
      rows.map((l) => l.holder.node),
      this.#options.hostname,
      rows.map((l) => l.acquiredAtMs),
      rows.map((l) => l.expiresAtMs),
      rows.map((l) => l.ttlMs),
    ];
    return session.run(this.#options.publish, values).then(
      () => undefined,
      (err: unknown) => {
        if (this.#closed) return;
        this.#options.log.debug({ err: err instanceof Error ? err.message : String(err), locks: rows.length }, "pg holder rows not written: trying again");
        const again = rows.filter((lock) => lock.state === "held" && session.held.get(lock.advisory.id) === lock);
        for (const lock of again) lock.published = false;
        // Not at the next tick: a server refusing writes (its lock table full) is not flooded.
        if (again.length > 0) setTimeout(() => void this.now(session, again), RETRY_MS).unref();
      },
    );
  }

  /** Publishes every unpublished lock of `sessions` now; resolves when all were answered. */
  async all(sessions: readonly Session[]): Promise<void> {
    await Promise.all(sessions.map((s) => this.now(s, [...s.held.values()])));
  }

  /** Stops the timer; nothing more is sent. */
  clear(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#due = [];
    this.#head = 0;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => this.#fire(), Math.max(1, Math.ceil(ms)));
    this.#timer.unref();
  }

  /** Publishes the locks due by now, one statement per session. */
  #fire(): void {
    this.#timer = undefined;
    const now = performance.now();
    const due = this.#due;
    let bySession: Map<Session, HeldLock[]> | undefined;
    while (this.#head < due.length && due[this.#head]!.publishAt <= now) {
      const lock = due[this.#head++]!;
      if (lock.published || lock.state !== "held") continue;
      const session = this.#options.sessionOf(lock.advisory);
      bySession ??= new Map();
      const list = bySession.get(session);
      if (list === undefined) bySession.set(session, [lock]);
      else list.push(lock);
    }
    if (this.#head >= COMPACT_AT || this.#head === due.length) {
      this.#due = due.slice(this.#head);
      this.#head = 0;
    }
    if (bySession !== undefined) for (const [session, locks] of bySession) void this.now(session, locks);
    if (this.#head < this.#due.length) this.#arm(this.#due[this.#head]!.publishAt - now);
  }
}
