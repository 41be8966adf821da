// Bench part "kinds": read/write locks and semaphores (issue 14), host API, one run per backend.
// Redis: read pairs, write pairs and semaphore permit pairs through the LockService against
// redis-semaphore's Semaphore (the peer with a semaphore; it has no read/write lock) and its
// Mutex, one at a time and 16 at once, on the same server. PostgreSQL: the same lockhost rows
// against a raw shared advisory lock + unlock on one connection (what a reader costs with no
// TTL, queue or status). Every lockhost lease here is taken without keepalive, as the peers'
// (refreshInterval 0).
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { Mutex, Semaphore } from "redis-semaphore";
import { LockService } from "../host/locking/service.js";
import { permitSpec, READ, WRITE } from "../kit/kinds.js";
import type { Lease } from "../host/locking/lease.js";
import { redactUrlSecrets } from "../kit/redact.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { holdersTableOf } from "../plugins/backends/pg/mutex-sql.js";
import { dropQueueSql } from "../plugins/backends/pg/queue-sql.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { REDIS_URL, DATABASE_URL, benchLog, concurrent, fmt, interleaved, ROUNDS, sequential, TTL_MS } from "./harness.js";
import { table, type Round } from "./stats.js";

const OPS = Number(process.env.BENCH_KINDS_OPS ?? 1_000);
const CONCURRENCY = 16;
const PERMITS = 4;

/** The lockhost pairs measured on each backend. */
function lockhostPairs(locks: LockService): Record<"read" | "write" | "permit" | "mutex", (key: string) => Promise<void>> {
  const opts = { ttlMs: TTL_MS, keepalive: false } as const;
  // Each kind's options made once, as a caller on a hot path would.
  const read = { ...opts, ...READ };
  const write = { ...opts, ...WRITE };
  const permit = { ...opts, ...permitSpec(PERMITS) };
  const pair =
    (take: (key: string) => Promise<Lease | null>) =>
    async (key: string): Promise<void> => {
      const lease = await take(key);
      if (!lease) throw new Error(`kinds bench: ${key} not acquired`);
      await locks.release(lease);
    };
  return {
    read: pair((k) => locks.try(k, read)),
    write: pair((k) => locks.try(k, write)),
    permit: pair((k) => locks.try(k, permit)),
    mutex: pair((k) => locks.tryLock(k, opts)),
  };
}

const line = (name: string, round: Round, base: Round, by: "p50" | "throughput"): string[] => [
  name,
  fmt(round.opsPerSec, 0),
  fmt(round.p50Us),
  fmt(round.p99Us),
  fmt(by === "p50" ? round.p50Us / base.p50Us : base.opsPerSec / round.opsPerSec, 2),
];

async function redisPart(): Promise<void> {
  const prefix = `lockhost-bench-kinds:${randomUUID().slice(0, 8)}:`;
  const client = new Redis(REDIS_URL);
  const locks = new LockService(new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix: prefix }, benchLog), { node: "bench" });
  const mine = lockhostPairs(locks);
  const semaphorePair = async (key: string): Promise<void> => {
    const s = new Semaphore(client, key, PERMITS, { lockTimeout: TTL_MS, acquireAttemptsLimit: 1, refreshInterval: 0 });
    await s.acquire();
    await s.release();
  };
  const mutexPair = async (key: string): Promise<void> => {
    const m = new Mutex(client, key, { lockTimeout: TTL_MS, acquireAttemptsLimit: 1, refreshInterval: 0 });
    await m.acquire();
    await m.release();
  };
  try {
    // At 16 every loop uses the same key for read and permit pairs (readers share, 16 callers
    // on 4 permits would contend: each loop gets its own semaphore), its own key for the rest.
    const r = await interleaved({
      read: () => sequential(OPS, () => mine.read("r")),
      write: () => sequential(OPS, () => mine.write("w")),
      permit: () => sequential(OPS, () => mine.permit("p")),
      mutex: () => sequential(OPS, () => mine.mutex("m")),
      peerSem: () => sequential(OPS, () => semaphorePair(`${prefix}peer-sem`)),
      peerMutex: () => sequential(OPS, () => mutexPair(`${prefix}peer-mutex`)),
      read16: () => concurrent(CONCURRENCY, OPS, () => mine.read("r16")),
      write16: () => concurrent(CONCURRENCY, OPS, (w) => mine.write(`w16-${w}`)),
      permit16: () => concurrent(CONCURRENCY, OPS, (w) => mine.permit(`p16-${w}`)),
      peerSem16: () => concurrent(CONCURRENCY, OPS, (w) => semaphorePair(`${prefix}peer-sem16-${w}`)),
      peerMutex16: () => concurrent(CONCURRENCY, OPS, (w) => mutexPair(`${prefix}peer-mutex16-${w}`)),
    });
    const g = r as Record<string, Round>;
    console.log(
      `\nlockhost bench: read/write locks and semaphores on redis at ${redactUrlSecrets(REDIS_URL)} (${ROUNDS} rounds x ${OPS} pairs per loop, medians)`,
    );
    console.log(`(ratio: p50 / redis-semaphore Semaphore's one at a time; its throughput / this row's at ${CONCURRENCY}: below 1.00 lockhost is faster)\n`);
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "x peer"],
        [
          line("redis-semaphore Semaphore (4 permits), 1 at a time", g.peerSem!, g.peerSem!, "p50"),
          line("redis-semaphore Mutex, 1 at a time", g.peerMutex!, g.peerSem!, "p50"),
          line("lockhost try permit (4 permits) + release", g.permit!, g.peerSem!, "p50"),
          line("lockhost try read + release", g.read!, g.peerSem!, "p50"),
          line("lockhost try write + release", g.write!, g.peerSem!, "p50"),
          line("lockhost tryLock + release (mutex)", g.mutex!, g.peerSem!, "p50"),
          line(`redis-semaphore Semaphore, ${CONCURRENCY} at once`, g.peerSem16!, g.peerSem16!, "throughput"),
          line(`redis-semaphore Mutex, ${CONCURRENCY} at once`, g.peerMutex16!, g.peerSem16!, "throughput"),
          line(`lockhost try permit, ${CONCURRENCY} at once`, g.permit16!, g.peerSem16!, "throughput"),
          line(`lockhost try read, ${CONCURRENCY} readers of one key`, g.read16!, g.peerSem16!, "throughput"),
          line(`lockhost try write, ${CONCURRENCY} at once`, g.write16!, g.peerSem16!, "throughput"),
        ],
      ),
    );
    console.log(
      `\nlockhost permit pairs / redis-semaphore Semaphore throughput: ${fmt(g.permit!.opsPerSec / g.peerSem!.opsPerSec, 2)}x one at a time,` +
        ` ${fmt(g.permit16!.opsPerSec / g.peerSem16!.opsPerSec, 2)}x at ${CONCURRENCY}`,
    );
  } finally {
    await locks.close();
    const keys = await client.keys(`${prefix}*`);
    if (keys.length > 0) await client.del(...keys);
    client.disconnect();
  }
}

async function pgPart(): Promise<void> {
  const table_ = `lockhost_bench_${randomUUID().slice(0, 8)}`;
  const locks = new LockService(new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: table_ }, benchLog), { node: "bench" });
  const raw = new pg.Client({ connectionString: DATABASE_URL });
  await raw.connect();
  const mine = lockhostPairs(locks);
  const rawShared = async (): Promise<void> => {
    const got = await raw.query({ name: "try-shared", text: "select pg_try_advisory_lock_shared($1) as ok", values: ["4343"] });
    if (got.rows[0].ok !== true) throw new Error("raw: not acquired");
    await raw.query({ name: "unlock-shared", text: "select pg_advisory_unlock_shared($1) as ok", values: ["4343"] });
  };
  try {
    const g = (await interleaved({
      raw: () => sequential(OPS, rawShared),
      read: () => sequential(OPS, () => mine.read("r")),
      write: () => sequential(OPS, () => mine.write("w")),
      permit: () => sequential(OPS, () => mine.permit("p")),
      mutex: () => sequential(OPS, () => mine.mutex("m")),
    })) as Record<string, Round>;
    console.log(
      `\nlockhost bench: read/write locks and semaphores on pg at ${redactUrlSecrets(DATABASE_URL)} (${ROUNDS} rounds x ${OPS} pairs, medians; ` +
        `ratio: p50 / raw)\n`,
    );
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "x raw"],
        [
          line("raw pg_try_advisory_lock_shared + unlock, one connection", g.raw!, g.raw!, "p50"),
          line("lockhost try read + release", g.read!, g.raw!, "p50"),
          line("lockhost try write + release", g.write!, g.raw!, "p50"),
          line("lockhost try permit (4 permits) + release", g.permit!, g.raw!, "p50"),
          line("lockhost tryLock + release (mutex)", g.mutex!, g.raw!, "p50"),
        ],
      ),
    );
  } finally {
    await locks.close();
    await raw.query(`drop table if exists ${table_}, ${holdersTableOf(table_)}`).catch(() => undefined);
    await raw.query(dropQueueSql(table_)).catch(() => undefined);
    await raw.end();
  }
}

/** Bench part "kinds" (see the top of this file). */
export async function kindsBench(): Promise<void> {
  await redisPart();
  await pgPart();
}
