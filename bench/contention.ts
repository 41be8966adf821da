// Bench part "contention" (issue 25): 16 callers of one key on one host, each taking its turns, a
// fixed number of acquire-with-wait + release pairs per caller, in interleaved rounds. Reported:
// handoffs/s (every pair is one handoff: the key goes from one caller to the next), the ratio to
// redis-semaphore's Mutex (its default retry: a try every 10 ms) measured in the same run, and on
// Redis the commands sent per handoff (counted in this process, at ioredis's sendCommand: a
// script call is one, whatever it runs; the round trips, but for the calls one batch or
// pipeline writes together) and the server's commands per handoff (INFO commandstats deltas,
// commands run inside scripts included: every client's, so read them on a private Redis). Rows: the
// LockService on Redis, memory and PostgreSQL; redis-semaphore; The floor row: the Redis backend's handoff
// step called back to back by one caller, nobody waiting (one round trip and one script per handoff, as the
// LockService's handoff costs at best): the most handoffs/s any design that asks the server once per handoff
// gets here. node-redlock (default retry: 200 ms + jitter) only with BENCH_CONTENTION_REDLOCK=1, since its
// handoffs each wait ~100 ms for a retry and a round would take a minute. With BENCH_CONTENTION_BASE=<a
// checkout's root> (built: its dist/, node_modules in place) the LockService of that checkout runs on each
// backend too, in the same rounds: a before/after of one run.
import { randomUUID } from "node:crypto";
import { pathToFileURL } from "node:url";
import { Redis } from "ioredis";
import pg from "pg";
import Redlock from "redlock";
import { Mutex } from "redis-semaphore";
import type { KindSteps, LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { holdersTableOf } from "../plugins/backends/pg/mutex-sql.js";
import { DATABASE_URL, REDIS_URL, ROUNDS, TTL_MS, benchLog, fmt } from "./harness.js";
import { median, table } from "./stats.js";

const CALLERS = 16;
const TURNS = Number(process.env.BENCH_CONTENTION_TURNS ?? 50);
const REDLOCK_TURNS = 2;
const WAIT_MS = 120_000;

/** One round of one row: handoffs/s, and per handoff on Redis rows the commands sent and the server's commands. */
interface ContentionRound {
  readonly handoffsPerSec: number;
  readonly sentPerHandoff: number;
  readonly serverPerHandoff: number;
}

/** Commands this process has sent to Redis (every ioredis client): counted at sendCommand. */
let sent = 0;
const sendCommand = Redis.prototype.sendCommand;
Redis.prototype.sendCommand = function (this: Redis, ...args: Parameters<Redis["sendCommand"]>) {
  sent++;
  return sendCommand.apply(this, args);
} as Redis["sendCommand"];

/** What a caller does once per turn: take the key (waiting), let it go. */
type Turn = (key: string) => Promise<void>;

/** Every command the server counted (INFO commandstats), less INFO's own calls. */
async function serverCalls(admin: Redis): Promise<number> {
  const info = await admin.info("commandstats");
  let calls = 0;
  for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) if (m[1] !== "info") calls += Number(m[2]);
  return calls;
}

/** `callers` callers of one fresh key, `turns` turns each; handoffs/s and (with `admin`) commands per handoff. */
async function contend(turn: Turn, turns: number, key: string, admin?: Redis, callers = CALLERS): Promise<ContentionRound> {
  const before = admin ? await serverCalls(admin) : 0;
  const sentBefore = sent;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: callers }, async () => {
      for (let i = 0; i < turns; i++) await turn(key);
    }),
  );
  const ms = performance.now() - started;
  const handoffs = callers * turns;
  const sentCalls = sent - sentBefore;
  const calls = admin ? (await serverCalls(admin)) - before : Number.NaN;
  return { handoffsPerSec: (handoffs * 1000) / ms, sentPerHandoff: admin ? sentCalls / handoffs : Number.NaN, serverPerHandoff: calls / handoffs };
}

/** A LockService's turn: acquire with a wait, release. */
function serviceTurn(locks: Pick<LockService, "acquire" | "release">): Turn {
  return async (key) => {
    const lease = await locks.acquire(key, { ttlMs: TTL_MS, waitMs: WAIT_MS });
    await locks.release(lease);
  };
}

/**
 * The floor: one caller hands a key from owner to owner through the backend's handoff step, back
 * to back (its first turn on a key takes it).
 */
function handoffSteps(steps: KindSteps): Turn {
  const holder = { plugin: "bench", node: "bench" };
  let key: string | undefined;
  let owner = "";
  return async (k) => {
    if (k !== key) {
      key = k;
      owner = randomUUID();
      const got = await steps.acquire({ name: k, owner, ttlMs: TTL_MS, holder, mode: "exclusive", limit: 1, queueMs: 0 });
      if (!got.acquired) throw new Error(`contention floor: ${k} not acquired`);
      return;
    }
    const next = randomUUID();
    const done = await steps.handoff!(k, owner, { name: k, owner: next, ttlMs: TTL_MS, holder, mode: "exclusive", limit: 1, queueMs: 0 });
    if (done.released !== "released" || done.next?.acquired !== true) throw new Error(`contention floor: handoff of ${k} refused`);
    owner = next;
  };
}

/** LockServices of another checkout (BENCH_CONTENTION_BASE) on Redis, memory and PostgreSQL, for a same-run before/after. */
async function baseServices(root: string, prefix: string, pgTable: string): Promise<Record<"redis" | "memory" | "pg", LockService>> {
  const load = (path: string): Promise<Record<string, unknown>> => import(pathToFileURL(`${root}/dist/${path}`).href) as Promise<Record<string, unknown>>;
  const { LockService: BaseService } = (await load("host/locking/service.js")) as { LockService: typeof LockService };
  const { RedisBackend: BaseRedis } = (await load("plugins/backends/redis/index.js")) as { RedisBackend: typeof RedisBackend };
  const { MemoryBackend: BaseMemory } = (await load("plugins/backends/memory/index.js")) as { MemoryBackend: typeof MemoryBackend };
  const { PgBackend: BasePg } = (await load("plugins/backends/pg/index.js")) as { PgBackend: typeof PgBackend };
  const service = (backend: LockBackend): LockService => new BaseService(backend, { node: "bench-base" });
  return {
    redis: service(new BaseRedis({ ...redisDefaults, url: REDIS_URL, keyPrefix: `${prefix}base:` }, benchLog)),
    memory: service(new BaseMemory()),
    pg: service(new BasePg({ ...pgDefaults, url: DATABASE_URL, table: `${pgTable}_base` }, benchLog)),
  };
}

interface Row {
  readonly name: string;
  readonly turns: number;
  readonly redis: boolean;
  readonly turn: Turn;
  /** Callers taking turns (CALLERS unless said). */
  readonly callers?: number;
}

export async function contentionBench(): Promise<void> {
  const prefix = `lockhost-bench-contention:${randomUUID().slice(0, 8)}:`;
  const pgTable = `lockhost_bench_contention_${randomUUID().slice(0, 8)}`;
  const admin = new Redis(REDIS_URL);
  const peer = new Redis(REDIS_URL);
  const backends: LockBackend[] = [
    new RedisBackend({ ...redisDefaults, url: REDIS_URL, keyPrefix: prefix }, benchLog),
    new MemoryBackend(),
    new PgBackend({ ...pgDefaults, url: DATABASE_URL, table: pgTable }, benchLog),
  ];
  const [onRedis, onMemory, onPg] = backends.map((b) => new LockService(b, { node: "bench" }));
  const base = process.env.BENCH_CONTENTION_BASE ? await baseServices(process.env.BENCH_CONTENTION_BASE, prefix, pgTable) : undefined;
  const redlock = new Redlock([peer], { retryCount: -1 });
  redlock.on("clientError", () => undefined);
  const rows: Row[] = [
    { name: "lockhost LockService, redis", turns: TURNS, redis: true, turn: serviceTurn(onRedis!) },
    ...(base ? [{ name: "lockhost LockService, redis, base checkout", turns: TURNS, redis: true, turn: serviceTurn(base.redis) }] : []),
    {
      name: "floor: RedisBackend handoff step back to back, one caller",
      turns: CALLERS * TURNS,
      callers: 1,
      redis: true,
      turn: handoffSteps(backends[0]!.steps("mutex")),
    },
    {
      name: "redis-semaphore Mutex (retry every 10 ms)",
      turns: TURNS,
      redis: true,
      turn: async (key) => {
        const mutex = new Mutex(peer, `${prefix}${key}`, { lockTimeout: TTL_MS, acquireTimeout: WAIT_MS });
        await mutex.acquire();
        await mutex.release();
      },
    },
    ...(process.env.BENCH_CONTENTION_REDLOCK === "1"
      ? [
          {
            name: `node-redlock 4 (retry 200 ms + jitter), ${REDLOCK_TURNS} turns`,
            turns: REDLOCK_TURNS,
            redis: true,
            turn: async (key: string) => (await redlock.lock(`${prefix}${key}`, TTL_MS)).unlock().then(() => undefined),
          },
        ]
      : []),
    { name: "lockhost LockService, memory", turns: TURNS, redis: false, turn: serviceTurn(onMemory!) },
    ...(base ? [{ name: "lockhost LockService, memory, base checkout", turns: TURNS, redis: false, turn: serviceTurn(base.memory) }] : []),
    { name: "lockhost LockService, pg", turns: TURNS, redis: false, turn: serviceTurn(onPg!) },
    ...(base ? [{ name: "lockhost LockService, pg, base checkout", turns: TURNS, redis: false, turn: serviceTurn(base.pg) }] : []),
  ];
  const results = new Map<string, ContentionRound[]>(rows.map((r) => [r.name, []]));
  let round = 0;
  const measure = (r: Row): Promise<ContentionRound> => contend(r.turn, r.turns, `c${round}`, r.redis ? admin : undefined, r.callers);
  try {
    for (const r of rows) await measure(r); // warm-up: connections, scripts, subscriptions
    for (round = 1; round <= ROUNDS; round++) for (const r of rows) results.get(r.name)!.push(await measure(r));
    const rate = (name: string): number => median(results.get(name)!.map((x) => x.handoffsPerSec));
    const mutex = rate(rows.find((r) => r.name.startsWith("redis-semaphore"))!.name);
    console.log(
      `\nlockhost bench: contention, ${CALLERS} callers of one key on one host, ${TURNS} acquire-with-wait + release turns each (${ROUNDS} rounds, medians)\n`,
    );
    console.log(
      table(
        ["path", "handoffs/s", "x redis-semaphore", "sent/handoff", "server cmds/handoff"],
        rows.map((r) => {
          const per = (pick: (x: ContentionRound) => number): string => (r.redis ? fmt(median(results.get(r.name)!.map(pick)), 2) : "-");
          return [r.name, fmt(rate(r.name), 0), fmt(rate(r.name) / mutex, 2), per((x) => x.sentPerHandoff), per((x) => x.serverPerHandoff)];
        }),
      ),
    );
    const ratio = rate(rows[0]!.name) / mutex;
    const floor = rate(rows.find((r) => r.name.startsWith("floor:"))!.name);
    console.log(
      `\nlockhost on redis / redis-semaphore: ${fmt(ratio, 2)}x (target ≥ 5x: ${ratio >= 5 ? "met" : "not reached"}; moonshot 10x);` +
        ` ${fmt(rate(rows[0]!.name) / floor, 2)}x the floor of one handoff round trip after another (${fmt(floor / mutex, 2)}x redis-semaphore)`,
    );
  } finally {
    await Promise.all([onRedis, onMemory, onPg].map((l) => l!.close()));
    if (base) await Promise.all(Object.values(base).map((l) => l.close()));
    const keys = await admin.keys(`${prefix}*`);
    if (keys.length > 0) await admin.del(...keys);
    admin.disconnect();
    peer.disconnect();
    // The PostgreSQL rows' tables, this checkout's and the base's.
    const db = new pg.Client({ connectionString: DATABASE_URL });
    await db.connect();
    for (const t of [pgTable, `${pgTable}_base`]) await db.query(`drop table if exists ${t}, ${holdersTableOf(t)}`).catch(() => undefined);
    await db.end();
  }
}
