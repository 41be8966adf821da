// Bench part "delegation" (lock delegation, host/locking/delegation.ts): one hot key.
// - One host, 16 callers taking turns (acquire with a wait, release): handoffs/s of the LockService
//   with delegation, without it (the same backend, the same run), and redis-semaphore's Mutex.
// - Two hosts × 8 callers on one key: delegated vs not.
// - A waiter of another host while 8 callers of one host keep the key busy, each holding it
//   HOLD_MS: how long the waiter waits beyond the hold that was current when it asked (target
//   ≤ one round trip + min_hold_ms), beside the median round trip (PING) of the same run.
// Every row runs once per round, rounds interleaved; medians. etcd runs with `fence_scale` 1024
// (its steps need scaled fences); on a backend without the steps (kit/delegation.ts) the delegated
// rows would be the plain path: delegation is silently off there.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import pg from "pg";
import { Mutex } from "redis-semaphore";
import type { LockBackend } from "../kit/backend.js";
import { LockService, type LockServiceOptions } from "../host/locking/service.js";
import { EtcdBackend, etcdDefaults, type EtcdConfig } from "../plugins/backends/etcd/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { holdersTableOf } from "../plugins/backends/pg/mutex-sql.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { startEtcdCluster, type EtcdCluster } from "../test/support/etcd-servers.js";
import { DATABASE_URL, REDIS_URL, ROUNDS, TTL_MS, benchLog, fmt } from "./harness.js";
import { median, table } from "./stats.js";

const CALLERS = 16;
const WAIT_MS = 120_000;
/** Turns per caller: the delegated rows are fast, so they take more turns for a round worth timing. */
const TURNS = Number(process.env.BENCH_DELEGATION_TURNS ?? 40);
const DELEGATED_TURNS = 10 * TURNS;
const SEMAPHORE_TURNS = Math.max(2, Math.round(TURNS / 4));
/** How long each local holder holds the key in the remote-waiter row, ms. */
const HOLD_MS = 5;

const DELEGATE: LockServiceOptions["delegation"] = { enabled: true };

type Turn = (key: string) => Promise<void>;

function serviceTurn(locks: LockService): Turn {
  return async (key) => {
    const lease = await locks.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS });
    await locks.release(lease);
  };
}

/** `callers` callers per turn function (one per host), `turns` each, on one fresh key: handoffs/s. */
async function contend(turns: readonly Turn[], callers: number, rounds: number, key: string): Promise<number> {
  const started = performance.now();
  await Promise.all(
    turns.flatMap((turn) =>
      Array.from({ length: callers }, async () => {
        for (let i = 0; i < rounds; i++) await turn(key);
      }),
    ),
  );
  return (turns.length * callers * rounds * 1000) / (performance.now() - started);
}

/** Waits of the remote waiter per round (the row's value is their median). */
const REMOTE_WAITS = 9;

/**
 * 8 callers of `busy` keep `key` held, HOLD_MS each time; while they are under way, a caller of
 * `other` asks for it REMOTE_WAITS times, each once `busy` hands it on again. The median of what it
 * waited beyond the hold current when it asked, in ms.
 */
async function remoteWait(busy: LockService, other: LockService, key: string): Promise<number> {
  let stop = false;
  const released: number[] = [];
  const loops = Array.from({ length: 8 }, async () => {
    while (!stop) {
      const lease = await busy.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS });
      await new Promise((r) => setTimeout(r, HOLD_MS));
      released.push(performance.now());
      await busy.release(lease);
    }
  });
  const beyond: number[] = [];
  try {
    for (let i = 0; i < REMOTE_WAITS; i++) {
      // Asked only once `busy` has the key back and hands it on again (it stands back a little after giving it up).
      released.length = 0;
      while (released.length < 2) await new Promise((r) => setTimeout(r, 5));
      released.length = 0;
      const asked = performance.now();
      const lease = await other.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS });
      const got = performance.now();
      await other.release(lease);
      // The hold current when it asked ended at the first release after `asked`.
      beyond.push(got - (released.find((t) => t >= asked) ?? got));
    }
  } finally {
    stop = true;
    await Promise.all(loops);
  }
  return median(beyond);
}

/**
 * The floor under the remote waiter's wait: `holder` holds `key`, a caller of `waiter` waits for it
 * (subscribed, asleep), and `holder` releases it: from the release call to the waiter holding the
 * key, ms (median of REMOTE_WAITS). Any design that releases, then lets the other host take the
 * key, pays at least this beyond the last hold.
 */
async function releaseToRemote(holder: LockService, waiter: LockService, key: string): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < REMOTE_WAITS; i++) {
    const lease = await holder.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS });
    let got = 0;
    const waiting = waiter.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS }).then((l) => ((got = performance.now()), l));
    await new Promise((r) => setTimeout(r, 20));
    const released = performance.now();
    await holder.release(lease);
    await waiter.release(await waiting);
    times.push(got - released);
  }
  return median(times);
}

/** The median round trip of a PING, ms. */
async function pingMs(redis: Redis): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 200; i++) {
    const t = performance.now();
    await redis.ping();
    times.push(performance.now() - t);
  }
  return median(times);
}

interface Row {
  readonly name: string;
  readonly run: (key: string) => Promise<number>;
  readonly unit: "handoffs/s" | "ms";
}

export async function delegationBench(): Promise<void> {
  const prefix = `lockhost-bench-delegation:${randomUUID().slice(0, 8)}:`;
  const pgTable = `lockhost_bench_delegation_${randomUUID().slice(0, 8)}`;
  const admin = new Redis(REDIS_URL);
  const peer = new Redis(REDIS_URL);
  const services: LockService[] = [];
  const service = (backend: LockBackend, node: string, delegation?: LockServiceOptions["delegation"]): LockService => {
    const s = new LockService(backend, { node, ...(delegation && { delegation }) });
    services.push(s);
    return s;
  };
  const redis = (node: string, delegation?: LockServiceOptions["delegation"]): LockService =>
    service(new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix: prefix }, benchLog), node, delegation);
  const postgres = (node: string, delegation?: LockServiceOptions["delegation"]): LockService =>
    service(new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: pgTable }, benchLog), node, delegation);
  let cluster: EtcdCluster | undefined;
  const endpoints = process.env.ETCD_ENDPOINTS?.split(",") ?? (cluster = await startEtcdCluster(1)).endpoints;
  // Scaled fences (plain and delegated hosts alike: the scale belongs to the key prefix), so etcd has the steps.
  const etcdConfig: EtcdConfig = { ...etcdDefaults, endpoints, keyPrefix: `lockhost-bench-delegation/${randomUUID().slice(0, 8)}/`, fenceScale: 1_024 };
  const etcd = (node: string, delegation?: LockServiceOptions["delegation"]): LockService => service(new EtcdBackend(etcdConfig, benchLog), node, delegation);
  const redisA = redis("a", DELEGATE);
  const redisB = redis("b", DELEGATE);
  const redisPlainA = redis("a");
  const redisPlainB = redis("b");
  const pgA = postgres("a", DELEGATE);
  const pgB = postgres("b", DELEGATE);
  const pgPlainA = postgres("a");
  const pgPlainB = postgres("b");
  const etcdA = etcd("a", DELEGATE);
  const etcdB = etcd("b", DELEGATE);
  const etcdPlainA = etcd("a");
  const etcdPlainB = etcd("b");
  const rows: Row[] = [
    { name: "redis, 1 host x 16: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(redisA)], CALLERS, DELEGATED_TURNS, k) },
    { name: "redis, 1 host x 16: not delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(redisPlainA)], CALLERS, TURNS, k) },
    {
      name: "redis, 1 host x 16: redis-semaphore Mutex",
      unit: "handoffs/s",
      run: (k) =>
        contend(
          [
            async (key) => {
              const mutex = new Mutex(peer, `${prefix}${key}`, { lockTimeout: TTL_MS, acquireTimeout: WAIT_MS });
              await mutex.acquire();
              await mutex.release();
            },
          ],
          CALLERS,
          SEMAPHORE_TURNS,
          k,
        ),
    },
    { name: "redis, 2 hosts x 8: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(redisA), serviceTurn(redisB)], 8, 4 * TURNS, k) },
    {
      name: "redis, 2 hosts x 8: not delegated",
      unit: "handoffs/s",
      run: (k) => contend([serviceTurn(redisPlainA), serviceTurn(redisPlainB)], 8, TURNS, k),
    },
    { name: `redis, remote waiter beyond the current ${HOLD_MS} ms hold: delegated`, unit: "ms", run: (k) => remoteWait(redisA, redisB, k) },
    { name: `redis, remote waiter beyond the current ${HOLD_MS} ms hold: not delegated`, unit: "ms", run: (k) => remoteWait(redisPlainA, redisPlainB, k) },
    { name: "redis, floor: a release to the waiter of another host", unit: "ms", run: (k) => releaseToRemote(redisA, redisB, k) },
    { name: "redis, round trip (PING)", unit: "ms", run: () => pingMs(admin) },
    { name: "pg, 1 host x 16: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(pgA)], CALLERS, DELEGATED_TURNS, k) },
    { name: "pg, 1 host x 16: not delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(pgPlainA)], CALLERS, TURNS, k) },
    { name: "pg, 2 hosts x 8: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(pgA), serviceTurn(pgB)], 8, 4 * TURNS, k) },
    { name: "pg, 2 hosts x 8: not delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(pgPlainA), serviceTurn(pgPlainB)], 8, TURNS, k) },
    { name: `pg, remote waiter beyond the current ${HOLD_MS} ms hold: delegated`, unit: "ms", run: (k) => remoteWait(pgA, pgB, k) },
    { name: `pg, remote waiter beyond the current ${HOLD_MS} ms hold: not delegated`, unit: "ms", run: (k) => remoteWait(pgPlainA, pgPlainB, k) },
    { name: "pg, floor: a release to the waiter of another host", unit: "ms", run: (k) => releaseToRemote(pgA, pgB, k) },
    { name: "etcd, 1 host x 16: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(etcdA)], CALLERS, DELEGATED_TURNS, k) },
    { name: "etcd, 1 host x 16: not delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(etcdPlainA)], CALLERS, TURNS, k) },
    { name: "etcd, 2 hosts x 8: delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(etcdA), serviceTurn(etcdB)], 8, 4 * TURNS, k) },
    { name: "etcd, 2 hosts x 8: not delegated", unit: "handoffs/s", run: (k) => contend([serviceTurn(etcdPlainA), serviceTurn(etcdPlainB)], 8, TURNS, k) },
    { name: `etcd, remote waiter beyond the current ${HOLD_MS} ms hold: delegated`, unit: "ms", run: (k) => remoteWait(etcdA, etcdB, k) },
    { name: `etcd, remote waiter beyond the current ${HOLD_MS} ms hold: not delegated`, unit: "ms", run: (k) => remoteWait(etcdPlainA, etcdPlainB, k) },
    { name: "etcd, floor: a release to the waiter of another host", unit: "ms", run: (k) => releaseToRemote(etcdA, etcdB, k) },
  ];
  const results = new Map<string, number[]>(rows.map((r) => [r.name, []]));
  try {
    for (const r of rows) await r.run(`warm-${r.name.length}-${randomUUID().slice(0, 4)}`);
    for (let round = 1; round <= ROUNDS; round++) {
      for (const r of rows) results.get(r.name)!.push(await r.run(`k${round}-${randomUUID().slice(0, 6)}`));
    }
    const value = (name: string): number => median(results.get(name)!);
    const semaphore = value("redis, 1 host x 16: redis-semaphore Mutex");
    const ratioTo = (r: Row): string => {
      if (r.unit !== "handoffs/s") return "";
      const plain = r.name.replace(": delegated", ": not delegated");
      return r.name.endsWith(": delegated") && results.has(plain) ? fmt(value(r.name) / value(plain), 2) : "";
    };
    console.log(`\nlockhost bench: delegation, one hot key (${ROUNDS} rounds, interleaved, medians)\n`);
    console.log(
      table(
        ["path", "handoffs/s", "ms", "x not delegated", "x redis-semaphore"],
        rows.map((r) => [
          r.name,
          r.unit === "handoffs/s" ? fmt(value(r.name), 0) : "",
          r.unit === "ms" ? fmt(value(r.name), 3) : "",
          ratioTo(r),
          r.unit === "handoffs/s" && r.name.startsWith("redis, 1 host") ? fmt(value(r.name) / semaphore, 2) : "",
        ]),
      ),
    );
    const local = value("redis, 1 host x 16: delegated") / semaphore;
    console.log(`\nredis, 1 host x 16, delegated / redis-semaphore: ${fmt(local, 1)}x (target ≥ 10x: ${local >= 10 ? "met" : "not reached"}; moonshot 20x)`);
  } finally {
    await Promise.all(services.map((s) => s.close()));
    await cluster?.stop();
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
    peer.disconnect();
    const db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    await db.query(`drop table if exists ${pgTable}, ${holdersTableOf(pgTable)}`).catch(() => undefined);
    await db.end();
  }
}
