// Quick measurement (issue 14): p50 of one shared acquire + release pair through the pg backend's
// shared steps on one session, next to a raw prepared pg_try_advisory_lock + pg_advisory_unlock
// pair on one connection and the backend's mutex pair. Interleaved rounds so load drift hits all
// alike. Run: npx tsx bench/pg-shared-pair.ts  (BENCH_PG_OPS pairs per round, default 2000).
import { randomUUID } from "node:crypto";
import pg from "pg";
import pino from "pino";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { dropPgTable } from "../test/support/cleanup.js";
import { quantile } from "./stats.js";

const OPS = Number(process.env.BENCH_PG_OPS ?? 2_000);
const ROUNDS = 5;
const URL_ = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
const table = `lockhost_bench_${randomUUID().slice(0, 8)}`;
const backend = new PgBackend({ ...pgDefaults, url: URL_, table, sessions: 1 }, pino({ level: "warn" }));
const raw = new pg.Client({ connectionString: URL_ });
await raw.connect();
const holder = { plugin: "bench", node: "bench" };

async function pairs(label: string, pair: (i: number) => Promise<void>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < OPS; i++) {
    const t0 = performance.now();
    await pair(i);
    times.push((performance.now() - t0) * 1000);
  }
  return times;
}

const cases: Record<string, (i: number) => Promise<void>> = {
  "raw pg_try_advisory_lock + pg_advisory_unlock": async (i) => {
    const id = 424242 + (i % 64);
    const got = await raw.query({ name: "t", text: "SELECT pg_try_advisory_lock($1::int8)", values: [id], rowMode: "array" });
    if (got.rows[0]![0] !== true) throw new Error("raw lock contended");
    await raw.query({ name: "u", text: "SELECT pg_advisory_unlock($1::int8)", values: [id], rowMode: "array" });
  },
  "shared acquire + release (rw, reader)": async (i) => {
    const key = `bench-rw-${i % 64}`;
    const owner = randomUUID();
    const steps = backend.shared("rw");
    const r = await steps.acquire({ key, owner, ttlMs: 10_000, holder, mode: "shared", limit: 0, queueMs: 0 });
    if (!r.acquired) throw new Error("shared contended");
    await steps.release(key, owner);
  },
  "exclusive acquire + release (rw, writer)": async (i) => {
    const key = `bench-rww-${i % 64}`;
    const owner = randomUUID();
    const steps = backend.shared("rw");
    const r = await steps.acquire({ key, owner, ttlMs: 10_000, holder, mode: "exclusive", limit: 0, queueMs: 0 });
    if (!r.acquired) throw new Error("writer contended");
    await steps.release(key, owner);
  },
  "backend mutex acquire + release": async (i) => {
    const key = `bench-m-${i % 64}`;
    const owner = randomUUID();
    const r = await backend.acquire({ key, owner, ttlMs: 10_000, holder });
    if (!r.acquired) throw new Error("mutex contended");
    await backend.release(key, owner);
  },
};

const p50s: Record<string, number[]> = {};
for (const [label, pair] of Object.entries(cases)) await pairs(label, pair); // warm-up: objects, plans
for (let round = 0; round < ROUNDS; round++) {
  for (const [label, pair] of Object.entries(cases)) {
    const t = await pairs(label, pair);
    (p50s[label] ??= []).push(quantile(t, 0.5));
  }
}
for (const [label, values] of Object.entries(p50s)) {
  const sorted = [...values].sort((a, b) => a - b);
  console.log(`${label.padEnd(48)} p50 per round (us): ${sorted.map((v) => v.toFixed(0)).join(" ")}  median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)}`);
}
await backend.close();
await raw.end();
await dropPgTable(URL_, table);
