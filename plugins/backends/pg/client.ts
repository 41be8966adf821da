// The pg backend's connections to the server, its sessions (Session; the LISTEN connection is
// watch.ts's): one dedicated PostgreSQL connection that holds advisory locks, and the bookkeeping
// of the locks on it. Session-level advisory locks belong to the connection, so the connection is
// never shared with a pool or handed to anyone else, and when it ends every lock on it is
// gone: the session forgets them at once and reports them lost.
//
// The connection is opened on first use and again on the first use after it ended. While the
// server cannot be reached, attempts back off (capped) and calls in between fail at once.
//
// Statements are pipelined (node-postgres `pipeline`): many callers share the session without
// waiting for each other's round trips, and the server runs them in the order sent, which
// the bookkeeping relies on (an unlock sent before an acquire of the same id runs first). At
// most MAX_IN_FLIGHT are on the wire; the rest wait here. Time limits, all commandTimeoutMs:
// - a caller gets BACKEND_UNAVAILABLE once its call is that old, wherever it is: a statement
//   still waiting here is then never sent; one on the wire still runs, its answer ignored;
// - the connection is given up when statements are on the wire and none has been answered
//   for that long (the server is gone or frozen). A server that is only slow (each answer
//   within the limit, e.g. statements cancelled by statement_timeout while a table is
//   locked) keeps its sessions, and their locks.
import pg from "pg";
import type { Logger } from "pino";
import { LockhostError } from "../../../kit/index.js";
import { backendError, closedError, endsSession, type ErrorContext, type OutageLog } from "./errors.js";
import type { HeldLock } from "./held.js";
import type { Statement } from "./mutex-sql.js";

/** What a session needs from its backend. */
export interface SessionOptions {
  /** The session's position in the backend, for logs. */
  readonly index: number;
  /** node-postgres settings of the connection (URL, timeouts, application_name, pipeline). */
  readonly client: pg.ClientConfig;
  /** Bound on connecting, on each call, and on the server's silence (see the file header). */
  readonly commandTimeoutMs: number;
  /** Runs on every new connection before its first statement (the backend creates its tables). */
  readonly prepare: (client: pg.Client, timeoutMs: number) => Promise<void>;
  /** Told which locks ended with the connection, before any caller hears of it. */
  readonly onLost: (locks: readonly HeldLock[]) => void;
  /** Whether a statement error (the connection being fine) still calls for a new connection. */
  readonly reconnectAfter: (err: unknown) => boolean;
  readonly errors: ErrorContext;
  readonly log: Logger;
  /** Says an outage once for every connection of the backend. */
  readonly outage: OutageLog;
}

/** Rows of a statement run in array mode. */
export type Rows = unknown[][];

const BACKOFF_MIN_MS = 50;
const BACKOFF_MAX_MS = 1_000;
/** The delay before reconnecting after `failures` failed attempts in a row (0: the first retry), doubling, capped. */
export const backoffMs = (failures: number): number => Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** failures);
/** Statements on the wire at once per session: enough to keep the server busy, few enough to answer fast. */
const MAX_IN_FLIGHT = 32;

type QueryConfig = pg.QueryArrayConfig & { query_timeout?: number };

/** One call of run(): its statement and its caller. */
interface Call {
  readonly config: QueryConfig;
  /** An unlock: always sent once queued, and any failure of it ends the connection. */
  readonly dropOnError: boolean;
  /** performance.now() when the call began. */
  readonly since: number;
  readonly resolve: (rows: Rows) => void;
  readonly reject: (err: unknown) => void;
  /** Whether the caller has had its answer (a late answer from the server is then ignored). */
  settled: boolean;
}

/** An open connection and what is on its wire. */
interface Connection {
  readonly client: pg.Client;
  /** The server process id (pg_stat_activity.pid), known once set up. */
  pid: number | undefined;
  /** Sent and not answered yet, oldest first (the server answers in that order). */
  readonly inFlight: Call[];
  /** performance.now() of the last answer, or of the send that made the wire busy. */
  lastAnswer: number;
}

/** A dedicated connection plus the locks held on it. */
export class Session {
  /** The locks of this session by advisory id (see HeldLock). Cleared when the connection ends. */
  readonly held = new Map<string, HeldLock>();
  readonly #options: SessionOptions;
  readonly #log: Logger;
  /** The connection, once it is set up and until it ends. */
  #conn: Connection | undefined;
  /** Calls waiting for room on the wire, oldest first. */
  #waiting: Call[] = [];
  #connecting: Promise<Connection> | undefined;
  #failures = 0;
  /** performance.now() before which no new connection is attempted. */
  #retryAt = 0;
  #lastFailure: LockhostError | undefined;
  /** The one timer of the session, for the time limits; armed while calls are outstanding. */
  #timer: NodeJS.Timeout | undefined;
  #timerAt = Infinity;
  #closed = false;

  constructor(options: SessionOptions) {
    this.#options = options;
    this.#log = options.log.child({ session: options.index });
  }

  /** The server process id of the open connection (pg_stat_activity.pid), if there is one. */
  get pid(): number | undefined {
    return this.#conn?.pid;
  }

  /**
   * Runs `statement` (connecting first when needed) and resolves to its rows. Rejects with the
   * driver's error, or a LockhostError (no connection could be made; the call ran out of time,
   * and then wasNotSent tells whether the statement had left); when the error ended the
   * connection, every lock of the session has already been reported lost. With `dropOnError`
   * (unlocks), the statement is sent whatever the caller's time limit, and any failure of it
   * ends the connection: an unlock must not be lost, or a lock nobody tracks would stay held.
   */
  run(statement: Statement, values: unknown[], dropOnError = false): Promise<Rows> {
    return new Promise((resolve, reject) => {
      const config: QueryConfig = { name: statement.name, text: statement.text, values, rowMode: "array" };
      const call: Call = { config, dropOnError, since: performance.now(), resolve, reject, settled: false };
      const conn = this.#conn;
      if (conn !== undefined) {
        this.#admit(conn, call);
      } else {
        this.#connect().then(
          (c) => (c === this.#conn ? this.#admit(c, call) : this.#settle(call, lostBeforeSending())),
          (err: unknown) => this.#settle(call, err),
        );
      }
    });
  }

  /**
   * Ends the connection: gracefully (the server then frees its locks at once), or by closing
   * the socket when the server does not answer within commandTimeoutMs. Later calls reject
   * with CLOSED.
   */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connecting?.catch(() => undefined);
    clearTimeout(this.#timer);
    this.#timerAt = Infinity;
    const conn = this.#conn;
    this.#conn = undefined;
    this.held.clear();
    for (const call of this.#waiting.splice(0)) this.#settle(call, closedError());
    if (conn === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#options.commandTimeoutMs);
    });
    await Promise.race([conn.client.end().catch(() => undefined), timedOut]);
    clearTimeout(timer);
    destroy(conn.client);
  }

  /** Sends now if the wire has room (and nobody waits), else queues. */
  #admit(conn: Connection, call: Call): void {
    if (conn.inFlight.length < MAX_IN_FLIGHT && this.#waiting.length === 0) this.#send(conn, call);
    else this.#waiting.push(call);
    this.#arm(call.since + this.#options.commandTimeoutMs);
  }

  #send(conn: Connection, call: Call): void {
    if (conn.inFlight.length === 0) conn.lastAnswer = performance.now();
    conn.inFlight.push(call);
    conn.client.query(call.config).then(
      (result) => {
        this.#answered(conn, call);
        this.#settle(call, undefined, result.rows);
      },
      (err: unknown) => {
        if (call.dropOnError || endsSession(err) || this.#options.reconnectAfter(err)) this.#lose(conn, err);
        this.#answered(conn, call);
        this.#settle(call, err);
      },
    );
  }

  /** `call` left the wire: lets waiting calls on. */
  #answered(conn: Connection, call: Call): void {
    const i = conn.inFlight[0] === call ? 0 : conn.inFlight.indexOf(call);
    if (i >= 0) conn.inFlight.splice(i, 1);
    conn.lastAnswer = performance.now();
    if (conn !== this.#conn) return;
    while (conn.inFlight.length < MAX_IN_FLIGHT && this.#waiting.length > 0) this.#send(conn, this.#waiting.shift()!);
  }

  #settle(call: Call, err: unknown, rows?: Rows): void {
    if (call.settled) return;
    call.settled = true;
    if (err === undefined) call.resolve(rows ?? []);
    else call.reject(err);
  }

  /** Arms the session's timer for `at` unless it fires earlier already. */
  #arm(at: number): void {
    if (at >= this.#timerAt) return;
    clearTimeout(this.#timer);
    this.#timerAt = at;
    this.#timer = setTimeout(() => this.#onTimer(), Math.max(0, Math.ceil(at - performance.now())));
    this.#timer.unref();
  }

  /** Enforces the time limits (see the file header), then re-arms for the next one due. */
  #onTimer(): void {
    this.#timer = undefined;
    this.#timerAt = Infinity;
    const limit = this.#options.commandTimeoutMs;
    const now = performance.now() + 1;
    const conn = this.#conn;
    if (conn !== undefined && conn.inFlight.length > 0 && now - conn.lastAnswer >= limit) {
      const where = `PostgreSQL at ${this.#options.errors.target}`;
      this.#lose(conn, new LockhostError("BACKEND_UNAVAILABLE", `${where} did not answer for commandTimeoutMs (${limit} ms); the session was closed`));
      return;
    }
    let next = Infinity;
    for (const call of conn?.inFlight ?? []) {
      if (call.settled) continue;
      if (now - call.since >= limit) this.#settle(call, this.#timedOut(call, true));
      else next = Math.min(next, call.since + limit);
    }
    const waiting: Call[] = [];
    for (const call of this.#waiting) {
      if (now - call.since < limit) {
        next = Math.min(next, call.since + limit);
        waiting.push(call);
      } else if (call.dropOnError) {
        // An unlock goes out whatever its caller's limit: the order on the wire keeps it safe.
        this.#settle(call, this.#timedOut(call, false));
        waiting.push(call);
      } else {
        this.#settle(call, this.#timedOut(call, false));
      }
    }
    this.#waiting = waiting;
    if (conn !== undefined && conn.inFlight.length > 0) next = Math.min(next, conn.lastAnswer + limit);
    if (next < Infinity) this.#arm(next);
  }

  #timedOut(call: Call, sent: boolean): LockhostError {
    const where = `PostgreSQL at ${this.#options.errors.target}`;
    const err = new LockhostError(
      "BACKEND_UNAVAILABLE",
      sent
        ? `${where} did not answer within commandTimeoutMs (${this.#options.commandTimeoutMs} ms)`
        : `${where}: no turn on a busy session within commandTimeoutMs (${this.#options.commandTimeoutMs} ms; ${this.#waiting.length} statements waiting)`,
    );
    if (!sent && !call.dropOnError) notSent.add(err);
    return err;
  }

  #connect(): Promise<Connection> {
    if (this.#closed) return Promise.reject(closedError());
    if (this.#connecting !== undefined) return this.#connecting;
    const wait = this.#retryAt - performance.now();
    if (wait > 0 && this.#lastFailure !== undefined) {
      return Promise.reject(
        // Its details too: a failure that retrying cannot help (permanent) stays so.
        new LockhostError("BACKEND_UNAVAILABLE", `${this.#lastFailure.message} (next attempt in ${Math.ceil(wait)} ms)`, {
          details: this.#lastFailure.details,
        }),
      );
    }
    const attempt = this.#open().then(
      (conn) => {
        this.#connecting = undefined;
        if (this.#closed) {
          destroy(conn.client);
          throw closedError();
        }
        if (this.#failures > 0) this.#options.outage.up(this.#log, { pid: conn.pid }, "pg session reconnected");
        else this.#log.debug({ pid: conn.pid }, "pg session connected");
        this.#conn = conn;
        this.#failures = 0;
        this.#lastFailure = undefined;
        return conn;
      },
      (err: unknown) => {
        this.#connecting = undefined;
        // Nothing can be held without a connection: the records here are acquisitions that
        // were waiting for this one, and their statements were never sent.
        this.held.clear();
        const failure = backendError(err, "connect", this.#options.errors);
        this.#retryAt = performance.now() + backoffMs(this.#failures++);
        this.#lastFailure = failure;
        // One warning per outage, not one per attempt.
        if (this.#failures === 1) this.#options.outage.down(this.#log, { err: failure.message }, "pg session cannot connect");
        throw failure;
      },
    );
    this.#connecting = attempt;
    return attempt;
  }

  /** Connects, learns the server pid and lets the backend prepare, all within commandTimeoutMs. */
  async #open(): Promise<Connection> {
    const started = performance.now();
    const left = (): number => Math.max(1, this.#options.commandTimeoutMs - (performance.now() - started));
    const client = new pg.Client(this.#options.client);
    const conn: Connection = { client, pid: undefined, inFlight: [], lastAnswer: started };
    // A listener from the start: an 'error' (also while connecting) never becomes an uncaught
    // exception. Until the connection is this session's, its events are ignored.
    client.on("error", (err) => this.#lose(conn, err));
    client.on("end", () => this.#lose(conn, new Error("the connection ended")));
    try {
      await client.connect();
      const pid = await client.query<[number]>({
        text: "SELECT pg_backend_pid()",
        rowMode: "array",
        query_timeout: left(),
      } as QueryConfig);
      conn.pid = pid.rows[0]?.[0];
      await this.#options.prepare(client, left());
      return conn;
    } catch (err) {
      destroy(client);
      throw err;
    }
  }

  /** Forgets `conn` and every lock held on it, if it is still this session's connection. */
  #lose(conn: Connection, reason: unknown): void {
    if (conn !== this.#conn) return;
    this.#conn = undefined;
    // Every caller waiting, on the wire or here, hears why now (the driver's own failures of
    // the statements on the wire come later and are ignored).
    for (const call of conn.inFlight) this.#settle(call, reason);
    destroy(conn.client);
    const lost = [...this.held.values()];
    this.held.clear();
    this.#options.onLost(lost);
    for (const call of this.#waiting.splice(0)) this.#settle(call, reason);
    if (this.#closed) return;
    const why = this.#options.errors.scrub(reason instanceof Error ? reason.message : String(reason));
    const fields = { pid: conn.pid, locks: lost.length, err: why };
    if (lost.length > 0) this.#options.outage.down(this.#log, fields, "pg session ended: its locks are lost", "info");
    else this.#log.info(fields, "pg session ended");
  }
}

/** Failures of statements that never left the host. */
const notSent = new WeakSet<object>();

/** Whether `err` failed a call whose statement was never sent (so it took no lock). */
export function wasNotSent(err: unknown): boolean {
  return typeof err === "object" && err !== null && notSent.has(err);
}

function lostBeforeSending(): Error {
  const err = new Error("the connection ended before the statement was sent");
  notSent.add(err);
  return err;
}

/** Closes `client`'s socket now, whatever it is doing (its events still reach its listeners). */
export function destroy(client: pg.Client): void {
  client.end().catch(() => undefined);
  client.connection.stream.destroy();
}
