// The pg backend's book of the locks it holds (HeldLocks): its sessions (a name's advisory id
// routes to one of them), the host deadline of each lease (one timer, a DeadlineQueue), how a
// lease ends (at its deadline, unless another host renewed it by owner token meanwhile), unlocks,
// and the owner tokens of leases that ended here. Every path of the backend (mutex.ts, queue.ts,
// index.ts) works through it, so the states of a HeldLock (the record of one advisory lock on
// one session, below) change in this file only.
import type pg from "pg";
import type { Logger } from "pino";
import { DeadlineQueue, type Timed } from "../../../kit/deadline-queue.js";
import type { ReleaseResult, RenewResult } from "../../../kit/index.js";
import { Session, type Rows } from "./client.js";
import { backendError, closedError, type ErrorContext, type OutageLog } from "./errors.js";
import { waitLockOf, type AdvisoryKey } from "./keys.js";
import type { Channels, Statement, Statements } from "./mutex-sql.js";

/** How many ended leases' owner tokens are remembered (their renew and release need no round trip). */
const ENDED_LIMIT = 4096;

/** Shared results that carry no data. */
export const NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });
/** See NOT_FOUND. */
export const MISMATCH: RenewResult = Object.freeze({ ok: false, reason: "mismatch" });

/** The lock of a request is not in this backend's bookkeeping: ask the holders row. */
export const ELSEWHERE = Symbol("elsewhere");

/** Resolves to undefined: for waiting on a promise however it ends. */
export const ignore = (): undefined => undefined;

/** What a HeldLocks needs from its backend. */
export interface HeldLocksOptions {
  /** How many sessions (dedicated connections) hold the locks. */
  readonly sessions: number;
  /** node-postgres settings of each session's connection. */
  readonly client: pg.ClientConfig;
  readonly sql: Statements;
  readonly channels: Channels;
  readonly errors: ErrorContext;
  readonly log: Logger;
  /** Says an outage once for every connection of the backend (shared with the listener). */
  readonly outage: OutageLog;
  /** Maps a lock name to its advisory lock id. */
  readonly keyOf: (name: string) => AdvisoryKey;
  /** Runs on every new session connection before its first statement (tables.ts). */
  readonly prepare: (client: pg.Client, timeoutMs: number) => Promise<void>;
  /** Whether a statement error still calls for a new connection (tables.ts). */
  readonly reconnectAfter: (err: unknown) => boolean;
  /**
   * Told the owner of each lock a session took with it when its connection ended (the server
   * freed its advisory locks): the backend's onLost listeners, so the holder hears of it at once
   * rather than at its next renewal, up to half a TTL after another host took the lock.
   */
  readonly onSessionLost?: (owner: string) => void;
}

/** The sessions of one backend and the locks held on them. */
export class HeldLocks {
  readonly sessions: readonly Session[];
  readonly sql: Statements;
  readonly channels: Channels;
  readonly errors: ErrorContext;
  readonly log: Logger;
  readonly keyOf: (name: string) => AdvisoryKey;
  /** Every held lease by its host deadline. */
  readonly expiry = new DeadlineQueue<HeldLock>((lock) => this.expire(lock));
  /** Set when the backend closes: calls waiting on a statement then fail with CLOSED. */
  closed = false;
  /** Owner tokens of leases that ended here, oldest first: such a lease is over everywhere. */
  readonly #ended = new Set<string>();

  constructor(options: HeldLocksOptions) {
    this.sql = options.sql;
    this.channels = options.channels;
    this.errors = options.errors;
    this.log = options.log;
    this.keyOf = options.keyOf;
    this.sessions = Array.from(
      { length: options.sessions },
      (_, index) =>
        new Session({
          index,
          client: options.client,
          commandTimeoutMs: options.errors.commandTimeoutMs,
          prepare: options.prepare,
          onLost: (locks) => {
            for (const lock of locks) {
              this.expiry.remove(lock);
              this.#remember(lock.owner);
            }
            // After the session's own bookkeeping is done: a listener may call back into the backend.
            const tell = options.onSessionLost;
            if (tell !== undefined && locks.length > 0)
              queueMicrotask(() => {
                for (const lock of locks) tell(lock.owner);
              });
          },
          reconnectAfter: options.reconnectAfter,
          errors: options.errors,
          log: options.log,
          outage: options.outage,
        }),
    );
  }

  /** The session of an advisory id. */
  sessionOf(advisory: AdvisoryKey): Session {
    // By advisory id, not by name: names with the same id land on the same session, whose
    // bookkeeping then keeps them apart.
    return this.sessions[advisory.objid % this.sessions.length]!;
  }

  /**
   * The record of `id` on `session` once any lease end it is due is settled: a lease past its
   * deadline is checked (expire) first.
   */
  async current(session: Session, id: string): Promise<HeldLock | undefined> {
    for (;;) {
      const lock = session.held.get(id);
      if (lock === undefined) return undefined;
      if (lock.state === "held") this.expireIfDue(lock);
      const busy = lock.busy;
      if (lock.state !== "checking" || busy === undefined) return lock;
      await busy.then(ignore, ignore);
      if (this.closed) throw closedError();
    }
  }

  /**
   * What renew and release of (`name`, `owner`) act on: this backend's lock, the answer it gives
   * without the server, or ELSEWHERE (not in this backend's bookkeeping: ask the holders row).
   */
  find(lock: HeldLock | undefined, name: string, owner: string): HeldLock | RenewResult | typeof ELSEWHERE {
    if (lock === undefined) return this.#ended.has(owner) ? NOT_FOUND : ELSEWHERE;
    // Another name with the same id, an acquisition not confirmed yet, or a lease that ended and
    // is being unlocked (released or lost here, the unlock in flight): this name is not held, by
    // this owner or any other. Only a held lock answers "another owner holds it".
    if (lock.name !== name || lock.state !== "held") return NOT_FOUND;
    return lock.owner === owner ? lock : MISMATCH;
  }

  /** Applies the answer of a renew of `lock` sent at `sentAt` (`expires`: the row's new expiry, or none). */
  renewed(session: Session, lock: HeldLock, expires: unknown, sentAt: number, ttlMs: number): RenewResult {
    // Expired, released or lost while the renew was in flight: the lease had ended.
    if (session.held.get(lock.advisory.id) !== lock || lock.state !== "held") return NOT_FOUND;
    if (expires === null || expires === undefined) {
      // The server says it is not ours (force-released by another host): give it up here too.
      void this.unlock(session, lock, false);
      return NOT_FOUND;
    }
    lock.deadline = sentAt + ttlMs;
    lock.expiresAtMs = Number(expires);
    this.expiry.update(lock);
    return { ok: true, expiresAtMs: Number(expires) };
  }

  /** Ends `lock` now if its deadline passed (the timer may lag behind a busy event loop). */
  expireIfDue(lock: HeldLock): void {
    if (performance.now() >= lock.deadline) this.expire(lock);
  }

  /** Marks `lock` held until `deadline` (host clock), its row's lease ending at `expiresAtMs`. */
  hold(lock: HeldLock, deadline: number, expiresAtMs: number): void {
    lock.state = "held";
    lock.busy = undefined;
    lock.deadline = deadline;
    lock.expiresAtMs = expiresAtMs;
    this.expiry.add(lock);
  }

  /**
   * Ends a lease at its deadline, unless another host renewed it by owner token meanwhile (its
   * row then names a later expiry than this host last set: the lease goes on to that).
   */
  expire(lock: HeldLock): void {
    if (lock.state !== "held") return;
    const session = this.sessionOf(lock.advisory);
    const id = lock.advisory.id;
    if (session.held.get(id) !== lock) return;
    lock.state = "checking";
    this.expiry.remove(lock);
    const sentAt = performance.now();
    const checked = session.run(this.sql.expire, [id, lock.name, lock.owner, lock.expiresAtMs]).then(
      (rows) => {
        if (session.held.get(id) !== lock || lock.state !== "checking") return;
        const [remaining, expiresAt] = rows[0] ?? [];
        if (remaining !== null && remaining !== undefined) {
          this.log.debug({ key: lock.name }, "pg lock lease was renewed by owner on another host: kept");
          this.hold(lock, sentAt + Number(remaining), Number(expiresAt));
          return;
        }
        this.log.debug({ key: lock.name }, "pg lock lease ended without renewal: released");
        lock.state = "releasing";
        this.#remember(lock.owner);
        session.held.delete(id);
        this.notifyReleased(session, id);
      },
      // The session lives (it still has this record): unlock all the same, or drop the session.
      () => (session.held.get(id) === lock ? this.unlock(session, lock, false) : undefined),
    );
    lock.busy = checked;
  }

  /**
   * Unlocks `lock` on its session and forgets it when done; never rejects. With `checkOwner`,
   * the release statement also reads whether the row still names the owner; if it fails (a
   * statement timeout...), a bare unlock follows, and if even that fails the session is
   * dropped, which frees the lock on the server in any case. Until then the id stays
   * "releasing", so no caller here takes it before the server has let it go. Resolves to
   * "released" only when the server confirmed the unlock (and, with `checkOwner`, that the row
   * still named this owner: it does not after a force-release).
   */
  unlock(session: Session, lock: HeldLock, checkOwner: boolean): Promise<ReleaseResult> {
    lock.state = "releasing";
    this.expiry.remove(lock);
    this.#remember(lock.owner);
    const id = lock.advisory.id;
    // Set when the release statement ran: it notified any waiters itself.
    let notified = false;
    const bare = (): Promise<ReleaseResult> =>
      session.run(this.sql.unlock, [id], true).then(
        () => "released",
        () => "not_found",
      );
    const unlocked = checkOwner
      ? session.run(this.sql.release, [id, lock.owner, this.channels.released, ...waitLockOf(lock.advisory)]).then(
          (rows): ReleaseResult => {
            notified = true;
            return rows[0]?.[0] === true ? "released" : "not_found";
          },
          // The session lives (it still has this record): the lock is still held.
          (): Promise<ReleaseResult> | ReleaseResult => (session.held.get(id) === lock ? bare() : "not_found"),
        )
      : bare();
    const done = unlocked.then((result) => {
      if (session.held.get(id) === lock) {
        session.held.delete(id);
        if (!notified) this.notifyReleased(session, id);
      }
      return result;
    });
    lock.busy = done;
    return done;
  }

  /**
   * Starts handing held `lock` to another owner on its session (mutex.ts handOver): its lease ends
   * here (no deadline, no renewal applies) while `busy`, the statement moving its row, is in
   * flight; an attempt on its id waits for that.
   */
  handingOver(lock: HeldLock, busy: Promise<unknown>): void {
    lock.state = "releasing";
    this.expiry.remove(lock);
    lock.busy = busy;
  }

  /**
   * The row of `lock` names `next` now: `next` takes its place on the session (the advisory lock
   * never let go), "acquiring" until granted. False when the session ended meanwhile.
   */
  handedOver(session: Session, lock: HeldLock, next: HeldLock): boolean {
    const id = lock.advisory.id;
    if (session.held.get(id) !== lock) return false;
    this.#remember(lock.owner);
    session.held.set(id, next);
    return true;
  }

  /** Remembers that the lease of `owner` ended here (bounded, oldest out). */
  #remember(owner: string): void {
    this.#ended.add(owner);
    if (this.#ended.size > ENDED_LIMIT) this.#ended.delete(this.#ended.values().next().value!);
  }

  /** Tells every host's watchers that `id` may be free (after its unlock was answered); best effort. */
  notifyReleased(session: Session, id: string): void {
    // Not worth a new connection: a session that ended has no lock left to announce.
    if (session.pid === undefined || this.closed) return;
    session.run(this.sql.notify, [this.channels.released, id]).catch(ignore);
  }

  /** Runs a statement that needs no lock of its own on `advisory`'s session, failures mapped. */
  run(what: string, advisory: AdvisoryKey, statement: Statement, values: unknown[]): Promise<Rows> {
    return this.sessionOf(advisory)
      .run(statement, values)
      .catch((err: unknown) => {
        throw backendError(err, what, this.errors);
      });
  }

  /** Stops every lease timer and ends every session; PostgreSQL frees their locks as each one ends. */
  async close(): Promise<void> {
    this.closed = true;
    this.expiry.clear();
    await Promise.all(this.sessions.map((s) => s.close()));
  }
}

// The host-side record of one advisory lock on one session. Advisory locks are re-entrant
// per session, so PostgreSQL cannot tell two callers sharing a session apart: these records
// do. A session keeps at most one per advisory id, from the moment an acquire is sent until
// the lock is unlocked, and nobody sends pg_try_advisory_lock for an id that has one.

/**
 * - "acquiring": the acquire statement is in flight (the server may already hold the lock);
 * - "held": acquired, with a host deadline in the expiry queue;
 * - "checking": past its host deadline, a statement asks whether another host renewed the
 *   lease by owner (then "held" again, with a later deadline) or unlocks it ("releasing");
 * - "releasing": an unlock is in flight (release, expiry, or cleanup after a failed acquire).
 * A record leaves its session's map when its unlock is answered (or its caller stopped
 * waiting: the unlock still goes out, ahead of anything sent later on that session) or when
 * the session ends.
 */
export type HeldLockState = "acquiring" | "held" | "checking" | "releasing";

/** One lock a session holds or is about to hold or release. */
export class HeldLock implements Timed {
  state: HeldLockState = "acquiring";
  /** performance.now() by which the lease ends: from when the acquire (or last renew) was sent. */
  deadline = Infinity;
  heapIndex = -1;
  /** The fence handed out with the lock (once "held"): names this holding in control messages. */
  fence = 0;
  /** The lease's end on the server's clock as this host last set it (ms since the epoch). */
  expiresAtMs = 0;
  /** The statement in flight ("acquiring", "checking", "releasing"); may reject: callers waiting on it ignore how it ends. */
  busy: Promise<unknown> | undefined;

  constructor(
    /** The fully qualified lock name. */
    readonly name: string,
    /** The owner token the lock was acquired with. */
    readonly owner: string,
    readonly advisory: AdvisoryKey,
  ) {}
}
