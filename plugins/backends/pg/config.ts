// `[locking.pg]`: every field declared once; the host's config reader, the defaults and the
// README's config reference come from this schema.
import { completeDefaultsOf, field, table } from "../../../kit/index.js";

/** `[locking.pg]` */
export interface PgConfig {
  /** May carry a password; never logged. */
  readonly url: string;
  /** Dedicated session connections that hold the advisory locks (many locks each). */
  readonly sessions: number;
  /**
   * The fence table, created on first use (`name` or `schema.name`), with its unlogged
   * holders table `<name>_holders` beside it, and, once read/write locks or semaphores are used, the `<name>_shared_*` tables and the `<name>_shared_acquire` function.
   */
  readonly table: string;
  /** Longest a lock call waits on PostgreSQL (connecting included) before BACKEND_UNAVAILABLE. */
  readonly commandTimeoutMs: number;
}

/** An unquoted PostgreSQL identifier, optionally schema-qualified; interpolated into SQL, so kept strict. */
const PG_TABLE = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

/** The schema of `[locking.pg]`. */
export const pgConfigSchema = table<PgConfig>({
  doc: "the PostgreSQL backend (node-postgres)",
  fields: {
    url: field.url({
      schemes: ["postgres", "postgresql"],
      default: "postgres://postgres@127.0.0.1:5432/test",
      doc: "postgres:// or postgresql://; a password in it is never logged",
    }),
    sessions: field.int({ default: 4, min: 1, max: 64, doc: "session connections that hold the advisory locks" }),
    table: field.string({
      default: "lockhost_locks",
      doc: 'fence table ("name" or "schema.name") + <table>_holders; created on first use (read/write locks and semaphores add <table>_shared_* tables and a function on their first use)',
      check: (v) => (PG_TABLE.test(v) ? undefined : `must be a lowercase SQL identifier, optionally schema-qualified (${PG_TABLE})`),
    }),
    commandTimeoutMs: field.int({
      default: 2000,
      min: 1,
      max: 600_000,
      unit: "ms",
      doc: "longest a lock call waits on PostgreSQL before BACKEND_UNAVAILABLE",
    }),
  },
});

/** `[locking.pg]` as a config that leaves it out gets it: every field at its default. */
export const pgDefaults: Readonly<PgConfig> = completeDefaultsOf(pgConfigSchema);

declare module "../../../kit/descriptor.js" {
  interface BackendConfigMap {
    pg: PgConfig;
  }
}
