// Bench part "service": what the LockService adds over its backend's own steps (issue 25).
// A try+release pair through the LockService (default options: keepalive on, a minted owner)
// against the same pair as bare KindSteps calls on the same backend instance (acquire + release
// with a fixed owner: no validation, lease, books or renewal), one at a time and with 16 loops
// at once, in interleaved rounds. Memory: the overhead in µs per pair, (service - bare) taken
// in each round and the median reported (target ≤ 1 µs warm); Redis: the service's pairs/s as
// a share of the bare steps'. Times are wall time over whole loops, not per-call samples: a
// performance.now() pair per call would be a tenth of what is measured.
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { REDIS_URL, benchLog, fmt, ROUNDS, TTL_MS } from "./harness.js";
import { median, table } from "./stats.js";

const CONCURRENCY = 16;
const HOLDER = { plugin: "host", node: "bench" };

/** µs per pair of `loops` loops of `n` pairs each, run at once; loop `w` uses key `k<w>`. */
async function usPerPair(loops: number, n: number, pair: (key: string, owner: string) => Promise<void>): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async (_, w) => {
      const key = `k${w}`;
      const owner = `bare-${w}-${randomUUID()}`;
      for (let i = 0; i < n; i++) await pair(key, owner);
    }),
  );
  return ((performance.now() - started) * 1000) / (loops * n);
}

/** The two pairs measured on `backend`: bare mutex steps, and the LockService over them. */
function pairsOn(backend: LockBackend, locks: LockService): { bare: (key: string, owner: string) => Promise<void>; service: (key: string) => Promise<void> } {
  const steps = backend.steps("mutex");
  return {
    bare: async (key, owner) => {
      const taken = await steps.acquire({ name: key, owner, ttlMs: TTL_MS, holder: HOLDER, mode: "exclusive", limit: 0, queueMs: 0 });
      if (!taken.acquired) throw new Error(`service bench: bare ${key} not acquired`);
      if ((await steps.release(key, owner)) !== "released") throw new Error(`service bench: bare ${key} not released`);
    },
    service: async (key) => {
      const lease = await locks.tryLock(key, { ttlMs: TTL_MS });
      if (!lease) throw new Error(`service bench: ${key} not acquired`);
      await locks.release(lease);
    },
  };
}

/** Per-round µs/pair of bare steps and the service, one at a time and at CONCURRENCY, interleaved after one warm-up round. */
async function rounds(backend: LockBackend, pairs: { seq: number; each: number }): Promise<Record<"bare1" | "svc1" | "bare16" | "svc16", number[]>> {
  const locks = new LockService(backend, { node: "bench" });
  const { bare, service } = pairsOn(backend, locks);
  const measures = {
    bare1: () => usPerPair(1, pairs.seq, bare),
    svc1: () => usPerPair(1, pairs.seq, service),
    bare16: () => usPerPair(CONCURRENCY, pairs.each, bare),
    svc16: () => usPerPair(CONCURRENCY, pairs.each, service),
  };
  const names = Object.keys(measures) as (keyof typeof measures)[];
  const out = { bare1: [] as number[], svc1: [] as number[], bare16: [] as number[], svc16: [] as number[] };
  try {
    for (const name of names) await measures[name]();
    for (let r = 0; r < ROUNDS; r++) for (const name of names) out[name].push(await measures[name]());
  } finally {
    await locks.close();
  }
  return out;
}

/** The median over rounds of `f(round)`. */
const perRound = (n: number, f: (i: number) => number): number => median(Array.from({ length: n }, (_, i) => f(i)));

export async function serviceBench(): Promise<void> {
  const mem = await rounds(new MemoryBackend(), {
    seq: Number(process.env.BENCH_SERVICE_OPS ?? 40_000),
    each: Number(process.env.BENCH_SERVICE_OPS ?? 40_000) / 10,
  });
  const prefix = `lockhost-bench-service:${randomUUID().slice(0, 8)}:`;
  const redisOps = Number(process.env.BENCH_REDIS_OPS ?? 2_000);
  const red = await rounds(new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix: prefix }, benchLog), { seq: redisOps, each: redisOps / 4 });
  // The fence counters outlive their locks on purpose: this run's go with it.
  const admin = new Redis(REDIS_URL);
  const left = await admin.keys(`${prefix}*`);
  if (left.length > 0) await admin.del(...left);
  admin.disconnect();

  console.log(
    `\nlockhost bench: the LockService over its backend's bare steps, try+release pairs (${ROUNDS} interleaved rounds, medians; µs per pair from wall time)\n`,
  );
  const memRow = (c: "1" | "16"): string[] => {
    const bare = mem[`bare${c}`];
    const svc = mem[`svc${c}`];
    return [
      `memory, ${c === "1" ? "one at a time" : `${CONCURRENCY} loops`}`,
      fmt(median(bare), 3),
      fmt(median(svc), 3),
      fmt(
        perRound(bare.length, (i) => svc[i]! - bare[i]!),
        3,
      ),
      fmt(
        perRound(bare.length, (i) => bare[i]! / svc[i]!),
        2,
      ),
    ];
  };
  const redRow = (c: "1" | "16"): string[] => {
    const bare = red[`bare${c}`];
    const svc = red[`svc${c}`];
    return [
      `redis, ${c === "1" ? "one at a time" : `${CONCURRENCY} loops`}`,
      fmt(median(bare), 2),
      fmt(median(svc), 2),
      fmt(
        perRound(bare.length, (i) => svc[i]! - bare[i]!),
        2,
      ),
      fmt(
        perRound(bare.length, (i) => bare[i]! / svc[i]!),
        3,
      ),
    ];
  };
  console.log(table(["pairs", "bare µs", "service µs", "overhead µs", "service/bare pairs/s"], [memRow("1"), memRow("16"), redRow("1"), redRow("16")]));
  const worst = Math.max(
    perRound(mem.bare1.length, (i) => mem.svc1[i]! - mem.bare1[i]!),
    perRound(mem.bare16.length, (i) => mem.svc16[i]! - mem.bare16[i]!),
  );
  console.log(`\nLockService overhead on memory: at most ${fmt(worst, 2)} µs per pair (target ≤ 1 µs: ${worst <= 1 ? "met" : "not reached"})`);
}
