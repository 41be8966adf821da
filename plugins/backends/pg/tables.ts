// The pg backend's two tables (sql.ts): made sure of once per backend, on the first session
// connection, and again after an operator dropped them.
import type pg from "pg";
import type { Logger } from "pino";
import { LockhostError } from "../../../kit/index.js";
import { GRANTS_DOC, INSUFFICIENT_PRIVILEGE, isServerError, type ErrorContext } from "./errors.js";
import type { Statements } from "./sql.js";

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
   * operator may create them, DDL in sql.ts, for a role that may not create tables); missing
   * ones are created, and several hosts may race to do so. A holders table of an earlier
   * version gets the columns it lacks (ALTER TABLE: needs the table's owner).
   */
  async prepare(client: pg.Client, timeoutMs: number): Promise<void> {
    if (this.#ready) return;
    const until = performance.now() + timeoutMs;
    const left = (): number => Math.max(1, until - performance.now());
    const { text, values } = this.#sql.tablesExist;
    const exist = await client.query<[boolean, boolean]>({ text, values: [...values], rowMode: "array", query_timeout: left() } as pg.QueryArrayConfig);
    const [tables, columns] = exist.rows[0] ?? [];
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
