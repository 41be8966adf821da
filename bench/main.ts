// npm run bench: lockhost's speed against baselines measured in the same run, on the same
// servers. Parts: memory (the bridge), redis (vs raw ioredis, redlock, redis-semaphore),
// pg (vs raw advisory locks, and holding 1,000 locks vs a connection per lock).
//   npm run bench                 every part
//   npm run bench -- redis pg     only those parts
// REDIS_URL / DATABASE_URL choose the servers (loopback defaults); BENCH_ROUNDS the rounds.
import { memoryBench } from "./memory.js";
import { pgBench } from "./pg.js";
import { redisBench } from "./redis.js";

const PARTS: Record<string, () => Promise<void>> = { memory: memoryBench, redis: redisBench, pg: pgBench };

async function main(): Promise<void> {
  const asked = process.argv.slice(2);
  const unknown = asked.filter((a) => !(a in PARTS));
  if (unknown.length > 0) throw new Error(`unknown bench part(s) ${unknown.join(", ")}; parts: ${Object.keys(PARTS).join(", ")}`);
  for (const name of asked.length > 0 ? asked : Object.keys(PARTS)) await PARTS[name]!();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
