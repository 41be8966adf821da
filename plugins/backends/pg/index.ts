// The PostgreSQL backend: session-level advisory locks for exclusion, held many to a
// connection on a few dedicated sessions, plus two small tables for fences and holders.
//
// - Exclusion: pg_try_advisory_lock on the session a name's advisory id routes to (id mod
//   sessions, so a name always lands on the same session). Advisory locks are re-entrant per
//   session, so each session keeps a record per advisory id (HeldLock) and answers
//   "contended" itself for an id it holds or is busy with: it never asks the server twice.
// - Fences and holders: the statement that takes the lock also hands out the next fence and
//   writes the holder (sql.ts: fences are reserved in flushed blocks, holders live in an
//   unlogged table); release only reads and unlocks. One round trip each.
// - Lease: advisory locks never expire, so the host ends each lease at its deadline (one
//   timer for the backend, expiry.ts), counted from when the acquire or renew was sent. If the
//   host dies, its sessions end and PostgreSQL frees their locks.
// - Failure: a session whose connection ends loses every lock on it (renew then reports
//   not_found, release not_found) and reconnects on next use. Calls fail with
//   BACKEND_UNAVAILABLE within commandTimeoutMs when the server does not answer in time, and
//   a session the server stops answering is given up (session.ts).
import { hostname } from "node:os";
import type pg from "pg";
import type { Logger } from "pino";
import type { PgConfig } from "../../../host/config/types.js";
import { LockhostError } from "../../../host/errors.js";
import type {
  AcquireRequest,
  AcquireResult,
  LockBackend,
  LockRecord,
  ReleaseResult,
  RenewResult,
} from "../../../host/locking/backend.js";
import { redactUrlSecrets, scrubberFor } from "../../../host/redact.js";
import { backendError, isServerError, type ErrorContext } from "./errors.js";
import { DeadlineQueue } from "./expiry.js";
import { HeldLock } from "./held-lock.js";
import { advisoryKeyOf, type AdvisoryKey } from "./key-hash.js";
import { Session, wasNotSent, type Rows } from "./session.js";
import { statementsFor, type Statement, type Statements } from "./sql.js";

/** Options of a PgBackend beyond its config, mostly for tests and embedders. */
export interface PgBackendOptions {
  /** application_name of the sessions, to count them in pg_stat_activity; default `lockhost:<pid>`. */
  readonly applicationName?: string;
  /**
   * Maps a lock name to its advisory lock id; default advisoryKeyOf (key-hash.ts). Every host
   * sharing a table must use the same mapping; tests replace it to force collisions.
   */
  readonly advisoryKey?: (name: string) => AdvisoryKey;
}

const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });
const NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });
const MISMATCH: RenewResult = Object.freeze({ ok: false, reason: "mismatch" });
/** SQLSTATEs of a CREATE TABLE IF NOT EXISTS that lost a race with another host's. */
const CREATE_RACE_CODES = new Set(["23505", "42P07", "42710"]);
/** How often forceRelease looks whether a terminated holder has gone. */
const GONE_POLL_MS = 5;

const ignore = (): undefined => undefined;
const closedError = (): LockhostError => new LockhostError("CLOSED", "the pg backend is closed");

/**
 * Locks in PostgreSQL (advisory locks + fence and holder tables), shared by every host on the
 * same database and table. Implements LockBackend; see host/locking/backend.ts for each step's
 * contract and the file header for how each step is done.
 */
export class PgBackend implements LockBackend {
  /** Always "pg". */
  readonly kind = "pg";
  /** Always true: every host on the same database and table shares the locks. */
  readonly distributed = true;
  readonly #sessions: Session[];
  readonly #sql: Statements;
  readonly #expiry = new DeadlineQueue<HeldLock>((lock) => this.#expire(lock));
  readonly #errors: ErrorContext;
  readonly #keyOf: (name: string) => AdvisoryKey;
  readonly #log: Logger;
  readonly #hostname = hostname();
  /** Set once this backend has made sure its tables exist. */
  #tableReady = false;
  #closed = false;
  #closing: Promise<void> | undefined;

  /**
   * Opens no connection: each session connects on first use, and a server that cannot be
   * reached fails calls with BACKEND_UNAVAILABLE, never the constructor.
   */
  constructor(config: PgConfig, log: Logger, options: PgBackendOptions = {}) {
    const timeout = config.commandTimeoutMs;
    const scrub = scrubberFor(config.url);
    this.#errors = { target: redactUrlSecrets(config.url), commandTimeoutMs: timeout, scrub };
    this.#sql = statementsFor(config.table);
    this.#keyOf = options.advisoryKey ?? advisoryKeyOf;
    this.#log = log;
    const client: pg.ClientConfig = {
      connectionString: config.url,
      application_name: options.applicationName ?? `lockhost:${process.pid}`,
      connectionTimeoutMillis: timeout,
      // The server cancels a slow statement a little before the session's time limits (see
      // session.ts): a cancelled statement is an answer and costs one call, while a session
      // that does not answer for commandTimeoutMs is dropped with every lock on it.
      statement_timeout: Math.max(1, timeout - Math.min(250, Math.floor(timeout / 4))),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      pipeline: true,
    };
    this.#sessions = Array.from(
      { length: config.sessions },
      (_, index) =>
        new Session({
          index,
          client,
          commandTimeoutMs: timeout,
          prepare: (c, ms) => this.#prepare(c, ms),
          onLost: (locks) => {
            for (const lock of locks) this.#expiry.remove(lock);
          },
          reconnectAfter: (err) => this.#tableGone(err),
          errors: this.#errors,
          log,
        }),
    );
  }

  /** The server pids of the sessions connected now (for tests and diagnostics). */
  get sessionPids(): number[] {
    return this.#sessions.flatMap((s) => (s.pid === undefined ? [] : [s.pid]));
  }

  /** Locks this backend holds now, by its own bookkeeping. */
  get heldCount(): number {
    return this.#expiry.size;
  }

  /** Takes `req.key` if no session anywhere holds it, with the next fence (LockBackend.acquire). */
  acquire(req: AcquireRequest): Promise<AcquireResult> {
    if (this.#closed) return Promise.reject(closedError());
    const advisory = this.#keyOf(req.key);
    const session = this.#sessionOf(advisory);
    const current = session.held.get(advisory.id);
    if (current === undefined) return this.#tryAcquire(req, advisory, session);
    return this.#acquireAfter(current, req, advisory, session);
  }

  /** Sets the lease to `ttlMs` from now if `owner` still holds `key` (LockBackend.renew). */
  renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    if (this.#closed) return Promise.reject(closedError());
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
    const lock = session.held.get(advisory.id);
    if (lock === undefined || lock.key !== key || lock.state === "acquiring") return Promise.resolve(NOT_FOUND);
    if (lock.owner !== owner) return Promise.resolve(MISMATCH);
    if (lock.state !== "held" || this.#expireIfDue(lock)) return Promise.resolve(NOT_FOUND);
    const sentAt = performance.now();
    const values = [advisory.id, key, owner, ttlMs];
    return session.run(this.#sql.renew, values).then(
      (rows): RenewResult => {
        // Expired, released or lost while the renew was in flight: the lease had ended.
        if (session.held.get(advisory.id) !== lock || lock.state !== "held") return NOT_FOUND;
        const row = rows[0];
        if (row === undefined) {
          // The server says it is not ours (force-released by another host): give it up here too.
          void this.#unlock(session, lock, false);
          return NOT_FOUND;
        }
        lock.deadline = sentAt + ttlMs;
        this.#expiry.update(lock);
        return { ok: true, expiresAtMs: Number(row[0]) };
      },
      (err: unknown) => {
        // The connection ended: the lock ended with it.
        if (session.held.get(advisory.id) !== lock) return NOT_FOUND;
        throw backendError(err, "renew", this.#errors);
      },
    );
  }

  /** Unlocks `key` if `owner` holds it (LockBackend.release). */
  release(key: string, owner: string): Promise<ReleaseResult> {
    if (this.#closed) return Promise.reject(closedError());
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
    const lock = session.held.get(advisory.id);
    if (lock === undefined || lock.key !== key || lock.state === "acquiring") return Promise.resolve("not_found");
    if (lock.owner !== owner) return Promise.resolve("mismatch");
    if (lock.state !== "held" || this.#expireIfDue(lock)) return Promise.resolve("not_found");
    return this.#unlock(session, lock, true);
  }

  /** The live holder of `key` on any host, or null (LockBackend.status). */
  async status(key: string): Promise<LockRecord | null> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const rows = await this.#run("status", advisory, this.#sql.status, [advisory.id, key, advisory.classid, advisory.objid]);
    const row = rows[0];
    if (row === undefined) return null;
    const [owner, fence, plugin, node, host, acquiredAt, expiresAt, remaining] = row;
    return {
      key,
      owner: String(owner),
      fence: Number(fence),
      holder: { plugin: String(plugin), node: String(node), hostname: String(host) },
      acquiredAtMs: Number(acquiredAt),
      expiresAtMs: Number(expiresAt),
      ttlRemainingMs: Number(remaining),
    };
  }

  /**
   * Frees `key` whoever holds it; true when someone did (LockBackend.forceRelease).
   *
   * When this backend holds it, it just unlocks. Otherwise it clears the holder row's owner
   * (so the holder's next renew or release finds the lock no longer theirs) and terminates the
   * holder's session with pg_terminate_backend, the only way to take an advisory lock from
   * another session: EVERY lock on that session is lost with it (that host sees them lost and
   * reconnects). Resolves once the holder's session has gone, so the key can be taken at once.
   * Needs the right to signal the holder's backend: the same database role, or
   * pg_signal_backend.
   */
  async forceRelease(key: string): Promise<boolean> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
    let lock = session.held.get(advisory.id);
    // An acquire or release in flight here decides whether this backend is the holder.
    while (lock?.key === key && lock.state !== "held" && lock.busy !== undefined) {
      const busy = lock.busy;
      await busy.then(ignore, ignore);
      const next = session.held.get(advisory.id);
      if (next === lock && lock.busy === busy) break;
      lock = next;
    }
    if (lock !== undefined && lock.key === key && lock.state === "held") {
      // "not_found": the session ended meanwhile, so there was nothing left to release.
      return (await this.#unlock(session, lock, true)) === "released";
    }
    const rows = await this.#run("forceRelease", advisory, this.#sql.forceRelease, [advisory.id, key, advisory.classid, advisory.objid]);
    const row = rows[0];
    if (row === undefined) return false;
    const [pid, terminated] = row;
    if (terminated === true) await this.#awaitGone(advisory, Number(pid));
    return true;
  }

  /**
   * Ends every session; PostgreSQL frees their locks as each one ends (fences are kept).
   * Does not wait past commandTimeoutMs for a server that does not answer.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#expiry.clear();
    await Promise.all(this.#sessions.map((s) => s.close()));
  }

  #sessionOf(advisory: AdvisoryKey): Session {
    // By advisory id, not by name: names with the same id land on the same session, whose
    // bookkeeping then keeps them apart.
    return this.#sessions[advisory.objid % this.#sessions.length]!;
  }

  #tryAcquire(req: AcquireRequest, advisory: AdvisoryKey, session: Session): Promise<AcquireResult> {
    const lock = new HeldLock(req.key, req.owner, advisory);
    session.held.set(advisory.id, lock);
    const sentAt = performance.now();
    const { plugin, node } = req.holder;
    const values = [advisory.id, req.key, req.owner, plugin, node, this.#hostname, req.ttlMs];
    const acquired = session.run(this.#sql.acquire, values).then(
      (rows) => {
        this.#checkStillOurs(session, lock);
        const row = rows[0];
        if (row === undefined) {
          session.held.delete(advisory.id);
          return NOT_ACQUIRED;
        }
        const [fence, reserved, acquiredAt, expiresAt] = row.map(Number) as [number, number, number, number];
        const held = (handedOut: number): AcquireResult => {
          lock.state = "held";
          lock.busy = undefined;
          lock.deadline = sentAt + req.ttlMs;
          this.#expiry.add(lock);
          return { acquired: true, fence: handedOut, acquiredAtMs: acquiredAt, expiresAtMs: expiresAt };
        };
        if (fence <= reserved) return held(fence);
        // Past the reserved block: reserve the next one (flushed) before the fence goes out.
        return session.run(this.#sql.reserve, [advisory.id, fence]).then(
          (reservedRows) => {
            this.#checkStillOurs(session, lock);
            const raised = Number(reservedRows[0]?.[0]);
            if (!Number.isSafeInteger(raised)) throw new Error("the fence reservation found no holders row");
            return held(raised);
          },
          (err: unknown): never => {
            if (session.held.get(advisory.id) === lock) void this.#unlock(session, lock, false);
            throw backendError(err, "acquire", this.#errors);
          },
        );
      },
      (err: unknown): never => {
        if (session.held.get(advisory.id) === lock) {
          // The session lives but the statement failed, maybe after taking the lock (a
          // session-level lock survives the rollback): unlock before the id is free again here.
          if (wasNotSent(err)) session.held.delete(advisory.id);
          else void this.#unlock(session, lock, false);
        }
        throw backendError(err, "acquire", this.#errors);
      },
    );
    lock.busy = acquired;
    return acquired;
  }

  /** Throws when `lock` is no longer its session's record: the session ended (or the backend closed) under it. */
  #checkStillOurs(session: Session, lock: HeldLock): void {
    if (session.held.get(lock.advisory.id) === lock) return;
    if (this.#closed) throw closedError();
    throw new LockhostError("BACKEND_UNAVAILABLE", `PostgreSQL at ${this.#errors.target}: the session ended during acquire`);
  }

  /** Acquire for an id this session has a record of: contended, unless that record is on its way out. */
  async #acquireAfter(
    first: HeldLock,
    req: AcquireRequest,
    advisory: AdvisoryKey,
    session: Session,
  ): Promise<AcquireResult> {
    let lock: HeldLock | undefined = first;
    while (lock !== undefined) {
      if (lock.state === "held") this.#expireIfDue(lock);
      const busy = lock.busy;
      if (lock.state !== "releasing" || busy === undefined) return NOT_ACQUIRED;
      await busy.then(ignore, ignore);
      if (this.#closed) throw closedError();
      const next = session.held.get(advisory.id);
      // Still there after its unlock settled: not free, whatever happened.
      if (next === lock && lock.busy === busy) return NOT_ACQUIRED;
      lock = next;
    }
    return this.#tryAcquire(req, advisory, session);
  }

  /** Ends `lock` now if its deadline passed (the timer may lag behind a busy event loop). */
  #expireIfDue(lock: HeldLock): boolean {
    if (performance.now() < lock.deadline) return false;
    this.#expire(lock);
    return true;
  }

  /** Ends a lease at its deadline: the advisory lock is unlocked. */
  #expire(lock: HeldLock): void {
    if (lock.state !== "held") return;
    const session = this.#sessionOf(lock.advisory);
    if (session.held.get(lock.advisory.id) !== lock) return;
    this.#log.debug({ key: lock.key }, "pg lock lease ended without renewal: released");
    void this.#unlock(session, lock, true);
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
  #unlock(session: Session, lock: HeldLock, checkOwner: boolean): Promise<ReleaseResult> {
    lock.state = "releasing";
    this.#expiry.remove(lock);
    const id = lock.advisory.id;
    const bare = (): Promise<ReleaseResult> =>
      session.run(this.#sql.unlock, [id], true).then(
        () => "released",
        () => "not_found",
      );
    const unlocked = checkOwner
      ? session.run(this.#sql.release, [id, lock.owner]).then(
          (rows): ReleaseResult => (rows[0]?.[0] === true ? "released" : "not_found"),
          // The session lives (it still has this record): the lock is still held.
          (): Promise<ReleaseResult> | ReleaseResult => (session.held.get(id) === lock ? bare() : "not_found"),
        )
      : bare();
    const done = unlocked.then((result) => {
      if (session.held.get(id) === lock) session.held.delete(id);
      return result;
    });
    lock.busy = done;
    return done;
  }

  /** Runs a statement that needs no lock of its own on `advisory`'s session, failures mapped. */
  #run(what: string, advisory: AdvisoryKey, statement: Statement, values: unknown[]): Promise<Rows> {
    return this.#sessionOf(advisory)
      .run(statement, values)
      .catch((err: unknown) => {
        throw backendError(err, what, this.#errors);
      });
  }

  /** Waits (up to commandTimeoutMs) until the terminated session `pid` no longer holds the lock. */
  async #awaitGone(advisory: AdvisoryKey, pid: number): Promise<void> {
    const until = performance.now() + this.#errors.commandTimeoutMs;
    while (performance.now() < until) {
      const rows = await this.#run("forceRelease", advisory, this.#sql.heldBy, [advisory.classid, advisory.objid, pid]);
      if (rows[0]?.[0] !== true) return;
      await new Promise((r) => setTimeout(r, GONE_POLL_MS));
    }
    this.#log.warn({ pid }, "pg force-release: the terminated holder session has not exited yet");
  }

  /**
   * Whether `err` says a table is gone (dropped by an operator). The holders went with it: the
   * session is dropped (its locks are lost) and the next connection creates the tables again.
   * Fences keep increasing as long as the fence table (`<table>`) is kept.
   */
  #tableGone(err: unknown): boolean {
    if (!isServerError(err) || err.code !== "42P01") return false;
    if (this.#tableReady) this.#log.warn({ err: this.#errors.scrub(err.message) }, "pg lock tables are gone: they will be created again");
    this.#tableReady = false;
    return true;
  }

  /**
   * Makes sure the tables exist, once per backend. Existing tables are only looked up (an
   * operator may create them, DDL in sql.ts, for a role that may not create tables); missing
   * ones are created, and several hosts may race to do so.
   */
  async #prepare(client: pg.Client, timeoutMs: number): Promise<void> {
    if (this.#tableReady) return;
    const until = performance.now() + timeoutMs;
    const left = (): number => Math.max(1, until - performance.now());
    const { text, values } = this.#sql.tablesExist;
    const exist = await client.query<[boolean]>({ text, values: [...values], rowMode: "array", query_timeout: left() } as pg.QueryArrayConfig);
    if (exist.rows[0]?.[0] !== true) {
      for (const create of this.#sql.createTables) {
        try {
          await client.query({ text: create, query_timeout: left() } as pg.QueryConfig);
        } catch (err) {
          if (!(isServerError(err) && CREATE_RACE_CODES.has(err.code ?? ""))) throw err;
        }
      }
    }
    this.#tableReady = true;
  }
}
