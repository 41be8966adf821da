// Bench part "pg", all on one PostgreSQL in one run:
// 1. a guest's try+release through each runtime vs raw prepared pg_try_advisory_lock +
//    pg_advisory_unlock on one connection, and vs the LockService called directly (inline
//    target: ≤ 1.05x direct); the floor: the backend's own acquire and release statements
//    alone on one connection (one row write per acquisition, for status and fences);
// 2. holding 1,000 locks at once: lockhost (a few session connections) vs a connection per lock,
//    in time and server connections.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { LockService } from "../host/locking/service.js";
import type { Lease } from "../host/locking/lease.js";
import { redactUrlSecrets } from "../kit/redact.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { holdersTableOf, statementsFor, type Statement } from "../plugins/backends/pg/mutex-sql.js";
import { advisoryKeyOf, waitLockOf } from "../plugins/backends/pg/keys.js";
import { benchLog, fmt, guestLoop, interleaved, NOT_MEASURED, ROUNDS, row, sequential, startBenchGuests, startInlineGuests, TTL_MS } from "./harness.js";
import { median, table, type Round } from "./stats.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";

const OPS = Number(process.env.BENCH_PG_OPS ?? 1_000);
const HOLD = 1_000;
const URL_ = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";

/** Server connections open to this database, other than the one asking; only `app`'s when given. */
async function connections(admin: pg.Client, app?: string): Promise<number> {
  const r = await admin.query<{ n: string }>(
    "select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid() and ($1::text is null or application_name = $1)",
    [app ?? null],
  );
  return Number(r.rows[0]!.n);
}

export async function pgBench(): Promise<void> {
  const table_ = `lockhost_bench_${randomUUID().slice(0, 8)}`;
  const config = { ...pgDefaults, url: URL_, table: table_ };
  const admin = new pg.Client({ connectionString: URL_ });
  await admin.connect();
  const raw = new pg.Client({ connectionString: URL_ });
  await raw.connect();
  const locks = new LockService(new PgBackend(config, benchLog), { node: "bench" });
  const [guest] = await startBenchGuests(locks, 1);
  const [inline] = await startInlineGuests(locks, 1);

  const rawPair = async (): Promise<void> => {
    const got = await raw.query({ name: "try", text: "select pg_try_advisory_lock($1) as ok", values: ["4242"] });
    if (got.rows[0].ok !== true) throw new Error("raw: not acquired");
    await raw.query({ name: "unlock", text: "select pg_advisory_unlock($1) as ok", values: ["4242"] });
  };

  // The backend's statements alone, on a connection of their own, for a key of their own (its
  // tables made by the backend's first acquisition, through the LockService above).
  const stmt = new pg.Client({ connectionString: URL_ });
  await stmt.connect();
  const sql = statementsFor(table_);
  const run = (s: Statement, values: unknown[]): Promise<pg.QueryArrayResult> => stmt.query({ name: s.name, text: s.text, values, rowMode: "array" });
  const advisory = advisoryKeyOf("statements");
  const stmtPair = async (): Promise<void> => {
    const owner = randomUUID();
    const got = await run(sql.acquire, [advisory.id, "statements", owner, "bench", "bench", "bench", TTL_MS]);
    if (got.rows[0]?.[0] === null || got.rows[0] === undefined) throw new Error("statements: not acquired");
    await run(sql.release, [advisory.id, owner, "lockhost_bench_none", ...waitLockOf(advisory)]);
  };

  const directPair = async (): Promise<void> => {
    const lease = await locks.tryLock("direct", { ttlMs: TTL_MS });
    if (!lease) throw new Error("direct: not acquired");
    await locks.release(lease);
  };

  try {
    await directPair(); // the backend makes its tables
    const measured = await interleaved({
      raw: () => sequential(OPS, rawPair),
      statements: () => sequential(OPS, stmtPair),
      direct: () => sequential(OPS, directPair),
      guest: () => guestLoop(guest!, OPS, 0),
      ...(inline && { inline: () => guestLoop(inline, OPS, 0) }),
    });
    const m = { inline: NOT_MEASURED, ...measured } as Record<"raw" | "statements" | "direct" | "guest" | "inline", Round>;
    console.log(`\nlockhost bench: pg at ${redactUrlSecrets(URL_)} (${ROUNDS} rounds x ${OPS} pairs, medians)\n`);
    console.log("try+release: guests through each runtime vs raw prepared advisory lock + unlock, and vs the LockService called directly (ratio: p50)\n");
    const both = (name: string, round: typeof m.raw): string[] => [...row(name, round!, m.raw), row(name, round!, m.direct)[4]!];
    console.log(
      table(
        ["path", "pairs/s", "p50 µs", "p99 µs", "x raw", "x direct"],
        [
          both("raw pg_try_advisory_lock + pg_advisory_unlock, one connection", m.raw),
          both("floor: the backend's acquire + release statements alone, one connection", m.statements),
          both("LockService direct", m.direct),
          both("guest via inline runtime", m.inline),
          both("guest via worker runtime", m.guest),
        ],
      ),
    );
    // The hot-key target: the LockService's pair within 1.2x (moonshot 1.1x) of the raw advisory
    // pair at p50, its floor the backend's own statements (one holder-row write per acquisition:
    // what status and listing from every host, and fences, are read from).
    const ratio = m.direct!.p50Us / m.raw!.p50Us;
    console.log("\npg LockService pair / raw advisory pair, p50 (same run)\n");
    console.log(
      table(
        ["path", "ratio", "floor (statements / raw)", "LockService / statements", "target"],
        [
          [
            "pg LockService pair / raw advisory pair",
            fmt(ratio, 2),
            fmt(m.statements!.p50Us / m.raw!.p50Us, 2),
            fmt(m.direct!.p50Us / m.statements!.p50Us, 2),
            ratio <= 1.1 ? "moonshot met (≤ 1.1x)" : ratio <= 1.2 ? "met (≤ 1.2x)" : "not met (≤ 1.2x)",
          ],
        ],
      ),
    );
    console.log(
      `\nLockService direct / raw p50: ${fmt(ratio, 2)}x (target ≤ ` +
        `1.2x: ${ratio <= 1.2 ? "met" : "not reached"});` +
        ` the statements alone ${fmt(m.statements!.p50Us / m.raw!.p50Us, 2)}x raw, the LockService ${fmt(m.direct!.p50Us / m.statements!.p50Us, 2)}x ` +
        `the statements` +
        `\ninline guest / LockService direct p50: ${fmt(m.inline.p50Us / m.direct!.p50Us, 2)}x (target ≤ 1.05x);` +
        ` worker guest / raw p50: ${fmt(m.guest!.p50Us / m.raw!.p50Us, 2)}x`,
    );

    // Holding many locks at once.
    const lockhostMs: number[] = [];
    let lockhostConns = 0;
    for (let r = 0; r < ROUNDS; r++) {
      const t0 = performance.now();
      const leases = await Promise.all(Array.from({ length: HOLD }, (_, i) => locks.tryLock(`hold-${i}`, { ttlMs: TTL_MS })));
      lockhostMs.push(performance.now() - t0);
      if (leases.some((l) => l === null)) throw new Error("lockhost: a hold lock was not acquired");
      lockhostConns = Math.max(lockhostConns, await connections(admin, `lockhost:${process.pid}`));
      await Promise.all(leases.map((l) => locks.release(l as Lease)));
    }

    // A connection per lock cannot reach 1,000 on a server with max_connections = 100: take as
    // many as the server leaves room for, and scale the time.
    const max = Number((await admin.query<{ max_connections: string }>("show max_connections")).rows[0]!.max_connections);
    const room = Math.max(1, Math.min(HOLD, max - (await connections(admin)) - 10));
    const perLockMs: number[] = [];
    for (let r = 0; r < Math.min(ROUNDS, 3); r++) {
      const t0 = performance.now();
      const clients = await Promise.all(
        Array.from({ length: room }, async (_, i) => {
          const c = new pg.Client({ connectionString: URL_ });
          await c.connect();
          await c.query("select pg_try_advisory_lock($1)", [String(900_000 + i)]);
          return c;
        }),
      );
      perLockMs.push(performance.now() - t0);
      await Promise.all(clients.map((c) => c.end()));
    }
    const perLock = median(perLockMs);
    console.log(`\nholding ${HOLD} locks at once (median of rounds; lockhost: ${config.sessions} session connections)\n`);
    console.log(
      table(
        ["approach", "locks", "time ms", "server connections"],
        [
          ["lockhost pg backend", String(HOLD), fmt(median(lockhostMs)), String(lockhostConns)],
          [`connection per lock (measured at ${room}, max_connections ${max})`, String(room), fmt(perLock), String(room)],
          [`connection per lock, scaled to ${HOLD}`, String(HOLD), fmt((perLock / room) * HOLD), `${HOLD} (refused past ${max})`],
        ],
      ),
    );
  } finally {
    await Promise.all([guest?.close(), inline?.close()]);
    await locks.close();
    await raw.end();
    await stmt.end();
    await admin.query(`drop table if exists ${table_}, ${holdersTableOf(table_)}`).catch(() => undefined);
    await admin.end();
  }
}
