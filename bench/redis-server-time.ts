// Part of bench "redis": what a try+release pair costs the Redis server, lockhost's LockService
// against redis-semaphore's Mutex and node-redlock, on a private server (no other client's
// commands in its counters), in interleaved rounds. Two measures per pair: command time, the
// INFO commandstats usec of the commands each client sends itself (scripts count with the
// commands they call, which are also counted on their own, so only a path's top-level commands
// are summed), and server CPU (INFO cpu, user + system: the command time plus reading, parsing
// and replying).
import { Redis } from "ioredis";
import Redlock from "redlock";
import { Mutex } from "redis-semaphore";
import { LockService } from "../host/locking/service.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { startRedisServer } from "../test/support/servers.js";
import { benchLog, fmt, ROUNDS, TTL_MS } from "./harness.js";
import { median, table } from "./stats.js";

const PAIRS = Number(process.env.BENCH_REDIS_SERVER_PAIRS ?? 3_000);

/** The server's counters: usec per command name, and CPU seconds. */
async function counters(admin: Redis): Promise<{ usec: Map<string, number>; cpuUs: number }> {
  const info = await admin.info("all");
  const usec = new Map<string, number>();
  for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=\d+,usec=(\d+)/gm)) usec.set(m[1]!, Number(m[2]));
  const cpu = (name: string): number => Number(new RegExp(`^${name}:([\\d.]+)`, "m").exec(info)?.[1] ?? NaN);
  return { usec, cpuUs: (cpu("used_cpu_user") + cpu("used_cpu_sys")) * 1e6 };
}

interface Path {
  readonly pair: () => Promise<void>;
  /** The commands this path's client sends itself. */
  readonly topLevel: readonly string[];
}

/** Server µs per pair of each path: [command time, CPU] per round. */
export async function redisServerTime(): Promise<void> {
  const server = await startRedisServer();
  const admin = new Redis(server.url);
  const client = new Redis(server.url);
  const backend = new RedisBackend({ ...redisDefaults, url: server.url, keyPrefix: "st:" }, benchLog);
  const locks = new LockService(backend, { node: "bench" });
  const redlock = new Redlock([client], { retryCount: 0 });
  redlock.on("clientError", () => undefined);
  const paths: Record<string, Path> = {
    "lockhost LockService": {
      pair: async () => {
        const lease = await locks.tryLock("k", { ttlMs: TTL_MS });
        if (!lease) throw new Error("lockhost: not acquired");
        await locks.release(lease);
      },
      topLevel: ["evalsha", "eval"],
    },
    "redis-semaphore Mutex": {
      pair: async () => {
        const mutex = new Mutex(client, "mutex", { lockTimeout: TTL_MS, acquireAttemptsLimit: 1, refreshInterval: 0 });
        await mutex.acquire();
        await mutex.release();
      },
      topLevel: ["set", "evalsha", "eval"],
    },
    "redlock 4 (node-redlock)": {
      pair: async () => {
        const lock = await redlock.lock("redlock", TTL_MS);
        await lock.unlock();
      },
      topLevel: ["evalsha", "eval"],
    },
  };
  const names = Object.keys(paths);
  const out = Object.fromEntries(names.map((n) => [n, { cmd: [] as number[], cpu: [] as number[] }]));
  try {
    for (let r = 0; r <= ROUNDS; r++) {
      for (let k = 0; k < names.length; k++) {
        const name = names[(r + k) % names.length]!;
        const path = paths[name]!;
        const before = await counters(admin);
        for (let i = 0; i < PAIRS; i++) await path.pair();
        const after = await counters(admin);
        if (r === 0) continue; // the warm-up round (scripts loaded, code optimised)
        let usec = 0;
        for (const cmd of path.topLevel) usec += (after.usec.get(cmd) ?? 0) - (before.usec.get(cmd) ?? 0);
        out[name]!.cmd.push(usec / PAIRS);
        out[name]!.cpu.push((after.cpuUs - before.cpuUs) / PAIRS);
      }
    }
  } finally {
    await locks.close();
    client.disconnect();
    admin.disconnect();
    await server.stop();
  }
  const mine = out[names[0]!]!;
  const mutex = out["redis-semaphore Mutex"]!;
  console.log(`\nRedis server time per try+release pair, one at a time (a private server, ${ROUNDS} interleaved rounds x ${PAIRS} pairs, medians)\n`);
  console.log(
    table(
      ["path", "command µs/pair", "server CPU µs/pair", "lockhost x (command)", "lockhost x (CPU)"],
      names.map((name) => {
        const m = out[name]!;
        return [name, fmt(median(m.cmd), 2), fmt(median(m.cpu), 2), fmt(median(mine.cmd) / median(m.cmd), 2), fmt(median(mine.cpu) / median(m.cpu), 2)];
      }),
    ),
  );
  const x = median(mine.cmd) / median(mutex.cmd);
  console.log(`\nlockhost / redis-semaphore server command time per pair: ${fmt(x, 2)}x (target ≤ 2x: ${x <= 2 ? "met" : "not reached"})`);
}
