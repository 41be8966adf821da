// The backends with the queue kinds (read/write locks, semaphores, fair mutexes), for the suites that run on each of them.
import type { LockBackend } from "../../kit/backend.js";
import { LockService } from "../../host/locking/service.js";
import { MemoryBackend } from "../../plugins/backends/memory/index.js";
import { PgBackend } from "../../plugins/backends/pg/index.js";
import { pgDefaults } from "../../plugins/backends/pg/config.js";
import { RedisBackend } from "../../plugins/backends/redis/index.js";
import { databaseUrl, redisUrl } from "./servers.js";
import { silent } from "./log.js";

/** One backend to run a queue-kinds suite on. */
export interface QueueBackendTarget {
  readonly name: string;
  /** Whether two instances share locks (then each host gets its own instance, as in production). */
  readonly distributed: boolean;
  create(): Promise<LockBackend> | LockBackend;
}

/** memory, and the network backends whose queue steps have landed. */
export function queueBackends(): QueueBackendTarget[] {
  return [
    { name: "memory", distributed: false, create: () => new MemoryBackend() },
    { name: "pg", distributed: true, create: () => new PgBackend({ ...pgDefaults, url: databaseUrl(), table: PG_TABLE }, silent) },
    {
      name: "redis",
      distributed: true,
      create: () => new RedisBackend({ url: redisUrl(), keyPrefix: REDIS_PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent),
    },
  ];
}

/**
 * The pg backend's table for these suites (its queue objects are named after it; test/support/cleanup
 * drops them). One per test file: four files share this module, each drops the table in its
 * afterAll, and vitest runs files side by side, so a fixed name let one file drop the queue tables
 * under another's waiters (seen as a fair waiter that never woke, on a loaded machine).
 */
export const PG_TABLE = `lockhost_test_queue_${Math.random().toString(36).slice(2, 10)}`;

/** The redis backend's key prefix for these suites, one per run (the suites drop it in afterAll). */
export const REDIS_PREFIX = `lockhost-test-shared-svc:${Math.random().toString(36).slice(2, 10)}:`;

/**
 * Services standing for hosts on `target`: each on a backend of its own where the backend is
 * distributed (as in production), else all on one. close() closes every service and backend made.
 */
export function hostsOn(target: QueueBackendTarget): { hosts(count?: number, pollIntervalMs?: number): Promise<LockService[]>; close(): Promise<void> } {
  const services: LockService[] = [];
  const backends: LockBackend[] = [];
  return {
    async hosts(count = 2, pollIntervalMs = 60_000) {
      const shared = target.distributed ? undefined : await target.create();
      return Promise.all(
        Array.from({ length: count }, async (_, i) => {
          const backend = shared ?? (await target.create());
          if (!backends.includes(backend)) backends.push(backend);
          const s = new LockService(backend, { node: `node-${i}`, waiting: { pollIntervalMs } });
          services.push(s);
          return s;
        }),
      );
    },
    async close() {
      await Promise.all(services.splice(0).map((s) => s.close({ closeBackend: false })));
      await Promise.all(backends.splice(0).map((b) => b.close()));
    },
  };
}
