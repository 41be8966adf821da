// Bench part "metrics": what the host's metrics (issue 28) cost where it counts. Each path runs
// on three setups in one process, in interleaved rounds: "bare" (a LockService nobody listens
// to: no [admin] table), "feed" (the dashboard's activity feed listening: a host with [admin]
// before the metrics) and "metered" (the feed and the host's metrics: the lock events' meter,
// the guests' recorder: a host with [admin] now). Paths: try+release pairs through the
// LockService on memory (an acquisition, a release and a hold-time observation each), contended
// tries (a contended event each), host -> guest export calls (a call count and a duration
// observation each) in the worker and inline runtimes, and a guest's own try+release loop.
// Reported: medians of µs per operation from wall time, and the metrics' cost, metered - feed,
// taken in each round (the median of those); then the admin tax: metered - bare per pair on memory.
import { ActivityFeed } from "../host/admin/feed.js";
import { lockMetrics, type LockMetrics } from "../host/admin/metrics.js";
import { LockService } from "../host/locking/service.js";
import type { Runtime } from "../abi/ops.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { fmt, guestLoop, INLINE, ROUNDS, startBenchGuests, TTL_MS } from "./harness.js";
import { median, table } from "./stats.js";

const OPS = Number(process.env.BENCH_METRICS_OPS ?? 20_000);
const CALLS = Number(process.env.BENCH_METRICS_CALLS ?? 4_000);

const SIDES = ["bare", "feed", "metered"] as const;
type Side = (typeof SIDES)[number];

/** One setup: a service on its own memory backend, what listens to it, and its guests. */
interface Twin {
  readonly locks: LockService;
  readonly feed: ActivityFeed | undefined;
  readonly metrics: LockMetrics | undefined;
  readonly guests: Partial<Record<Runtime, GuestInstance>>;
}

async function twin(side: Side): Promise<Twin> {
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const feed = side === "bare" ? undefined : new ActivityFeed(locks);
  const metrics = side === "metered" ? lockMetrics(locks, "bench") : undefined;
  const guests: Partial<Record<Runtime, GuestInstance>> = {};
  for (const runtime of INLINE ? (["worker", "inline"] as const) : (["worker"] as const)) {
    [guests[runtime]] = await startBenchGuests(locks, 1, runtime, {}, "bench", metrics?.guest(`bench-${runtime}`));
  }
  return { locks, feed, metrics, guests };
}

/** µs per op of `n` ops in a row, from wall time. */
async function usPerOp(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i++) await op(i);
  return ((performance.now() - started) * 1000) / n;
}

/** The paths measured on a twin: name -> one round's µs per op. */
function paths(t: Twin): Record<string, () => Promise<number>> {
  const { locks, guests } = t;
  const out: Record<string, () => Promise<number>> = {
    "memory try+release (service)": () =>
      usPerOp(OPS, async () => {
        await locks.release((await locks.tryLock("pair", { ttlMs: TTL_MS }))!);
      }),
    "memory contended try (service)": async () => {
      const held = (await locks.tryLock("busy", { ttlMs: TTL_MS }))!;
      try {
        return await usPerOp(OPS, () => locks.tryLock("busy", { ttlMs: TTL_MS }));
      } finally {
        await locks.release(held);
      }
    },
  };
  for (const [runtime, guest] of Object.entries(guests)) {
    // A loop of no pairs: the call is all there is.
    out[`host -> guest call (${runtime})`] = () => usPerOp(CALLS, () => guest.call("loop", [0, 1]));
    out[`guest try+release (${runtime})`] = async () => 1e6 / (await guestLoop(guest, OPS, 1)).opsPerSec;
  }
  return out;
}

export async function metricsBench(): Promise<void> {
  const twins = {} as Record<Side, Twin>;
  for (const side of SIDES) twins[side] = await twin(side);
  const runs = Object.fromEntries(SIDES.map((side) => [side, paths(twins[side])])) as Record<Side, Record<string, () => Promise<number>>>;
  const names = Object.keys(runs.bare);
  const us = Object.fromEntries(SIDES.map((side) => [side, Object.fromEntries(names.map((n) => [n, [] as number[]]))])) as Record<
    Side,
    Record<string, number[]>
  >;
  try {
    // One warm-up round, then ROUNDS interleaved: on every path the sides take turns, in a rotating order.
    for (let r = 0; r <= ROUNDS; r++) {
      for (const name of names) {
        for (let k = 0; k < SIDES.length; k++) {
          const side = SIDES[(r + k) % SIDES.length]!;
          const v = await runs[side][name]!();
          if (r > 0) us[side][name]!.push(v);
        }
      }
    }
  } finally {
    for (const t of Object.values(twins)) {
      t.metrics?.close();
      t.feed?.close();
      await Promise.all(Object.values(t.guests).map((g) => g.close()));
      await t.locks.close();
    }
  }
  console.log(`\nlockhost bench: the host's metrics on the hot paths (${ROUNDS} interleaved rounds, medians; µs per operation from wall time)\n`);
  const rows = names.map((name) => {
    const [bare, feed, metered] = SIDES.map((side) => us[side][name]!);
    const cost = median(feed!.map((v, i) => metered![i]! - v));
    return [name, fmt(median(bare!), 3), fmt(median(feed!), 3), fmt(median(metered!), 3), fmt(cost, 3), fmt(median(feed!.map((v, i) => metered![i]! / v)), 3)];
  });
  console.log(table(["path", "bare µs", "feed µs", "metered µs", "metrics cost µs", "metered/feed"], rows));
  // The admin tax: a host with [admin] (the feed and the metrics) over a bare service, per
  // try+release pair on memory, metered - bare taken in each round (target ≤ 1 µs).
  const pair = "memory try+release (service)";
  const bare = us.bare[pair]!;
  const admin = us.metered[pair]!;
  const tax = median(bare.map((v, i) => admin[i]! - v));
  console.log("\nlockhost bench: the admin tax, per try+release pair on memory (same run, per-round differences, median)\n");
  console.log(
    table(
      ["path", "bare µs", "admin µs", "tax µs", "admin/bare", "target"],
      [
        [
          "[admin] host vs bare service",
          fmt(median(bare), 3),
          fmt(median(admin), 3),
          fmt(tax, 3),
          fmt(median(bare.map((v, i) => admin[i]! / v)), 3),
          tax <= 1 ? "met (≤ 1 µs)" : "not met (≤ 1 µs)",
        ],
      ],
    ),
  );
}
