// npm run bench: lockhost's speed against baselines measured in the same run, on the same
// servers. Parts: memory (the bridge), redis (vs raw ioredis, redlock, redis-semaphore),
// pg (vs raw advisory locks, and holding 1,000 locks vs a connection per lock), handoff
// (release -> waiter, per backend, vs polling at redlock's 200 ms), keepalive (10,000
// keepalive locks on Redis: timers, round trips per tick, CPU, vs a timer per lock),
// keepalive-scale (10k, 100k and 1M keepalive locks on one host: round trips per tick, CPU
// per renewal, memory per lock, flat or not), lost
// (a force-released holder told, vs redis-semaphore's onLockLost), election (a leader ended
// without a notice, seen by another host's observer and campaigner), kinds (read/write locks and
// semaphores on Redis and PostgreSQL, vs redis-semaphore's Semaphore and raw shared advisory locks),
// http (a plugin's http client vs Node's global fetch and a bare undici Agent, on a local server),
// service (the LockService's cost over its backend's bare steps, memory and Redis), etcd (a
// mutex pair vs a raw lock by transaction, and handoff to another host, on three members),
// metrics (what the host's metrics cost per lock operation and per guest call, metered vs plain),
// contention (16 callers of one key on one host taking turns, handoffs/s vs redis-semaphore's Mutex),
// tracing (what the OpenTelemetry spans cost: no SDK registered vs a baseline without them, and with an SDK),
// extism (an Extism plugin's lock call through the lock functions vs lockhost's own ABI, inline and worker),
// delegation (one hot key handed between a host's callers without a round trip: vs not delegated, redis-semaphore, two hosts).
//   npm run bench                 every part
//   npm run bench -- redis pg     only those parts
//   npm run bench -- --json       one JSON object per table row (part, path, p50Us, p99Us, opsPerSec, …)
// REDIS_URL / DATABASE_URL / ETCD_ENDPOINTS choose the servers (loopback defaults; etcd: a
// private cluster); BENCH_ROUNDS the rounds.
import { contentionBench } from "./contention.js";
import { delegationBench } from "./delegation.js";
import { electionBench } from "./election.js";
import { etcdBench } from "./etcd.js";
import { extismBench } from "./extism.js";
import { handoffBench, keepaliveBench } from "./lifecycle.js";
import { keepaliveScaleBench } from "./keepalive-scale.js";
import { httpBench } from "./http.js";
import { lostBench } from "./lost.js";
import { kindsBench } from "./kinds.js";
import { memoryBench } from "./memory.js";
import { metricsBench } from "./metrics.js";
import { pgBench } from "./pg.js";
import { redisBench } from "./redis.js";
import { serviceBench } from "./service.js";
import { tracingBench } from "./tracing.js";
import { reportAsJson } from "./stats.js";

const PARTS: Record<string, () => Promise<void>> = {
  memory: memoryBench,
  redis: redisBench,
  pg: pgBench,
  etcd: etcdBench,
  handoff: handoffBench,
  keepalive: keepaliveBench,
  "keepalive-scale": keepaliveScaleBench,
  lost: lostBench,
  election: electionBench,
  kinds: kindsBench,
  http: httpBench,
  service: serviceBench,
  metrics: metricsBench,
  contention: contentionBench,
  delegation: delegationBench,
  tracing: tracingBench,
  extism: extismBench,
};

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const json = args.includes("--json");
  const asked = args.filter((a) => a !== "--json");
  const unknown = asked.filter((a) => !(a in PARTS));
  if (unknown.length > 0) throw new Error(`unknown bench part(s) ${unknown.join(", ")}; parts: ${Object.keys(PARTS).join(", ")}, and --json`);
  // In JSON mode the rows are the output: the prose around the tables is left out.
  const say = console.log;
  if (json) console.log = () => undefined;
  try {
    for (const name of asked.length > 0 ? asked : Object.keys(PARTS)) {
      if (json) reportAsJson(name);
      await PARTS[name]!();
    }
  } finally {
    console.log = say;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
