// Bench part "redis", all on one Redis in one run:
// 1. a guest's try+release through each runtime vs raw ioredis SET NX PX + a Lua
//    compare-and-delete and vs the LockService called directly, one at a time and with 16 at
//    once (inline targets: pair p50 ≤ 1.05x direct, 16 guests ≥ 0.9x 16 direct loops);
// 2. the host-side API (LockService) vs the peers node-redlock and redis-semaphore's Mutex,
//    acquire+release (targets: ≥ 1.0x the faster peer's throughput one at a time, ≥ 1.5x with 16
//    at once). lockhost writes each command as it comes, as the peers do; ioredis's
//    enableAutoPipelining is the client option a peer's user could switch on, so at 16 they
//    (and raw ioredis) are also measured on a client with it on;
// 3. the server's time per pair, lockhost vs redis-semaphore and node-redlock (redis-server-time.ts).
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import Redlock from "redlock";
import { Mutex } from "redis-semaphore";
import { LockService } from "../host/locking/service.js";
import { redactUrlSecrets } from "../kit/redact.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import {
  benchLog,
  concurrent,
  fmt,
  guestLoop,
  guestsConcurrent,
  interleaved,
  NOT_MEASURED,
  ROUNDS,
  row,
  sequential,
  startBenchGuests,
  startInlineGuests,
  TTL_MS,
} from "./harness.js";
import { table } from "./stats.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { redisServerTime } from "./redis-server-time.js";

const OPS = Number(process.env.BENCH_REDIS_OPS ?? 2_000);
const CONCURRENCY = 16;
const URL_ = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/** The raw baseline's release: the usual compare-and-delete script. */
const COMPARE_AND_DELETE = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`;

interface RawClient extends Redis {
  compareAndDelete(key: string, token: string): Promise<number>;
}

export async function redisBench(): Promise<void> {
  const prefix = `lockhost-bench:${randomUUID().slice(0, 8)}:`;
  const raw = new Redis(URL_) as RawClient;
  raw.defineCommand("compareAndDelete", { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  const peerClient = new Redis(URL_);
  // The same clients with ioredis's auto-pipelining: what a peer's user could switch on.
  const rawAp = new Redis(URL_, { enableAutoPipelining: true }) as RawClient;
  rawAp.defineCommand("compareAndDelete", { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  const peerClientAp = new Redis(URL_, { enableAutoPipelining: true });
  const backend = new RedisBackend({ ...redisDefaults, url: URL_, keyPrefix: prefix }, benchLog);
  const locks = new LockService(backend, { node: "bench" });
  const guests = await startBenchGuests(locks, CONCURRENCY);
  const inlineGuests = await startInlineGuests(locks, CONCURRENCY);
  const redlock = new Redlock([peerClient], { retryCount: 0 });
  redlock.on("clientError", () => undefined);
  const redlockAp = new Redlock([peerClientAp], { retryCount: 0 });
  redlockAp.on("clientError", () => undefined);

  const rawPairOn =
    (client: RawClient) =>
    async (key: string, i: number): Promise<void> => {
      const token = `t${i}`;
      if ((await client.set(key, token, "PX", TTL_MS, "NX")) !== "OK") throw new Error("raw: not acquired");
      if ((await client.compareAndDelete(key, token)) !== 1) throw new Error("raw: not released");
    };
  const rawPair = rawPairOn(raw);
  const rawPairAp = rawPairOn(rawAp);
  const lockhostPair = async (key: string): Promise<void> => {
    const lease = await locks.tryLock(key, { ttlMs: TTL_MS });
    if (!lease) throw new Error("lockhost: not acquired");
    await locks.release(lease);
  };
  const redlockPairOn =
    (lib: Redlock) =>
    async (key: string): Promise<void> => {
      const lock = await lib.lock(key, TTL_MS);
      await lock.unlock();
    };
  const redlockPair = redlockPairOn(redlock);
  const redlockPairAp = redlockPairOn(redlockAp);
  const mutexPairOn =
    (client: Redis) =>
    async (key: string): Promise<void> => {
      // refreshInterval 0: no renewal timer, as lockhost's lease here.
      const mutex = new Mutex(client, key, { lockTimeout: TTL_MS, acquireAttemptsLimit: 1, refreshInterval: 0 });
      await mutex.acquire();
      await mutex.release();
    };
  const mutexPair = mutexPairOn(peerClient);
  const mutexPairAp = mutexPairOn(peerClientAp);

  try {
    const m = await interleaved({
      raw: () => sequential(OPS, (i) => rawPair(`${prefix}raw:1`, i)),
      guest: () => guestLoop(guests[0]!, OPS, 0),
      raw16: () => concurrent(CONCURRENCY, OPS, (w, i) => rawPair(`${prefix}raw:${w}`, i)),
      guest16: () => guestsConcurrent(guests, OPS),
      ...(inlineGuests.length > 0 && {
        inline: () => guestLoop(inlineGuests[0]!, OPS, 0),
        inline16: () => guestsConcurrent(inlineGuests, OPS),
      }),
      lockhost: () => sequential(OPS, () => lockhostPair("seq")),
      redlock: () => sequential(OPS, () => redlockPair(`${prefix}redlock:1`)),
      mutex: () => sequential(OPS, () => mutexPair(`${prefix}mutex:1`)),
      lockhost16: () => concurrent(CONCURRENCY, OPS, (w) => lockhostPair(`c${w}`)),
      redlock16: () => concurrent(CONCURRENCY, OPS, (w) => redlockPair(`${prefix}redlock:${w}`)),
      mutex16: () => concurrent(CONCURRENCY, OPS, (w) => mutexPair(`${prefix}mutex:${w}`)),
      rawAp16: () => concurrent(CONCURRENCY, OPS, (w, i) => rawPairAp(`${prefix}rawap:${w}`, i)),
      redlockAp16: () => concurrent(CONCURRENCY, OPS, (w) => redlockPairAp(`${prefix}redlockap:${w}`)),
      mutexAp16: () => concurrent(CONCURRENCY, OPS, (w) => mutexPairAp(`${prefix}mutexap:${w}`)),
    });
    const r = { inline: NOT_MEASURED, inline16: NOT_MEASURED, ...m } as Record<string, NonNullable<(typeof m)[string]>>;
    console.log(`\nlockhost bench: redis at ${redactUrlSecrets(URL_)} (${ROUNDS} rounds x ${OPS} pairs per loop, medians)\n`);
    console.log("try+release: guests through each runtime vs raw ioredis and vs the LockService called directly");
    console.log("(ratio: p50 one at a time, throughput at 16; against raw ioredis, and against LockService direct)\n");
    const both = (name: string, round: typeof r.raw, raw: typeof r.raw, direct: typeof r.raw, by: "p50" | "throughput"): string[] => [
      ...row(name, round!, raw, by),
      row(name, round!, direct, by)[4]!,
    ];
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "x raw", "x direct"],
        [
          both("raw ioredis SET NX PX + Lua CAD, 1 at a time", r.raw, r.raw, r.lockhost, "p50"),
          both("LockService direct, 1 at a time", r.lockhost, r.raw, r.lockhost, "p50"),
          both("guest via inline runtime, 1 at a time", r.inline, r.raw, r.lockhost, "p50"),
          both("guest via worker runtime, 1 at a time", r.guest, r.raw, r.lockhost, "p50"),
          both(`raw ioredis, ${CONCURRENCY} loops on one connection`, r.raw16, r.raw16, r.lockhost16, "throughput"),
          both(`raw ioredis with auto-pipelining, ${CONCURRENCY} loops`, r.rawAp16, r.raw16, r.lockhost16, "throughput"),
          both(`LockService direct, ${CONCURRENCY} loops`, r.lockhost16, r.raw16, r.lockhost16, "throughput"),
          both(`${CONCURRENCY} guests via inline runtime`, r.inline16, r.raw16, r.lockhost16, "throughput"),
          both(`${CONCURRENCY} guests via worker runtime`, r.guest16, r.raw16, r.lockhost16, "throughput"),
        ],
      ),
    );
    const inlineSeq = r.inline!.p50Us / r.lockhost!.p50Us;
    const inline16 = r.inline16!.opsPerSec / r.lockhost16!.opsPerSec;
    console.log(
      `\ninline guest / LockService direct: p50 ${fmt(inlineSeq, 2)}x one at a time (target ≤ 1.05x), throughput ${fmt(inline16, 2)}x ` +
        `at ${CONCURRENCY} (target ≥ 0.9x)` +
        `\nworker guest / raw ioredis p50, one at a time: ${fmt(r.guest!.p50Us / r.raw!.p50Us, 2)}x` +
        `\nLockService direct / raw ioredis pair p50, one at a time: ${fmt(r.lockhost!.p50Us / r.raw!.p50Us, 2)}x (target ≤ 1.15x)`,
    );

    const fasterSeq = Math.max(r.redlock!.opsPerSec, r.mutex!.opsPerSec);
    const faster16 = Math.max(r.redlock16!.opsPerSec, r.mutex16!.opsPerSec);
    console.log("\nacquire+release from the host: lockhost's LockService vs peers (ratio: lockhost throughput / this row's)\n");
    const peerRow = (name: string, round: typeof r.raw, mine: typeof r.raw): string[] => [
      name,
      fmt(round!.opsPerSec, 0),
      fmt(round!.p50Us),
      fmt(round!.p99Us),
      fmt(mine!.opsPerSec / round!.opsPerSec, 2),
    ];
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "lockhost x"],
        [
          peerRow("lockhost LockService, 1 at a time", r.lockhost, r.lockhost),
          peerRow("redlock 4 (node-redlock), 1 at a time", r.redlock, r.lockhost),
          peerRow("redis-semaphore Mutex, 1 at a time", r.mutex, r.lockhost),
          peerRow(`lockhost LockService, ${CONCURRENCY} at once`, r.lockhost16, r.lockhost16),
          peerRow(`redlock 4, ${CONCURRENCY} at once`, r.redlock16, r.lockhost16),
          peerRow(`redis-semaphore Mutex, ${CONCURRENCY} at once`, r.mutex16, r.lockhost16),
          peerRow(`redlock 4, ${CONCURRENCY} at once, auto-pipelining client`, r.redlockAp16, r.lockhost16),
          peerRow(`redis-semaphore Mutex, ${CONCURRENCY} at once, auto-pipelining client`, r.mutexAp16, r.lockhost16),
        ],
      ),
    );
    const fasterAp16 = Math.max(r.redlockAp16!.opsPerSec, r.mutexAp16!.opsPerSec);
    const seqPeer = r.lockhost!.opsPerSec / fasterSeq;
    const conPeer = r.lockhost16!.opsPerSec / faster16;
    const verdict = (x: number, target: number): string => (x >= target ? "met" : "not reached");
    console.log(
      `\nlockhost / faster peer throughput: ${fmt(seqPeer, 2)}x one at a time (target ≥ 1.0x: ${verdict(seqPeer, 1)}),` +
        ` ${fmt(conPeer, 2)}x at ${CONCURRENCY} (target ≥ 1.5x: ${verdict(conPeer, 1.5)});` +
        ` ${fmt(r.lockhost16!.opsPerSec / fasterAp16, 2)}x the faster peer on an auto-pipelining client at ${CONCURRENCY}`,
    );
  } finally {
    await Promise.all([...guests, ...inlineGuests].map((g) => g.close()));
    await locks.close();
    const keys = await raw.keys(`${prefix}*`);
    if (keys.length > 0) await raw.del(...keys);
    for (const client of [raw, rawAp, peerClient, peerClientAp]) client.disconnect();
  }
  await redisServerTime();
}
