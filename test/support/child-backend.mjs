// The backend of a child host process a test starts (queued-host.mjs, leader-host.mjs), from
// its command line: <pg|redis> <url> <table or key prefix>. Built code (dist/), as a real host
// runs, and silent: the test reads what the child says on stdout, not its logs.
import path from "node:path";
import { fileURLToPath } from "node:url";

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist");

/** The built LockService class. */
export const { LockService } = await import(path.join(dist, "host/locking/service.js"));

/** A pg backend on table `where`, or a Redis one under key prefix `where`. */
export async function childBackend(kind, url, where) {
  const { pino } = await import("pino");
  const log = pino({ level: "silent" });
  if (kind === "pg") {
    const { PgBackend } = await import(path.join(dist, "plugins/backends/pg/index.js"));
    const { pgDefaults } = await import(path.join(dist, "plugins/backends/pg/config.js"));
    return new PgBackend({ ...pgDefaults, url, table: where }, log);
  }
  const { RedisBackend } = await import(path.join(dist, "plugins/backends/redis/index.js"));
  return new RedisBackend({ url, keyPrefix: where, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, log);
}
