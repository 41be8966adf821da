// Bench part "keepalive-scale": one host holding 10,000, 100,000 and 1,000,000 keepalive locks
// on Redis (a private server, so a million records never land on a shared one), each size in
// turn on a fresh server. The leases are taken, the renewals settle into their steady state,
// and one full renewal period is observed. Reported per size: renewals per tick, network round
// trips per tick (a tick's script calls are written together and answered in one wait), script
// calls per 1,000 renewals, a tick's time from send to its last reply, the host's CPU per renewal
// (process CPU over the period, less what the idle process used before the fill, / renewals:
// nothing else runs), the server's script time per renewal, and memory per lock (the host's
// heap after a full GC, and Redis's used_memory, over the locks held). Flat from 10,000 up is
// the target. BENCH_SCALE_LOCKS sets the sizes (comma-separated), BENCH_SCALE_TTL_MS the TTL.
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { Redis } from "ioredis";
import type { Lease } from "../host/locking/lease.js";
import { LockService } from "../host/locking/service.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { startRedisServer } from "../test/support/servers.js";
import { benchLog, fmt } from "./harness.js";
import { median, table } from "./stats.js";

const SIZES = (process.env.BENCH_SCALE_LOCKS ?? "10000,100000,1000000").split(",").map(Number);
/**
 * Long enough that a million locks' renewals (one per lock per half TTL) stay within what one
 * Redis serves beside the fill on a shared 2-core machine: at 20 s, 1,000,000 locks ask 100,000
 * renewals/s, ~0.6 s of server time per s, and with the fill the server fell behind (renewals
 * queued, leases lost). The per-renewal numbers do not depend on it.
 */
const TTL_MS = Number(process.env.BENCH_SCALE_TTL_MS ?? 60_000);
/** How long the idle process is watched before the fill. */
const IDLE_MS = 3_000;
/** Leases taken at once while filling. */
const FILL = 256;
/** A fill of a million locks keeps the server busy: a slow answer there is not what is measured. */
const COMMAND_TIMEOUT_MS = 10_000;

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A full GC (V8's gc, exposed for this process only), then the heap in use. */
function heapAfterGc(): number {
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as () => void;
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

async function usedMemory(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info("memory"))?.[1] ?? NaN);
}

/** The server's time in scripts so far (µs): every renewal is one script's share (a private server: nothing else runs). */
async function scriptUsec(redis: Redis): Promise<number> {
  let usec = 0;
  for (const m of (await redis.info("commandstats")).matchAll(/^cmdstat_(?:eval|evalsha):calls=\d+,usec=(\d+)/gm)) usec += Number(m[1]);
  return usec;
}

/** One size's row. */
async function measure(locksWanted: number): Promise<string[]> {
  const server = await startRedisServer();
  const admin = new Redis(server.url);
  const backend = new RedisBackend({ ...redisDefaults, url: server.url, keyPrefix: "scale:", commandTimeoutMs: COMMAND_TIMEOUT_MS }, benchLog);
  const locks = new LockService(backend, { node: "bench" });
  const tickMs: number[] = [];
  const renewMany = backend.renewMany.bind(backend);
  backend.renewMany = (reqs) => {
    const sentAt = performance.now();
    const replied = renewMany(reqs);
    replied.then(
      () => tickMs.push(performance.now() - sentAt),
      () => undefined,
    );
    return replied;
  };
  const leases: Lease[] = [];
  try {
    await locks.tryLock("warm", { ttlMs: TTL_MS }).then((l) => l && locks.release(l));
    // What the process costs doing nothing (its timers, the client's), taken off the renewals' CPU.
    const idle0 = process.cpuUsage();
    await sleep(IDLE_MS);
    const idle = process.cpuUsage(idle0);
    const idleUsPerMs = (idle.user + idle.system) / IDLE_MS;
    const heap0 = heapAfterGc();
    const redis0 = await usedMemory(admin);
    const filled0 = performance.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: FILL }, async () => {
        while (next < locksWanted) {
          const lease = await locks.tryLock(`k${next++}`, { ttlMs: TTL_MS, keepalive: true });
          if (!lease) throw new Error("keepalive-scale: a lock was not acquired");
          leases.push(lease);
        }
      }),
    );
    const fillMs = performance.now() - filled0;
    const heapPerLock = (heapAfterGc() - heap0) / locksWanted;
    const redisPerLock = ((await usedMemory(admin)) - redis0) / locksWanted;
    // Into the steady state (every lease renewed once: its first renewal is half a TTL after
    // it was taken), then one whole renewal period observed.
    await sleep(TTL_MS / 2 + 2_000);
    const s0 = locks.stats();
    const trips0 = backend.renewRoundTrips;
    const usec0 = await scriptUsec(admin);
    const cpu0 = process.cpuUsage();
    tickMs.length = 0;
    await sleep(TTL_MS / 2);
    const cpu = process.cpuUsage(cpu0);
    const usec = (await scriptUsec(admin)) - usec0;
    const s1 = locks.stats();
    const ticks = Math.max(1, s1.renewalTicks - s0.renewalTicks);
    const renewed = Math.max(1, s1.renewalsOk - s0.renewalsOk);
    const calls = backend.renewRoundTrips - trips0;
    return [
      String(locksWanted),
      fmt(renewed / ticks, 0),
      fmt((s1.renewalBatches - s0.renewalBatches) / ticks, 2),
      fmt((calls * 1_000) / renewed, 2),
      `${fmt(median(tickMs), 1)} / ${fmt(Math.max(...tickMs), 1)}`,
      fmt((cpu.user + cpu.system - idleUsPerMs * (TTL_MS / 2)) / renewed, 2),
      fmt(usec / renewed, 2),
      fmt(heapPerLock, 0),
      fmt(redisPerLock, 0),
      fmt((locksWanted / fillMs) * 1000, 0),
      String(s1.lost),
    ];
  } finally {
    await locks.close();
    admin.disconnect();
    await server.stop();
  }
}

export async function keepaliveScaleBench(): Promise<void> {
  console.log(
    `\nlockhost bench: keepalive locks on one host on Redis, 10k to 1M (TTL ${TTL_MS} ms, renewed at half; half a TTL observed in the steady state; ` +
      "a private Redis per size)\n",
  );
  const rows: string[][] = [];
  for (const size of SIZES) {
    // A size that fails is shown failed, with why; the others still are measured.
    rows.push(
      await measure(size).catch((err: unknown) => [String(size), `failed: ${err instanceof Error ? err.message : String(err)}`, ...Array<string>(9).fill("-")]),
    );
  }
  console.log(
    table(
      [
        "locks",
        "renewals/tick",
        "round trips/tick",
        "script calls/1k renewals",
        "tick ms p50 / max",
        "CPU µs/renewal",
        "redis µs/renewal",
        "heap B/lock",
        "redis B/lock",
        "acquired/s",
        "lost",
      ],
      rows,
    ),
  );
}
