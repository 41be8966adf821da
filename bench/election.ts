// Bench part "election": how soon a leader that ends without a word is seen gone by an observer
// on another host and replaced by that host's waiting campaigner, from the moment the backend
// frees it. PostgreSQL: the leader's sessions are terminated (pg_terminate_backend: what a
// killed process's sessions go through), so the lock goes at once with no NOTIFY; Redis: the
// leader's connection closes without a release, so its lease runs to its TTL, and the lag is
// counted from that end (the server's clock, on this machine). The baseline is PostgreSQL with
// the election sentinel off (election_poll_ms = 0): the next read comes when the lease last read
// was due to end (at most the poll interval). Target: p99 ≤ 50 ms. And how soon a leader that
// resigns is seen gone by that observer (its release notice), also against p99 ≤ 50 ms: a
// latency target, measured here rather than asserted in test/faults/election-faults.test.ts,
// whose processes share a loaded machine.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { pino } from "pino";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { REDIS_URL, DATABASE_URL, benchLog, fmt } from "./harness.js";
import { median, quantile, table } from "./stats.js";

const ROUNDS = Number(process.env.BENCH_ELECTION_ROUNDS ?? 20);
const BASELINE_ROUNDS = Number(process.env.BENCH_ELECTION_BASELINE_ROUNDS ?? 5);
/** Resignations per backend: enough that p99 is not just the maximum. */
const RESIGN_ROUNDS = Number(process.env.BENCH_ELECTION_RESIGN_ROUNDS ?? 200);
/** The leader's lease: short, as Redis rounds wait for it to run out. */
const LEADER_TTL_MS = 300;
const TARGET_P99_MS = 50;
/** The silenced leader's own log: its session's end is the point, not news. */
const leaderLog = pino({ level: "silent" });

/** One kind of silent end: a fresh leader's backend, and how to silence it (resolving to when the backend freed it, epoch ms). */
interface Silencer {
  readonly name: string;
  leaderBackend(round: string): LockBackend;
  silence(leader: LockBackend, round: string, watcher: LockService, election: string): Promise<number>;
  close(): Promise<void>;
}

function redisSilencer(keyPrefix: string): Silencer {
  return {
    name: "redis",
    leaderBackend: () => new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix }, leaderLog),
    silence: async (leader, _round, watcher, election) => {
      // No release goes out: the lease lasts to its TTL, renewed last at the time read here.
      await leader.close();
      return (await watcher.leader(election)).expiresAtMs ?? Date.now();
    },
    close: () => Promise.resolve(),
  };
}

function pgSilencer(table: string): Silencer {
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  const connected = admin.connect();
  const appName = (round: string): string => `lockhost-bench-leader-${round}`;
  return {
    name: "pg",
    leaderBackend: (round) => new PgBackend({ ...pgDefaults, url: `${DATABASE_URL}?application_name=${appName(round)}`, table }, leaderLog),
    silence: async (_leader, round) => {
      await connected;
      await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", [appName(round)]);
      return Date.now();
    },
    close: () => admin.end(),
  };
}

/** Lags (ms) of the observer and of the campaigner over `rounds` silenced leaders. */
async function lags(silencer: Silencer, watcherBackend: LockBackend, electionPollMs: number, rounds: number): Promise<{ seen: number[]; took: number[] }> {
  const watcher = new LockService(watcherBackend, { node: "bench-watcher", waiting: { electionPollMs } });
  const seen: number[] = [];
  const took: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const round = randomUUID().slice(0, 8);
      const election = `bench-election-${round}`;
      const leaderBackend = silencer.leaderBackend(round);
      const leader = new LockService(leaderBackend, { node: "bench-leader" });
      const term = (await leader.campaign(election, { ttlMs: LEADER_TTL_MS })).term;
      const stop = new AbortController();
      let seenAt: number | undefined;
      const observing = (async () => {
        for await (const info of watcher.observe(election, { signal: stop.signal }))
          if (seenAt === undefined && (!info.held || info.term !== term)) seenAt = Date.now();
      })();
      const campaigning = watcher.campaign(election, { ttlMs: 10_000 }).then((l) => ({ leadership: l, atMs: Date.now() }));
      await new Promise((r) => setTimeout(r, 50));
      const freedAt = await silencer.silence(leaderBackend, round, watcher, election);
      const { leadership, atMs } = await campaigning;
      while (seenAt === undefined) await new Promise((r) => setTimeout(r, 1));
      stop.abort();
      await observing;
      seen.push(seenAt - freedAt);
      took.push(atMs - freedAt);
      await leadership.resign();
      await leader.close({ closeBackend: false }).catch(() => undefined);
      await leaderBackend.close().catch(() => undefined);
    }
  } finally {
    await watcher.close({ closeBackend: false });
  }
  return { seen, took };
}

/** Lags (ms) from a leader's resign() to the observer on another host seeing it gone, over `rounds` leaders. */
async function resignLags(leaderBackend: LockBackend, watcherBackend: LockBackend, rounds: number): Promise<number[]> {
  const leader = new LockService(leaderBackend, { node: "bench-leader" });
  const watcher = new LockService(watcherBackend, { node: "bench-watcher" });
  const lagsMs: number[] = [];
  try {
    for (let i = 0; i < rounds; i++) {
      const election = `bench-resign-${randomUUID().slice(0, 8)}`;
      const leadership = await leader.campaign(election, { ttlMs: 10_000 });
      const stop = new AbortController();
      let shown = false;
      let seenAt: number | undefined;
      const observing = (async () => {
        for await (const info of watcher.observe(election, { signal: stop.signal })) {
          if (info.held && info.term === leadership.term) shown = true;
          else if (shown && seenAt === undefined) seenAt = performance.now();
        }
      })();
      while (!shown) await new Promise((r) => setTimeout(r, 1));
      const resignedAt = performance.now();
      await leadership.resign();
      while (seenAt === undefined) await new Promise((r) => setTimeout(r, 1));
      stop.abort();
      await observing;
      lagsMs.push(seenAt - resignedAt);
    }
  } finally {
    await watcher.close({ closeBackend: false });
    await leader.close({ closeBackend: false });
  }
  return lagsMs;
}

export async function electionBench(): Promise<void> {
  console.log(
    `\nlockhost bench: a leader ended without a notice, from the backend freeing it to another host's observer / campaigner (${ROUNDS} rounds; ` +
      `TTL ${LEADER_TTL_MS} ms), ms\n`,
  );
  const tableName = `lockhost_bench_election_${randomUUID().slice(0, 8)}`;
  const keyPrefix = `lockhost-bench-election:${randomUUID().slice(0, 8)}:`;
  const runs: { path: string; silencer: () => Silencer; watcher: () => LockBackend; pollMs: number; rounds: number }[] = [
    {
      path: "redis: lease ran out",
      silencer: () => redisSilencer(keyPrefix),
      watcher: () => new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix }, benchLog),
      pollMs: 20,
      rounds: ROUNDS,
    },
    {
      path: "pg: sessions ended (election_poll_ms 20)",
      silencer: () => pgSilencer(tableName),
      watcher: () => new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: tableName }, benchLog),
      pollMs: 20,
      rounds: ROUNDS,
    },
    {
      path: "pg: sessions ended, sentinel off (read at the lease's end)",
      silencer: () => pgSilencer(tableName),
      watcher: () => new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: tableName }, benchLog),
      pollMs: 0,
      rounds: BASELINE_ROUNDS,
    },
  ];
  const rows: string[][] = [];
  for (const run of runs) {
    const silencer = run.silencer();
    const watcherBackend = run.watcher();
    try {
      const { seen, took } = await lags(silencer, watcherBackend, run.pollMs, run.rounds);
      rows.push([run.path, fmt(median(seen), 1), fmt(quantile(seen, 0.99), 1), fmt(median(took), 1), fmt(quantile(took, 0.99), 1)]);
      if (run.pollMs > 0)
        console.log(
          `${run.path}: seen within ${fmt(quantile(seen, 0.99), 1)} ms (p99; target ≤ ${TARGET_P99_MS} ` +
            `ms: ${quantile(seen, 0.99) <= TARGET_P99_MS ? "met" : "not reached"})`,
        );
    } finally {
      await watcherBackend.close();
      await silencer.close();
    }
  }
  console.log(table(["path", "observer p50", "observer p99", "campaigner p50", "campaigner p99"], rows));

  console.log(`\nlockhost bench: a leader that resigns, from resign() to another host's observer seeing it gone (${RESIGN_ROUNDS} rounds), ms\n`);
  const backends: [string, () => LockBackend][] = [
    ["redis", () => new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix }, benchLog)],
    ["pg", () => new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: tableName }, benchLog)],
  ];
  const resignRows: string[][] = [];
  for (const [path, make] of backends) {
    const leaderBackend = make();
    const watcherBackend = make();
    try {
      const lagsMs = await resignLags(leaderBackend, watcherBackend, RESIGN_ROUNDS);
      const p99 = quantile(lagsMs, 0.99);
      resignRows.push([path, fmt(median(lagsMs), 1), fmt(p99, 1), fmt(Math.max(...lagsMs), 1)]);
      console.log(`${path}: a resignation seen within ${fmt(p99, 1)} ms (p99; target ≤ ${TARGET_P99_MS} ms: ${p99 <= TARGET_P99_MS ? "met" : "not reached"})`);
    } finally {
      await leaderBackend.close();
      await watcherBackend.close();
    }
  }
  console.log(table(["backend", "observer p50", "observer p99", "max"], resignRows));
}
