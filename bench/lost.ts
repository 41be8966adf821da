// Bench part "lost": how soon a holder hears that another host force-released its lock, from the
// operator's forceRelease call to the holder's lease signal aborting, per backend, with and
// without keepalive (the holder and the operator are two backend instances, as two hosts are,
// so Redis pub/sub and PostgreSQL NOTIFY carry the notice). The baseline is how a peer learns
// it: redis-semaphore's Mutex calls onLockLost at its next refresh (here every 200 ms; its
// default is lockTimeout / 10 = 1 s). Target: p99 ≤ 50 ms on Redis and PostgreSQL.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { Mutex } from "redis-semaphore";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { REDIS_URL, DATABASE_URL, benchLog, fmt } from "./harness.js";
import { median, quantile, table } from "./stats.js";

const LOSSES = Number(process.env.BENCH_LOSSES ?? 200);
const PEER_LOSSES = Number(process.env.BENCH_PEER_LOSSES ?? 30);
const PEER_REFRESH_MS = 200;
const TARGET_P99_MS = 50;

/** Samples (ms) from `operator.forceRelease` to the holder's signal aborting. */
async function told(holder: LockService, operator: LockService, keepalive: boolean, n: number): Promise<number[]> {
  const key = `lost-${randomUUID().slice(0, 8)}`;
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const lease = await holder.tryLock(key, { ttlMs: 30_000, keepalive });
    if (!lease) throw new Error("lost bench: the holder did not get the key");
    const aborted = new Promise<number>((resolve) => lease.signal.addEventListener("abort", () => resolve(performance.now()), { once: true }));
    const t0 = performance.now();
    if ((await operator.forceRelease({ name: lease.name })) === 0) throw new Error("lost bench: force-release found no lock");
    samples.push((await aborted) - t0);
  }
  return samples;
}

/** redis-semaphore: the key deleted under a held Mutex, until its onLockLost fires. */
async function peerTold(n: number): Promise<number[]> {
  const client = new Redis(REDIS_URL);
  const admin = new Redis(REDIS_URL);
  const key = `lockhost-bench-lost:${randomUUID().slice(0, 8)}`;
  const samples: number[] = [];
  try {
    for (let i = 0; i < n; i++) {
      let onLost: () => void = () => undefined;
      const lost = new Promise<number>((resolve) => (onLost = () => resolve(performance.now())));
      const mutex = new Mutex(client, key, { lockTimeout: 30_000, refreshInterval: PEER_REFRESH_MS, acquireAttemptsLimit: 1, onLockLost: onLost });
      await mutex.acquire();
      // A random phase of its refresh cycle, as a real force-release would land.
      await new Promise((r) => setTimeout(r, Math.random() * PEER_REFRESH_MS));
      const t0 = performance.now();
      await admin.del(`mutex:${key}`);
      samples.push((await lost) - t0);
      await mutex.release().catch(() => undefined);
    }
  } finally {
    client.disconnect();
    admin.disconnect();
  }
  return samples;
}

function targets(): { name: string; make: () => [LockBackend, LockBackend] }[] {
  const redis = { ...redisDefaults, url: REDIS_URL, keyPrefix: `lockhost-bench-lost:${randomUUID().slice(0, 8)}:` };
  const pgc = { ...pgDefaults, url: DATABASE_URL, table: `lockhost_bench_lost_${randomUUID().slice(0, 8)}` };
  return [
    {
      name: "memory",
      make: () => {
        const m = new MemoryBackend();
        return [m, m];
      },
    },
    { name: "redis", make: () => [new RedisBackend(redis, benchLog), new RedisBackend(redis, benchLog)] },
    { name: "pg", make: () => [new PgBackend(pgc, benchLog), new PgBackend(pgc, benchLog)] },
  ];
}

export async function lostBench(): Promise<void> {
  console.log(`\nlockhost bench: a force-released holder told, from forceRelease to its signal aborting (${LOSSES} losses; peer ${PEER_LOSSES}), ms\n`);
  const rows: string[][] = [];
  const worst: Record<string, number> = {};
  for (const target of targets()) {
    const [hb, ob] = target.make();
    const holder = new LockService(hb, { node: "bench-holder" });
    const operator = new LockService(ob, { node: "bench-operator" });
    try {
      await told(holder, operator, false, 10); // warm-up: connections, subscriptions
      for (const keepalive of [false, true]) {
        const s = await told(holder, operator, keepalive, LOSSES);
        worst[target.name] = Math.max(worst[target.name] ?? 0, quantile(s, 0.99));
        rows.push([`${target.name}: lockhost, keepalive ${keepalive ? "on" : "off"}`, fmt(median(s), 2), fmt(quantile(s, 0.99), 2)]);
      }
    } finally {
      await holder.close({ closeBackend: false });
      await operator.close({ closeBackend: false });
      await Promise.all([...new Set([hb, ob])].map((b) => b.close()));
    }
  }
  const peer = await peerTold(PEER_LOSSES);
  rows.push([`redis: redis-semaphore Mutex, onLockLost (refresh every ${PEER_REFRESH_MS} ms)`, fmt(median(peer), 2), fmt(quantile(peer, 0.99), 2)]);
  console.log(table(["path", "p50 ms", "p99 ms"], rows));
  for (const name of ["redis", "pg"]) {
    const p99 = worst[name]!;
    console.log(`${name}: told within ${fmt(p99, 2)} ms (p99; target ≤ ${TARGET_P99_MS} ms: ${p99 <= TARGET_P99_MS ? "met" : "not reached"})`);
  }
}
