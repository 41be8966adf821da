// The PostgreSQL backend: session-level advisory locks for exclusion, held many to a
// connection on a few dedicated sessions, plus two small tables for fences and holders.
//
// - Exclusion: pg_try_advisory_lock on the session a name's advisory id routes to (id mod
//   sessions, so a name always lands on the same session). Advisory locks are re-entrant per
//   session, so each session keeps a record per advisory id (HeldLock) and answers
//   "contended" itself for an id it holds or is busy with: it never asks the server twice.
// - Fences and holders: the statement that takes the lock also hands out the next fence and
//   writes the holder (mutex-sql.ts: fences are reserved in flushed blocks, holders live in an
//   unlogged table); release only reads and unlocks. One round trip each. A handoff to a
//   waiter of this host keeps the session's lock and moves the holder row (mutex.ts).
// - Lease: advisory locks never expire, so the host ends each lease at its deadline (one
//   timer for the backend, kit/deadline-queue.ts), counted from when the acquire or
//   renew was sent. If the host dies, its sessions end and PostgreSQL frees their locks.
//   Before ending a lease the holder asks its row whether another host renewed it by owner
//   token meanwhile.
// - By owner from anywhere (LockService.restore): renew and release of a lock this backend
//   does not hold work on the holders row (live holder checked in pg_locks); a release also
//   tells the holder on the control channel, and the holder unlocks.
// - Waking waiters: an unlock is followed by a NOTIFY on the table's released channel
//   (payload: the advisory id); a release sends it in its own statement, and only when a
//   watcher holds the key's wait lock (mutex-sql.ts). One LISTEN connection per backend
//   (watch.ts), opened on the first watch or acquisition, serves watch() (holding the wait
//   locks of the watched keys) and the control channel.
// - Failure: a session whose connection ends loses every lock on it (renew then reports
//   not_found, release not_found) and reconnects on next use. Calls fail with
//   BACKEND_UNAVAILABLE within commandTimeoutMs when the server does not answer in time, and
//   a session the server stops answering is given up (client.ts).
//
// - The queue kinds (read/write locks, semaphores, fair mutexes): rows with leases on the
//   server's clock in tables beside the configured one, not advisory locks (queue-sql.ts,
//   queue.ts); their wake-ups and loss notices travel on the table's queue channel.
//
// This file is the LockBackend: it wires the parts. mutex.ts is the mutex's MutexStore (acquire,
// renew, handoff, by owner, force-release, status) and queue.ts the queue kinds' steps, their
// statements in mutex-sql.ts and queue-sql.ts; held.ts keeps the sessions (client.ts) and the
// locks held on them (lease ends, unlocks); watch.ts is the LISTEN connection; keys.ts maps names
// to advisory ids; tables.ts creates the schema; errors.ts maps failures.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type pg from "pg";
import type { Logger } from "pino";
import { LOCK_KINDS, markPermanent, maskUrl, ReleaseListeners, scrubberFor, StepsByKind } from "../../../kit/index.js";
import type {
  KindSteps,
  ListRequest,
  LockBackend,
  LockKind,
  LockPage,
  LockRecord,
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexHandoffResult,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import { pgConnection, pgTlsOn, type PgConfig } from "./config.js";
import { closedError, OutageLog, PG_PERMANENT } from "./errors.js";
import { HeldLocks, ignore } from "./held.js";
import { advisoryKeyFromId, advisoryKeyOf, waitLockOf, type AdvisoryKey } from "./keys.js";
import { onControl, PgMutexStore, recheckHeld } from "./mutex.js";
import { channelsOf, statementsFor } from "./mutex-sql.js";
import { PgDelegation } from "./delegation.js";
import { PgQueueSteps, type QueueContext } from "./queue.js";
import { queueObjectsOf, queueStatementsFor } from "./queue-sql.js";
import { QueueTables, Tables } from "./tables.js";
import { ReleaseListener } from "./watch.js";

const PING = { name: "lockhost_ping", text: "SELECT 1" };

/** Options of a PgBackend beyond its config, mostly for tests and embedders. */
export interface PgBackendOptions {
  /** application_name of the sessions, to count them in pg_stat_activity; default `lockhost:<pid>`. */
  readonly applicationName?: string;
  /**
   * Maps a lock name to its advisory lock id; default advisoryKeyOf (keys.ts). Every host
   * sharing a table must use the same mapping; tests replace it to force collisions.
   */
  readonly advisoryKey?: (name: string) => AdvisoryKey;
}

/**
 * Locks in PostgreSQL (advisory locks + fence and holder tables), shared by every host on the
 * same database and table. Implements LockBackend (kit/backend.ts): the mutex's steps are
 * PgMutexStore's (mutex.ts), the queue kinds' PgQueueSteps' (queue.ts); see the file header for
 * how each step is done.
 */
export class PgBackend implements LockBackend, MutexStore {
  readonly #lostListeners: ((owner: string) => void)[] = [];
  readonly #missedListeners: (() => void)[] = [];
  /** Always "pg". */
  readonly name = "pg";
  /** Always true: every host on the same database and table shares the locks. */
  readonly distributed = true;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  readonly #book: HeldLocks;
  readonly #mutex: PgMutexStore;
  readonly #listener: ReleaseListener;
  /** Watchers by advisory id; a key's first watcher registers it as waited on, its last one unregisters it. */
  readonly #watchers = new ReleaseListeners<string>({
    first: (id) => void this.#listener.register(id, waitLockOf(advisoryKeyFromId(BigInt(id)))),
    last: (id) => this.#listener.unregister(id),
  });
  /** Watchers of the queue kinds' locks, by queue id (keys.ts queueKeyOf). */
  readonly #queueWatchers = new ReleaseListeners<string>({
    first: (id) => void this.#listener.register(id, waitLockOf(advisoryKeyFromId(BigInt(id)))),
    last: (id) => this.#listener.unregister(id),
  });
  /** Watchers of the wanted notices of delegated keys (delegation.ts), by advisory id. */
  readonly #wantedWatchers = new ReleaseListeners<string>();
  /** Lock delegation's steps (delegation.ts): grants with fence blocks, wanted notices. */
  readonly delegation: PgDelegation;
  /** This instance's token in shared holder rows: a force-release's loss notice names it. */
  readonly #instance = randomUUID();
  readonly #queue: QueueContext;
  /**
   * Each kind's steps, made on first use: the single-record kinds from PgMutexStore (advisory
   * locks), the queue kinds in PgQueueSteps: rows with leases on the server's clock, in tables
   * beside the configured one, created on first use (queue-sql.ts), one statement per step,
   * their wake-ups and loss notices on the table's queue channel.
   */
  readonly #steps: StepsByKind;
  #closing: Promise<void> | undefined;

  /**
   * Opens no connection: each session connects on first use, and a server that cannot be
   * reached fails calls with BACKEND_UNAVAILABLE, never the constructor.
   */
  constructor(config: PgConfig, log: Logger, options: PgBackendOptions = {}) {
    const timeout = config.commandTimeoutMs;
    const scrub = scrubberFor(config.url);
    // Settings of every connection: the sessions' and the listener's (TLS files read once, here).
    const { connection, tlsFiles } = pgConnection(config);
    const errors = { target: maskUrl(config.url), commandTimeoutMs: timeout, scrub, tls: tlsFiles !== undefined || pgTlsOn(config), tlsFiles };
    const sql = statementsFor(config.table);
    const tables = new Tables(sql, errors, log);
    const applicationName = options.applicationName ?? `lockhost:${process.pid}`;
    const client: pg.ClientConfig = {
      ...connection,
      application_name: applicationName,
      // The server cancels a slow statement a little before the session's time limits (see
      // client.ts): a cancelled statement is an answer and costs one call, while a session
      // that does not answer for commandTimeoutMs is dropped with every lock on it.
      statement_timeout: Math.max(1, timeout - Math.min(250, Math.floor(timeout / 4))),
      pipeline: true,
    };
    const channels = channelsOf(config.table);
    const queueTables = new QueueTables(
      queueStatementsFor(config.table),
      queueObjectsOf(config.table),
      { ...connection, application_name: `${applicationName}:ddl` },
      errors,
      log,
    );
    const outage = new OutageLog();
    this.#book = new HeldLocks({
      outage,
      sessions: config.sessions,
      client,
      sql,
      channels,
      errors,
      log,
      keyOf: options.advisoryKey ?? advisoryKeyOf,
      prepare: (c, ms) => tables.prepare(c, ms),
      reconnectAfter: (err) => !queueTables.isOurs(err) && tables.gone(err),
      onSessionLost: (owner) => this.#tellLost(owner),
    });
    this.#listener = new ReleaseListener({
      client: { ...connection, application_name: `${applicationName}:listen` },
      channels: [channels.released, channels.control, channels.queue],
      commandTimeoutMs: timeout,
      waitOn: sql.waitOn,
      waitOff: sql.waitOff,
      onNotification: (channel, payload) => this.#notified(channel, payload),
      // A release by owner of a lock held here, sent before LISTEN, was not heard.
      onListening: () => void recheckHeld(this.#book, this.#tellLost),
      onReconnect: () => {
        this.#watchers.wakeAll();
        this.#queueWatchers.wakeAll();
        for (const missed of this.#missedListeners) missed();
      },
      errors,
      log,
      outage,
    });
    const host = hostname();
    const onHeld = (): void => void this.#listener.start();
    this.#mutex = new PgMutexStore({
      book: this.#book,
      hostname: host,
      onHeld,
      watch: (id, listener) => {
        const close = this.#watchers.add(id, listener);
        return { ready: this.#listener.registered(id), close };
      },
    });
    this.#queue = {
      book: this.#book,
      sql: queueStatementsFor(config.table),
      tables: queueTables,
      hostname: host,
      instance: this.#instance,
      onHeld,
      watch: (advisory, listener) => {
        if (this.#book.closed) return { ready: Promise.resolve(), close: ignore };
        const close = this.#queueWatchers.add(advisory.id, listener);
        return { ready: this.#listener.registered(advisory.id), close };
      },
    };
    this.#steps = new StepsByKind(this.#mutex, (kind) => new PgQueueSteps(kind, this.#queue));
    this.delegation = new PgDelegation({
      book: this.#book,
      mutex: this.#mutex,
      table: config.table,
      wanted: (id, listener) => ({ ready: this.#listener.start(), close: this.#wantedWatchers.add(id, listener) }),
    });
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
    return this.#mutex.renewRoundTrips;
  }

  /** The mutex's steps (MutexStore, mutex.ts), on the backend too: tests, benches and embedders call them here. */
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return this.#mutex.acquire(req);
  }

  renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#mutex.renew(name, owner, ttlMs);
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#mutex.renewMany(reqs);
  }

  release(name: string, owner: string): Promise<ReleaseResult> {
    return this.#mutex.release(name, owner);
  }

  handoff(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    return this.#mutex.handoff(name, owner, next);
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#mutex.watch(name, listener);
  }

  status(name: string): Promise<LockRecord | null> {
    return this.#mutex.status(name);
  }

  proclaim(name: string, owner: string, value: string): Promise<boolean> {
    return this.#mutex.proclaim(name, owner, value);
  }

  list(req: ListRequest): Promise<LockPage> {
    return this.#mutex.list(req);
  }

  forceRelease(name: string): Promise<boolean> {
    return this.#mutex.forceRelease(name);
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
    this.#queueWatchers.clear();
    await this.#book.close();
  }

  /** A notification on one of the table's channels (see ReleaseListener). */
  #notified(channel: string, payload: string): void {
    const { released, control } = this.#book.channels;
    if (channel === released) this.#watchers.wake(payload);
    else if (channel === control) onControl(this.#book, payload, this.#tellLost);
    else if (channel === this.#book.channels.queue) this.#queueNotice(payload);
  }

  /**
   * `w:<id>`: a queue-kind key may be free; `d:<id>`: another host wants a delegated key (delegation.ts);
   * `l:<instance>:<owner>`: a force-release removed `owner` (ours if the instance is).
   */
  #queueNotice(payload: string): void {
    if (payload.startsWith("w:")) {
      this.#queueWatchers.wake(payload.slice(2));
    } else if (payload.startsWith("d:")) {
      this.#wantedWatchers.wake(payload.slice(2));
    } else if (payload.startsWith(`l:${this.#instance}:`)) {
      const owner = payload.slice(3 + this.#instance.length);
      this.#book.log.info({ owner }, "pg queue-kind hold force-released by another host");
      this.#tellLost(owner);
    }
  }
}

export { pgConfigSchema, pgDefaults, type PgConfig } from "./config.js";
