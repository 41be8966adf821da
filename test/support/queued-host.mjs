// A host process whose one waiter queues for a fair mutex until the test kills it (SIGKILL):
// node test/support/queued-host.mjs <pg|redis> <url> <table or key prefix> <key>. Built code
// (dist/), as a real host runs. Its poll interval is a minute, so its queue place would last
// three: only the liveness check can free the key sooner.
import path from "node:path";
import { fileURLToPath } from "node:url";

const [kind, url, where, key] = process.argv.slice(2);
const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../dist");
const { LockService } = await import(path.join(dist, "host/locking/service.js"));
const { pino } = await import("pino");
const log = pino({ level: "silent" });
let backend;
if (kind === "pg") {
  const { PgBackend } = await import(path.join(dist, "plugins/backends/pg/index.js"));
  const { pgDefaults } = await import(path.join(dist, "plugins/backends/pg/config.js"));
  backend = new PgBackend({ ...pgDefaults, url, table: where }, log);
} else {
  const { RedisBackend } = await import(path.join(dist, "plugins/backends/redis/index.js"));
  backend = new RedisBackend({ url, keyPrefix: where, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, log);
}
const locks = new LockService(backend, { node: "doomed", waiting: { pollIntervalMs: 60_000 } });
locks.acquire(key, { ttlMs: 10_000, waitMs: 600_000, fair: true }).catch(() => undefined);
setInterval(() => undefined, 60_000);
