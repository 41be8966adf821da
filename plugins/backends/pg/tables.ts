// The pg backend's schema, made sure of on first use and again after an operator dropped it:
// the mutex's two tables (mutex-sql.ts, Tables: once per backend, on the first session
// connection) and the queue kinds' objects (queue-sql.ts, QueueTables: on the first step of a
// queue kind, not at connection time, so a host that only takes mutexes needs neither them
// nor the right to create them).
import pg from "pg";
import type { Logger } from "pino";
import { LockhostError } from "../../../kit/index.js";
import { backendError, GRANTS_DOC, INSUFFICIENT_PRIVILEGE, isServerError, type ErrorContext } from "./errors.js";
import type { Statements } from "./mutex-sql.js";
import type { QueueObjects, QueueStatements } from "./queue-sql.js";

/** SQLSTATEs of a CREATE TABLE (or ADD COLUMN) IF NOT EXISTS that lost a race with another host's. */
const CREATE_RACE_CODES = new Set(["23505", "42P07", "42710", "42701"]);

/** Whether the tables are known to be there, and the steps that make them so. */
export class Tables {
  readonly #sql: Statements;
  readonly #errors: ErrorContext;
  readonly #log: Logger;
  /** Set once this backend has made sure its tables exist. */
  #ready = false;

  constructor(sql: Statements, errors: ErrorContext, log: Logger) {
    this.#sql = sql;
    this.#errors = errors;
    this.#log = log;
  }

  /**
   * Whether `err` says a table is gone (dropped by an operator). The holders went with it: the
   * session is dropped (its locks are lost) and the next connection creates the tables again.
   * Fences keep increasing as long as the fence table (`<table>`) is kept.
   */
  gone(err: unknown): boolean {
    if (!isServerError(err) || err.code !== "42P01") return false;
    if (this.#ready) this.#log.warn({ err: this.#errors.scrub(err.message) }, "pg lock tables are gone: they will be created again");
    this.#ready = false;
    return true;
  }

  /**
   * Makes sure the tables exist, once per backend. Existing tables are only looked up (an
   * operator may create them, DDL in mutex-sql.ts, for a role that may not create tables); missing
   * ones are created, and several hosts may race to do so. A holders table of an earlier
   * version gets the columns it lacks (ALTER TABLE: needs the table's owner).
   */
  async prepare(client: pg.Client, timeoutMs: number): Promise<void> {
    if (this.#ready) return;
    const until = performance.now() + timeoutMs;
    const left = (): number => Math.max(1, until - performance.now());
    const { text, values } = this.#sql.tablesExist;
    const exist = await client.query<[boolean, boolean, boolean]>({
      text,
      values: [...values],
      rowMode: "array",
      query_timeout: left(),
    } as pg.QueryArrayConfig);
    const [tables, columns, logged] = exist.rows[0] ?? [];
    const run = async (ddl: readonly string[]): Promise<void> => {
      for (const statement of ddl) {
        try {
          await client.query({ text: statement, query_timeout: left() } as pg.QueryConfig);
        } catch (err) {
          if (!(isServerError(err) && CREATE_RACE_CODES.has(err.code ?? ""))) throw err;
        }
      }
    };
    if (tables !== true) {
      await run(this.#sql.createTables).catch((err: unknown) => {
        throw this.#createError(err);
      });
    } else {
      await this.#checkPrivileges(client, left());
      // Made by an operator without UNLOGGED: it works (fences live in the logged table either
      // way), but every acquisition then waits for a WAL flush. Converting it is the owner's call.
      if (logged === true) {
        this.#log.warn(
          { table: this.#sql.holdersTable },
          `the pg lock holders table is a logged table: every acquisition writes WAL; have its owner run ` +
            `ALTER TABLE ${this.#sql.holdersTable} SET UNLOGGED (docs/backends.md, PostgreSQL)`,
        );
      }
    }
    // Also after creating: a host of an earlier version may have won the race to create them.
    if (columns !== true) {
      await run(this.#sql.addColumns).catch((err: unknown) => {
        throw this.#upgradeError(err);
      });
    }
    this.#ready = true;
  }

  /**
   * Tables someone else made: whether this role may use them, so a missing grant stops the
   * host's start naming it rather than failing its first acquisition.
   */
  async #checkPrivileges(client: pg.Client, timeoutMs: number): Promise<void> {
    const { text, values } = this.#sql.privilegesMissing;
    const found = await client.query<[string | null]>({ text, values: [...values], rowMode: "array", query_timeout: timeoutMs } as pg.QueryArrayConfig);
    const missing = found.rows[0]?.[0];
    if (!missing) return;
    throw new LockhostError(
      "BACKEND_UNAVAILABLE",
      this.#errors.scrub(`PostgreSQL at ${this.#errors.target}: the role lacks ${missing.replaceAll('"', "")} (${GRANTS_DOC} lists the grants)`),
      { details: { permanent: 1 } },
    );
  }

  /** The error for lock tables this role may not create. */
  #createError(err: unknown): unknown {
    if (!isServerError(err) || err.code !== INSUFFICIENT_PRIVILEGE) return err;
    return new LockhostError(
      "BACKEND_UNAVAILABLE",
      this.#errors.scrub(
        `PostgreSQL at ${this.#errors.target}: the role may not create the lock tables (${err.message}, SQLSTATE 42501): ` +
          `grant it CREATE on the schema, or have an administrator create them and grant their use (${GRANTS_DOC})`,
      ),
      { details: { permanent: 1 } },
    );
  }

  /** The error for a holders table of an earlier version this role may not add columns to. */
  #upgradeError(err: unknown): unknown {
    if (!isServerError(err)) return err;
    return new LockhostError(
      "BACKEND_UNAVAILABLE",
      this.#errors.scrub(
        `PostgreSQL at ${this.#errors.target}: the lock holders table was made by an earlier lockhost version and ` +
          `adding its new columns failed (${err.message}, SQLSTATE ${err.code ?? "unknown"}); ` +
          `have the table's owner run: ${this.#sql.addColumns.join("; ")}`,
      ),
    );
  }
}

/** SQLSTATEs of a shared object gone under us: undefined table or function. */
const GONE_CODES = new Set(["42P01", "42883"]);

/** Whether the queue objects are known to be there, and how they are made so. */
export class QueueTables {
  readonly #sql: QueueStatements;
  readonly #client: pg.ClientConfig;
  readonly #errors: ErrorContext;
  readonly #log: Logger;
  /** The objects' unqualified names and the closing quote, as error messages end them (maybe schema-qualified). */
  readonly #names: readonly string[];
  #ready: Promise<void> | undefined;

  constructor(sql: QueueStatements, objects: QueueObjects, client: pg.ClientConfig, errors: ErrorContext, log: Logger) {
    this.#sql = sql;
    this.#names = Object.values(objects).map((name) => `${name.slice(name.lastIndexOf(".") + 1)}"`);
    this.#client = client;
    this.#errors = errors;
    this.#log = log;
  }

  /** Resolves once the objects exist at this version; a failure is retried by the next call. */
  ready(): Promise<void> {
    this.#ready ??= this.#prepare().catch((err: unknown) => {
      this.#ready = undefined;
      throw backendError(err, "create the read/write lock and semaphore tables", this.#errors);
    });
    return this.#ready;
  }

  /**
   * Whether `err` is about a missing shared object: the mutex sessions must not take it for
   * their own tables being gone (which would drop the session, and every mutex on it).
   */
  isOurs(err: unknown): boolean {
    return isServerError(err) && GONE_CODES.has(err.code ?? "") && this.#names.some((n) => err.message.includes(n));
  }

  /** Whether `err` says an object is gone (dropped by an operator): the next ready() makes it again. */
  gone(err: unknown): boolean {
    if (!isServerError(err) || !GONE_CODES.has(err.code ?? "")) return false;
    this.#log.warn({ err: this.#errors.scrub(err.message) }, "pg shared lock tables are gone: they will be created again");
    this.#ready = undefined;
    return true;
  }

  /**
   * On a connection of its own (DDL is multi-statement; the sessions prepare every statement):
   * looks the function's version up, and only if it is missing or older creates every object in
   * one transaction that holds a fixed advisory lock, so hosts starting together do it one at a
   * time (CREATE OR REPLACE FUNCTION run concurrently fails with "tuple concurrently updated").
   * An operator may run `create` for a role that may not create objects.
   */
  async #prepare(): Promise<void> {
    const client = new pg.Client(this.#client);
    client.on("error", () => undefined);
    const timeout = this.#errors.commandTimeoutMs;
    try {
      await client.connect();
      const { text, values } = this.#sql.ready;
      const found = await client.query<[boolean]>({ text, values: [...values], rowMode: "array", query_timeout: timeout } as pg.QueryArrayConfig);
      if (found.rows[0]?.[0] === true) return;
      // No values: the simple query protocol, whose statements run as one transaction.
      await client.query({ text: this.#sql.create, query_timeout: timeout } as pg.QueryConfig);
    } finally {
      await client.end().catch(() => undefined);
    }
  }
}
