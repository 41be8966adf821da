// Removes what a test left on the shared Redis and PostgreSQL.
import pg from "pg";
import { Redis } from "ioredis";
import { holdersTableOf } from "../../plugins/backends/pg/mutex-sql.js";
import { dropQueueSql } from "../../plugins/backends/pg/queue-sql.js";

/** Deletes every Redis key under `prefix`. */
export async function dropRedisPrefix(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    let cursor = "0";
    do {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${prefix.replace(/[*?[\]\\]/g, "\\$&")}*`, "COUNT", 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== "0");
  } finally {
    redis.disconnect();
  }
}

/** Drops `table` (an identifier the test made up) and the pg backend's holders and queue tables beside it. */
export async function dropPgTable(url: string, table: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on("error", () => undefined);
  try {
    await client.connect();
    await client.query(`drop table if exists ${table}, ${holdersTableOf(table)}`);
    await client.query(dropQueueSql(table));
  } finally {
    await client.end().catch(() => undefined);
  }
}
