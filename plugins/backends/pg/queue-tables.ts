// The shared objects (queue-sql.ts): made sure of on the first read/write-lock or semaphore
// step of a backend, not at connection time, so a host that only takes mutexes needs neither
// them nor the right to create them.
import pg from "pg";
import type { Logger } from "pino";
import { backendError, isServerError, type ErrorContext } from "./errors.js";
import type { QueueObjects, QueueStatements } from "./queue-sql.js";

/** SQLSTATEs of a shared object gone under us: undefined table or function. */
const GONE_CODES = new Set(["42P01", "42883"]);

/** Whether the shared objects are known to be there, and how they are made so. */
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
