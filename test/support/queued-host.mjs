// A host process whose one waiter queues for a fair mutex until the test kills it (SIGKILL):
// node test/support/queued-host.mjs <pg|redis> <url> <table or key prefix> <key>. Built code
// (dist/), as a real host runs. Its poll interval is a minute, so its queue place would last
// three: only the liveness check can free the key sooner.
import { childBackend, LockService } from "./child-backend.mjs";

const [kind, url, where, key] = process.argv.slice(2);
const backend = await childBackend(kind, url, where);
const locks = new LockService(backend, { node: "doomed", waiting: { pollIntervalMs: 60_000 } });
locks.acquire(key, { ttlMs: 10_000, waitMs: 600_000, fair: true }).catch(() => undefined);
setInterval(() => undefined, 60_000);
