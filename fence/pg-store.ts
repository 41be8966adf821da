// The fence store for a resource that already has PostgreSQL. It takes any pool with a
// pg-shaped query method, so this layer stays free of the pg package (and of its version).
import type { FenceAcceptance, FenceStore } from "./store.js";

/** The part of a `pg` Pool or Client the store uses: `pool.query(text, values)`. */
export interface PgQueryable {
  query(text: string, values: unknown[]): Promise<{ rows: ReadonlyArray<Record<string, unknown>>; rowCount: number | null }>;
}

/** Options of {@link pgFenceStore}. */
export interface PgFenceStoreOptions {
  /**
   * The table (`name` or `schema.name`, lower case letters, digits and `_`), default
   * `lockhost_accepted_fences`. Not the lock backend's own table: this one is the resource's.
   */
  readonly table?: string;
}

/** A {@link FenceStore} in a PostgreSQL table, plus the statement that creates the table. */
export interface PgFenceStore extends FenceStore {
  /** The table's name as used in SQL. */
  readonly table: string;
  /** Creates the table if it does not exist (the DDL is {@link fenceTableDdl}). */
  createTable(): Promise<void>;
}

const DEFAULT_TABLE = "lockhost_accepted_fences";

// Only names that need no quoting, so the name in an error, in psql and here is the same.
const TABLE_NAME = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

/**
 * The DDL of the fence table. `numeric(20,0)` rather than `bigint` so every fence the header
 * parser accepts (up to 20 digits) is stored and compared exactly; lockhost's own fences stay
 * within i64.
 */
export function fenceTableDdl(table: string = DEFAULT_TABLE): string {
  return `CREATE TABLE IF NOT EXISTS ${checkedTable(table)} (
  lock  text PRIMARY KEY,
  fence numeric(20,0) NOT NULL CHECK (fence > 0)
)`;
}

/**
 * A {@link FenceStore} in PostgreSQL: one conditional upsert per accept, so the compare and
 * the write are one atomic statement, across every process sharing the table. Call
 * `createTable()` once (or run {@link fenceTableDdl} in a migration).
 *
 * To protect a write to the same database, better still put the fence in the write itself
 * (see the package's documentation): then the check and the write cannot come apart.
 */
export function pgFenceStore(pool: PgQueryable, options: PgFenceStoreOptions = {}): PgFenceStore {
  const table = checkedTable(options.table ?? DEFAULT_TABLE);
  // Results come back as text: a pool may have a type parser that turns numeric into a float.
  const acceptSql = `INSERT INTO ${table} (lock, fence) VALUES ($1, $2::numeric)
ON CONFLICT (lock) DO UPDATE SET fence = EXCLUDED.fence WHERE ${table}.fence < EXCLUDED.fence
RETURNING fence::text AS fence`;
  const lastSql = `SELECT fence::text AS fence FROM ${table} WHERE lock = $1`;
  return {
    table,
    async createTable(): Promise<void> {
      await pool.query(fenceTableDdl(table), []);
    },
    async accept(lock: string, fence: bigint): Promise<FenceAcceptance> {
      const accepted = await pool.query(acceptSql, [lock, fence.toString()]);
      if (accepted.rows.length > 0) return { accepted: true, last: fenceOfRow(accepted.rows[0]) };
      // Refused: the row holds a fence at or above ours. Fences only rise, so whatever this
      // later read sees is still at or above ours.
      const current = await pool.query(lastSql, [lock]);
      return { accepted: false, last: fenceOfRow(current.rows[0]) };
    },
  };
}

function checkedTable(table: string): string {
  if (!TABLE_NAME.test(table)) {
    throw new TypeError(`fence table ${JSON.stringify(table)} must be "name" or "schema.name" in lower case letters, digits and _`);
  }
  return table;
}

function fenceOfRow(row: Record<string, unknown> | undefined): bigint | undefined {
  const value = row?.fence;
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw new TypeError(`the fence table returned a fence of type ${typeof value}, expected text`);
  return BigInt(value);
}
