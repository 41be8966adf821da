// The PostgreSQL backend: session-level advisory locks for exclusion, held many to a
// connection on a few dedicated sessions, plus two small tables for fences and holders.
//
// - Exclusion: pg_try_advisory_lock on the session a name's advisory id routes to (id mod
//   sessions, so a name always lands on the same session). Advisory locks are re-entrant per
//   session, so each session keeps a record per advisory id (HeldLock) and answers
//   "contended" itself for an id it holds or is busy with: it never asks the server twice.
// - Fences and holders: the statement that takes the lock also hands out the next fence and
//   writes the holder (sql.ts: fences are reserved in flushed blocks, holders live in an
//   unlogged table); release only reads and unlocks. One round trip each. A handoff to a
//   waiter of this host keeps the session's lock and moves the holder row (handoff.ts).
// - Lease: advisory locks never expire, so the host ends each lease at its deadline (one
//   timer for the backend, host/locking/deadline-queue.ts), counted from when the acquire or
//   renew was sent. If the host dies, its sessions end and PostgreSQL frees their locks.
//   Before ending a lease the holder asks its row whether another host renewed it by owner
//   token meanwhile.
// - By owner from anywhere (LockService.restore): renew and release of a lock this backend
//   does not hold work on the holders row (live holder checked in pg_locks); a release also
//   tells the holder on the control channel, and the holder unlocks.
// - Waking waiters: an unlock is followed by a NOTIFY on the table's released channel
//   (payload: the advisory id); a release sends it in its own statement, and only when a
//   watcher holds the key's wait lock (sql.ts). One LISTEN connection per backend
//   (listener.ts), opened on the first watch or acquisition, serves watch() (holding the wait
//   locks of the watched keys) and the control channel.
// - Failure: a session whose connection ends loses every lock on it (renew then reports
//   not_found, release not_found) and reconnects on next use. Calls fail with
//   BACKEND_UNAVAILABLE within commandTimeoutMs when the server does not answer in time, and
//   a session the server stops answering is given up (session.ts).
//
// - Read/write locks and semaphores (steps of the queue kinds): rows with leases on the server's clock in
//   tables beside the configured one, not advisory locks (queue-sql.ts, queue-steps.ts);
//   their wake-ups and loss notices travel on the table's shared channel.
//
// This file is the LockBackend facade: it maps each step to its file. lock-book.ts keeps the
// sessions and the locks held on them (lease ends, unlocks); acquire.ts takes locks;
// handoff.ts hands one on;
// batch.ts renews in batches; by-owner.ts renews and releases locks another process holds and
// handles control messages; force-release.ts, record.ts (status rows) and
// tables.ts do the rest.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { Logger } from "pino";
import { pgTlsFields, pgTlsOn, withoutSslParams, type PgConfig } from "./config.js";
import { markPermanent, maskUrl, readTlsFiles, ReleaseListeners, scrubberFor, tlsOptionsOf, TLS_REFUSED_PATTERN } from "../../../kit/index.js";

const PING = { name: "lockhost_ping", text: "SELECT 1" };
/**
 * Errors that retrying cannot cure: SQLSTATE 28P01/28000 (credentials or pg_hba refused) and
 * 3D000 (no such database), answers of the server itself. A host name that does not resolve is
 * not among them: it may resolve soon (a Kubernetes service not up yet).
 */
const PG_PERMANENT = new RegExp(`SQLSTATE (28P01|28000|3D000)|password authentication failed|no pg_hba\\.conf entry|database "[^"]*" does not exist|${TLS_REFUSED_PATTERN.source}`, "i");
import type { MutexAcquireRequest, MutexAcquireResult, MutexHandoffResult, ListRequest, LockBackend, LockPage, LockRecord, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult, KindSteps, LockKind, MutexStore } from "../../../kit/index.js";
import { LOCK_KINDS, StepsByKind } from "../../../kit/index.js";
import { acquire, type AcquireContext } from "./acquire.js";
import { BatchRenewer } from "./batch.js";
import { onControl, recheckHeld, releaseElsewhere, renewElsewhere } from "./by-owner.js";
import { backendError, closedError } from "./errors.js";
import { forceRelease } from "./force-release.js";
import { handOver } from "./handoff.js";
import { HeldLock } from "./held-lock.js";
import { advisoryKeyFromId, advisoryKeyOf, waitLockOf, type AdvisoryKey } from "./key-hash.js";
import { ReleaseListener } from "./listener.js";
import { OutageLog } from "./outage-log.js";
import { ELSEWHERE, NOT_FOUND, ignore, LockBook } from "./lock-book.js";
import type { Session } from "./session.js";
import { toRecord } from "./record.js";
import { channelsOf, statementsFor } from "./sql.js";
import { Tables } from "./tables.js";
import { sharedObjectsOf, sharedStatementsFor } from "./queue-sql.js";
import { PgQueueSteps, type QueueContext } from "./queue-steps.js";
import { QueueTables } from "./queue-tables.js";

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

/**
 * Locks in PostgreSQL (advisory locks + fence and holder tables), shared by every host on the
 * same database and table. Implements LockBackend; see host/locking/backend.ts for each step's
 * contract and the file header for how each step is done.
 */
export class PgBackend implements LockBackend, MutexStore {
  readonly #lostListeners: ((owner: string) => void)[] = [];
  readonly #missedListeners: (() => void)[] = [];
  /** Always "pg". */
  readonly kind = "pg";
  /** Always true: every host on the same database and table shares the locks. */
  readonly distributed = true;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  readonly #book: LockBook;
  readonly #acquire: AcquireContext;
  readonly #batches: BatchRenewer;
  readonly #listener: ReleaseListener;
  /** Watchers by advisory id; a key's first watcher registers it as waited on, its last one unregisters it. */
  readonly #watchers = new ReleaseListeners<string>({
    first: (id) => void this.#listener.register(id, waitLockOf(advisoryKeyFromId(BigInt(id)))),
    last: (id) => this.#listener.unregister(id),
  });
  /** Watchers of read/write locks and semaphores, by shared id (key-hash.ts sharedKeyOf). */
  readonly #sharedWatchers = new ReleaseListeners<string>({
    first: (id) => void this.#listener.register(id, waitLockOf(advisoryKeyFromId(BigInt(id)))),
    last: (id) => this.#listener.unregister(id),
  });
  /** This instance's token in shared holder rows: a force-release's loss notice names it. */
  readonly #instance = randomUUID();
  readonly #shared: QueueContext;
  /**
   * Each kind's steps, made on first use: the single-record kinds from this class's mutex
   * methods (advisory locks), the queue kinds in PgQueueSteps: rows with leases on the server's
   * clock, in tables beside the configured one, created on first use (queue-sql.ts), one
   * statement per step, their wake-ups and loss notices on the table's shared channel.
   */
  readonly #steps = new StepsByKind(this, (kind) => new PgQueueSteps(kind, this.#shared));
  #closing: Promise<void> | undefined;

  /**
   * Opens no connection: each session connects on first use, and a server that cannot be
   * reached fails calls with BACKEND_UNAVAILABLE, never the constructor.
   */
  constructor(config: PgConfig, log: Logger, options: PgBackendOptions = {}) {
    const timeout = config.commandTimeoutMs;
    const scrub = scrubberFor(config.url);
    // TLS from the fields: files read once, here; the url's own TLS parameters (only those that
    // agree, config.ts) are removed, since node-postgres would let them replace these settings.
    const tlsFiles = pgTlsFields(config) ? readTlsFiles("[locking.pg]", config) : undefined;
    const errors = { target: maskUrl(config.url), commandTimeoutMs: timeout, scrub, tls: tlsFiles !== undefined || pgTlsOn(config), tlsFiles };
    const sql = statementsFor(config.table);
    const tables = new Tables(sql, errors, log);
    const applicationName = options.applicationName ?? `lockhost:${process.pid}`;
    // Settings of every connection: the sessions' and the listener's.
    const connection = {
      connectionString: tlsFiles ? withoutSslParams(config.url) : config.url,
      ...(tlsFiles && { ssl: tlsOptionsOf(tlsFiles) }),
      connectionTimeoutMillis: timeout,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    };
    const client: pg.ClientConfig = {
      ...connection,
      application_name: applicationName,
      // The server cancels a slow statement a little before the session's time limits (see
      // session.ts): a cancelled statement is an answer and costs one call, while a session
      // that does not answer for commandTimeoutMs is dropped with every lock on it.
      statement_timeout: Math.max(1, timeout - Math.min(250, Math.floor(timeout / 4))),
      pipeline: true,
    };
    const channels = channelsOf(config.table);
    const sharedTables = new QueueTables(
      sharedStatementsFor(config.table),
      sharedObjectsOf(config.table),
      { ...connection, application_name: `${applicationName}:ddl` },
      errors,
      log,
    );
    const outage = new OutageLog();
    this.#book = new LockBook({
      outage,
      sessions: config.sessions,
      client,
      sql,
      channels,
      errors,
      log,
      keyOf: options.advisoryKey ?? advisoryKeyOf,
      prepare: (c, ms) => tables.prepare(c, ms),
      reconnectAfter: (err) => !sharedTables.isOurs(err) && tables.gone(err),
      onSessionLost: (owner) => this.#tellLost(owner),
    });
    this.#listener = new ReleaseListener({
      client: { ...connection, application_name: `${applicationName}:listen` },
      channels: [channels.released, channels.control, channels.shared],
      commandTimeoutMs: timeout,
      waitOn: sql.waitOn,
      waitOff: sql.waitOff,
      onNotification: (channel, payload) => this.#notified(channel, payload),
      // A release by owner of a lock held here, sent before LISTEN, was not heard.
      onListening: () => void recheckHeld(this.#book, this.#tellLost),
      onReconnect: () => {
        this.#watchers.wakeAll();
        this.#sharedWatchers.wakeAll();
        for (const missed of this.#missedListeners) missed();
      },
      errors,
      log,
      outage,
    });
    this.#acquire = { book: this.#book, hostname: hostname(), onHeld: () => void this.#listener.start() };
    this.#batches = new BatchRenewer(this.#book);
    this.#shared = {
      book: this.#book,
      sql: sharedStatementsFor(config.table),
      tables: sharedTables,
      hostname: this.#acquire.hostname,
      instance: this.#instance,
      onHeld: this.#acquire.onHeld,
      watch: (advisory, listener) => {
        if (this.#book.closed) return { ready: Promise.resolve(), close: ignore };
        const close = this.#sharedWatchers.add(advisory.id, listener);
        return { ready: this.#listener.registered(advisory.id), close };
      },
    };
  }

  /** The steps of `kind` (LockBackend.steps). */
  steps(kind: LockKind): KindSteps {
    return this.#steps.get(kind);
  }

  /** The server pids of the sessions connected now (for tests and diagnostics). */
  get sessionPids(): number[] {
    return this.#book.sessions.flatMap((s) => (s.pid === undefined ? [] : [s.pid]));
  }

  /** The server pid of the LISTEN connection while it is up (never one of sessionPids). */
  get listenerPid(): number | undefined {
    return this.#listener.pid;
  }

  /** Locks this backend holds now, by its own bookkeeping. */
  get heldCount(): number {
    return this.#book.expiry.size;
  }

  /** Statements sent by renewMany (one per session per batch, unless a batch names an id twice). */
  get renewRoundTrips(): number {
    return this.#batches.statements;
  }

  /** What renew, release and handoff of (`key`, `owner`) act on: its id, session and record (LockBook.find). */
  async #locate(key: string, owner: string): Promise<{ book: LockBook; advisory: AdvisoryKey; session: Session; found: ReturnType<LockBook["find"]> }> {
    const book = this.#book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(key);
    const session = book.sessionOf(advisory);
    return { book, advisory, session, found: book.find(await book.current(session, advisory.id), key, owner) };
  }

  /** Takes `req.key` if no session anywhere holds it, with the next fence (LockBackend.acquire). */
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return acquire(this.#acquire, req);
  }

  /**
   * Sets the lease to `ttlMs` from now if `owner` still holds `key` (LockBackend.renew). A lock
   * another backend instance holds (another process: restore) is renewed on its holders row;
   * its holder sees the later expiry before it would end the lease.
   */
  async renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    const { book, advisory, session, found } = await this.#locate(key, owner);
    if (found === ELSEWHERE) return renewElsewhere(book, session, advisory, key, owner, ttlMs);
    if (!(found instanceof HeldLock)) return found;
    const lock = found;
    const sentAt = performance.now();
    const values = [advisory.id, key, owner, ttlMs];
    return session.run(book.sql.renew, values).then(
      (rows): RenewResult => book.renewed(session, lock, rows[0]?.[0], sentAt, ttlMs),
      (err: unknown) => {
        // The connection ended: the lock ended with it.
        if (session.held.get(advisory.id) !== lock) return NOT_FOUND;
        throw backendError(err, "renew", book.errors);
      },
    );
  }

  /**
   * Renews each lock as renew() would, with one statement per session (LockBackend.renewMany);
   * results in request order. Counts its statements in `renewRoundTrips`.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#batches.renewMany(reqs);
  }

  /**
   * Unlocks `key` if `owner` holds it (LockBackend.release). A lock another backend instance
   * holds is released on its holders row, and its holder is told to unlock (control channel);
   * until it does (it may be gone: then its session, and the lock, are gone too) acquirers see
   * it contended.
   */
  async release(key: string, owner: string): Promise<ReleaseResult> {
    const { book, advisory, session, found } = await this.#locate(key, owner);
    if (found instanceof HeldLock) return book.unlock(session, found, true);
    if (found !== ELSEWHERE) return found.ok ? "not_found" : found.reason;
    return releaseElsewhere(book, advisory, key, owner);
  }

  /**
   * Releases `owner`'s lock on `key` and takes it for `next` in one step (MutexStore.handoff):
   * a lock this backend holds stays locked on its session while its row moves to `next` (one
   * statement, the key never free); any other is released as release() would, then `next`
   * attempts.
   */
  async handoff(key: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    const { book, advisory, session, found } = await this.#locate(key, owner);
    if (found instanceof HeldLock) return handOver(this.#acquire, session, found, next);
    const released = found !== ELSEWHERE ? (found.ok ? "not_found" : found.reason) : await releaseElsewhere(book, advisory, key, owner);
    if (released !== "released") return { released };
    // Released: a failed attempt for the next owner does not undo that (it tries again itself).
    return { released, next: await this.acquire(next).catch((): MutexAcquireResult => ({ acquired: false })) };
  }

  /**
   * Calls `listener` when `key` may have become free on any host (LockBackend.watch): after
   * every unlock, a NOTIFY on the table's released channel reaches the backend's one LISTEN
   * connection; after that connection came back from a drop, every listener is called once.
   */
  watch(key: string, listener: () => void): ReleaseWatch {
    if (this.#book.closed) return { ready: Promise.resolve(), close: ignore };
    const { id } = this.#book.keyOf(key);
    const close = this.#watchers.add(id, listener);
    // Ready once a release anywhere would notify: the key's wait lock is held.
    return { ready: this.#listener.registered(id), close };
  }

  /** The live holder of `key` on any host, or null (LockBackend.status); see record.ts for its ttlMs. */
  async status(key: string): Promise<LockRecord | null> {
    const book = this.#book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(key);
    const rows = await book.run("status", advisory, book.sql.status, [advisory.id, key, advisory.classid, advisory.objid]);
    const row = rows[0];
    return row === undefined ? null : toRecord(key, row);
  }

  /**
   * Stores a leader's `value` in the holders row if `owner` holds `key` on a live session, and
   * notifies the key's watchers in the same statement (LockBackend.proclaim).
   */
  async proclaim(key: string, owner: string, value: string): Promise<boolean> {
    const book = this.#book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(key);
    const rows = await book.run("proclaim", advisory, book.sql.proclaim, [advisory.id, key, value, owner, advisory.classid, advisory.objid, book.channels.released]);
    return rows.length > 0;
  }

  /** SELECT 1 on a session (LockBackend.ping); refused credentials or a missing database are permanent. */
  async ping(): Promise<void> {
    const book = this.#book;
    if (book.closed) throw closedError();
    try {
      await book.run("ping", book.keyOf(""), PING, []);
    } catch (err) {
      throw markPermanent(err, PG_PERMANENT);
    }
  }

  /** A page of held locks in name order, from the holders table (LockBackend.list). */
  async list(req: ListRequest): Promise<LockPage> {
    const book = this.#book;
    if (book.closed) throw closedError();
    const pattern = (req.prefix ?? "").replace(/[\\%_]/g, "\\$&") + "%";
    // One more than asked: whether a next page exists, without a second query.
    const rows = await book.run("list", book.keyOf(req.cursor ?? ""), book.sql.list, [pattern, req.cursor ?? null, req.limit + 1]);
    const locks = rows.slice(0, req.limit).map((row) => toRecord(String(row[0]), row.slice(1)));
    return rows.length > req.limit ? { locks, cursor: locks[locks.length - 1]!.key } : { locks };
  }

  /**
   * Frees `key` whoever holds it; true when someone did (LockBackend.forceRelease).
   *
   * When this backend holds it, it just unlocks. Otherwise it clears the holder row's owner
   * (so the holder's next renew or release finds the lock no longer theirs) and tells the
   * holder on the table's control channel: the holder's session unlocks that one lock itself
   * (its other locks stay) and its lease is lost at once. Only a holder that does not do so
   * within a grace period (its process paused, its listener gone) has its session terminated
   * (pg_terminate_backend, the only way to take an advisory lock from another session; every
   * lock on it goes). Resolves once the lock is free, so the key can be taken at once. The
   * fallback needs the right to signal the holder's backend: the same role, or pg_signal_backend.
   */
  forceRelease(key: string): Promise<boolean> {
    if (this.#book.closed) return Promise.reject(closedError());
    return forceRelease(this.#book, key);
  }

  /**
   * Ends every session; PostgreSQL frees their locks as each one ends (fences are kept).
   * Does not wait past commandTimeoutMs for a server that does not answer.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  /** Tells the listeners of onLost. */
  readonly #tellLost = (owner: string): void => {
    for (const listener of this.#lostListeners) listener(owner);
  };

  /**
   * Hears of this backend's locks released or force-released by another host (LockBackend.onLost),
   * and, through `missed`, of the LISTEN connection coming back (notices may have been missed).
   */
  onLost(listener: (owner: string) => void, missed?: () => void): void {
    this.#lostListeners.push(listener);
    if (missed) this.#missedListeners.push(missed);
  }

  async #close(): Promise<void> {
    this.#listener.close();
    this.#watchers.clear();
    this.#sharedWatchers.clear();
    await this.#book.close();
  }

  /** A notification on one of the table's channels (see ReleaseListener). */
  #notified(channel: string, payload: string): void {
    const { released, control } = this.#book.channels;
    if (channel === released) this.#watchers.wake(payload);
    else if (channel === control) onControl(this.#book, payload, this.#tellLost);
    else if (channel === this.#book.channels.shared) this.#sharedNotice(payload);
  }

  /** `w:<id>`: a shared key may be free; `l:<instance>:<owner>`: a force-release removed `owner` (ours if the instance is). */
  #sharedNotice(payload: string): void {
    if (payload.startsWith("w:")) {
      this.#sharedWatchers.wake(payload.slice(2));
    } else if (payload.startsWith(`l:${this.#instance}:`)) {
      const owner = payload.slice(3 + this.#instance.length);
      this.#book.log.info({ owner }, "pg shared hold force-released by another host");
      this.#tellLost(owner);
    }
  }
}

export { pgConfigSchema, pgDefaults, type PgConfig } from "./config.js";
