// The admin listener's /metrics on a real Host with real guests, on memory and on Redis: guests
// that trap, time out and restart, waits that time out and that win, every lock kind, a loss,
// schedule runs, skips and a failure, then a scrape over HTTP read back series by series. Every
// series is a row of the series table (and every row shows), every label value is of a bounded
// set, and no lock's name ever reaches the text.
import { collectDefaultMetrics, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { allSeries, PROCESS_SERIES, SERIES, type SeriesRow } from "../host/admin/metric-series.js";
import { MAX_PLUGIN_LABELS, OTHER_PLUGIN } from "../host/admin/lock-meter.js";
import { lockMetrics } from "../host/admin/metrics.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { ALL_LOCK_EVENT_TYPES } from "../host/locking/events.js";
import { LockService } from "../host/locking/service.js";
import { LOCK_KINDS } from "../kit/kinds.js";
import type { LockBackend } from "../kit/backend.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { GUEST_RUNTIMES } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { parsePrometheus, type Scrape } from "./support/prometheus.js";
import { startRedisServer, type TestServer } from "./support/servers.js";
import { until } from "./support/until.js";

const hosts: Host[] = [];
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
  await Promise.all(servers.splice(0).map((s) => s.stop()));
});

/** The plugins and schedules of the exercise: every one a bounded label value. */
const PLUGINS = ["locker", "life", "cron"] as const;
const SCHEDULES = ["tick-job", "oom-job"] as const;

function config(node: string, locking: ConfigInput["locking"]): ConfigInput {
  return {
    host: { node },
    locking,
    admin: { listen: "127.0.0.1:0" },
    plugins: [
      // A small memory, so exhaustMemory traps soon; a short time limit, so holdSpin is stopped soon.
      { name: "locker", wasm: guestWasm("locker"), callTimeoutMs: 500, memoryLimitMib: 2 },
      { name: "life", wasm: guestWasm("lifecycle") },
      { name: "cron", wasm: guestWasm("cron") },
    ],
    scheduled: [
      { id: "tick-job", plugin: "cron", export: "tick", schedule: "1h", hint: "require_global" },
      { id: "oom-job", plugin: "locker", export: "exhaustMemory", schedule: "1h", hint: "node_local" },
    ],
  } as ConfigInput;
}

async function start(input: ConfigInput, backend?: LockBackend): Promise<Host> {
  const host = await Host.start(resolveConfig(input), { logger: captureLogger().logger, ...(backend && { backend }) });
  hosts.push(host);
  return host;
}

async function scrape(host: Host): Promise<{ text: string; metrics: Scrape }> {
  const res = await fetch(`${host.admin!.url}/metrics`);
  expect(res.status).toBe(200);
  const text = await res.text();
  return { text, metrics: parsePrometheus(text) };
}

/** The host-side keys of the exercise: distinctive, so that finding one in the text means a lock name leaked. */
const KEYS = { rw: "orders/4711-secret", semaphore: "pool/db-primary-secret", fair: "queue/fair-secret", leader: "election-secret", lost: "lost-me-secret" };

/**
 * Drives `host` through everything the metrics count; `outage` makes the backend fail the next
 * schedule lock (and, on a real server, stay down). Returns every lock name the service saw.
 */
async function exercise(host: Host, outage: () => Promise<void>): Promise<Set<string>> {
  const names = new Set<string>();
  host.locks.onEvent((e) => void ("name" in e && names.add(e.name)), ALL_LOCK_EVENT_TYPES);

  // Guests: calls that return, a trap, a time limit; each replaced instance is a restart.
  expect(await host.call("locker", "add", [2, 3])).toBe(5);
  await expect(host.call("locker", "holdTrap", [1, 5_000])).rejects.toMatchObject({ code: "GUEST_TRAP" });
  await expect(host.call("locker", "holdSpin", [2, 5_000])).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
  expect(await host.call("locker", "add", [1, 1])).toBe(2);

  // Waits: one that times out, one that wins when the holder lets go.
  const held = (await host.locks.tryLock("k5", { ttlMs: 10_000, scope: { plugin: "life" } }))!;
  expect(await host.call("life", "acquireKey", [5, 5_000, 150, 0])).toBeLessThan(0);
  setTimeout(() => void host.locks.release(held), 200);
  expect(await host.call("life", "acquireKey", [5, 5_000, 5_000, 0])).toBeGreaterThan(0);

  // Every kind, from the host's side; and a lock lost to a force-release.
  const reader = (await host.locks.tryLock(KEYS.rw, { ttlMs: 10_000, kind: "rw", mode: "shared" }))!;
  const permit = (await host.locks.tryLock(KEYS.semaphore, { ttlMs: 10_000, kind: "semaphore", permits: 2 }))!;
  const fair = (await host.locks.tryLock(KEYS.fair, { ttlMs: 10_000, fair: true }))!;
  expect(await host.locks.tryLock(KEYS.fair, { ttlMs: 10_000, fair: true })).toBeNull();
  for (const lease of [reader, permit, fair]) await host.locks.release(lease);
  const leadership = await host.locks.campaign(KEYS.leader, { ttlMs: 10_000 });
  await leadership.resign();
  const lost = (await host.locks.tryLock(KEYS.lost, { ttlMs: 10_000 }))!;
  expect(await host.locks.forceRelease({ name: lost.name })).toBe(1);

  // Schedules: a run under the schedule's lock; the next tick finds it held (parked past its
  // tick); a job that traps; and a tick the backend fails.
  expect(await host.scheduler.runTick("tick-job")).toBe("ran");
  expect(await host.scheduler.runTick("tick-job")).toBe("skipped_contended");
  expect(await host.scheduler.runTick("oom-job")).toBe("failed");
  await outage();
  expect(await host.scheduler.runTick("tick-job")).toBe("skipped_error");
  return names;
}

/** The values each bounded label may take in the exercise's scrape. */
function allowedLabels(host: Host): Record<string, ReadonlySet<string>> {
  const exports = new Set(PLUGINS.flatMap((p) => [...host.guest(p).exportNames(), "lockhost_on_lost"]));
  return {
    node: new Set([host.config.host.node]),
    backend: new Set([host.locks.backendName]),
    kind: new Set<string>(LOCK_KINDS),
    // "lockhost": the host's own locks (its node name's, on a distributed backend).
    plugin: new Set([...PLUGINS, "host", "lockhost", OTHER_PLUGIN]),
    schedule: new Set(SCHEDULES),
    export: exports,
    result: new Set(["ok", "failed"]),
    reason: new Set(["trap", "timeout", "crash"]),
  };
}

const OUTCOMES: Readonly<Record<string, readonly string[]>> = {
  [SERIES.acquireWait.name]: ["acquired", "timeout", "failed"],
  [SERIES.holdTime.name]: ["released", "lost"],
  [SERIES.guestCalls.name]: ["ok", "trap", "timeout", "crash", "closed", "error"],
  [SERIES.scheduleTicks.name]: ["ran", "failed", "skipped_contended", "skipped_overlap", "skipped_error", "skipped_lost"],
  [SERIES.scheduleRunTime.name]: ["ran", "failed"],
};

/** Each histogram's buckets are cumulative, in order of their bounds, and its +Inf bucket is its count. */
function checkHistograms(metrics: Scrape): void {
  const byLabelSet = new Map<string, { le: number; value: number }[]>();
  for (const s of metrics.samples) {
    if (!s.name.endsWith("_bucket") || metrics.types.get(s.family) !== "histogram") continue;
    const { le, ...rest } = s.labels;
    const key = `${s.family}${JSON.stringify(rest)}`;
    byLabelSet.set(key, [...(byLabelSet.get(key) ?? []), { le: le === "+Inf" ? Infinity : Number(le), value: s.value }]);
  }
  expect(byLabelSet.size).toBeGreaterThan(0);
  for (const [key, buckets] of byLabelSet) {
    expect(
      buckets.map((b) => b.le),
      key,
    ).toEqual([...buckets.map((b) => b.le)].sort((x, y) => x - y));
    expect(
      buckets.map((b) => b.value),
      key,
    ).toEqual([...buckets.map((b) => b.value)].sort((x, y) => x - y));
    const family = key.slice(0, key.indexOf("{"));
    const labels = JSON.parse(key.slice(family.length)) as Record<string, string>;
    expect(buckets.at(-1), key).toEqual({ le: Infinity, value: metrics.value(`${family}_count`, labels) });
  }
}

/** Every family is a row of the table, with its type; every sample has the row's labels, each of a bounded set. */
function checkAgainstTable(host: Host, metrics: Scrape): void {
  const rows = new Map<string, SeriesRow>(allSeries().map((r) => [r.name, r]));
  const allowed = allowedLabels(host);
  for (const [family, type] of metrics.types) {
    expect(rows.get(family)?.type, `${family} is a row of the series table`).toBe(type);
  }
  for (const row of Object.values(SERIES)) expect(metrics.types.get(row.name), row.name).toBe(row.type);
  for (const sample of metrics.samples) {
    const row = rows.get(sample.family)!;
    const own = sample.name.endsWith("_bucket") && row.type === "histogram" ? [...row.labels, "le"] : row.labels;
    expect(Object.keys(sample.labels).sort(), sample.name).toEqual([...own, "node", "backend"].sort());
    if (row.source === "process") continue;
    for (const [label, value] of Object.entries(sample.labels)) {
      if (label === "le") continue;
      const values = label === "outcome" ? new Set(OUTCOMES[row.name]) : allowed[label];
      expect(values, `${row.name}: label ${label} is bounded`).toBeDefined();
      expect(values!.has(value), `${row.name}{${label}="${value}"}`).toBe(true);
    }
  }
}

const BACKENDS: readonly (readonly [
  string,
  () => Promise<{ locking: ConfigInput["locking"]; backend?: LockBackend; outage: (host: Host) => Promise<void> }>,
])[] = [
  [
    "memory",
    async () => {
      const { backend, faults } = faultyBackend(new MemoryBackend());
      // The next acquisition's reply is lost: the schedule lock cannot be taken.
      return { locking: { backend: "memory" }, backend, outage: async () => void (faults.loseAcquireReplies = 1) };
    },
  ],
  [
    "redis",
    async () => {
      const redis = await startRedisServer();
      servers.push(redis);
      return {
        locking: { backend: "redis", redis: { url: redis.url, commandTimeoutMs: 300 } },
        outage: async () => redis.kill(),
      };
    },
  ],
];

describe.each(BACKENDS)("/metrics on %s", (backendName, setUp) => {
  it("counts guest calls, traps, time limits and restarts, lock activity by kind and plugin, waits, holds and schedule runs, from a real scrape", async () => {
    const { locking, backend, outage } = await setUp();
    const host = await start(config(`metrics-${backendName}`, locking), backend);
    const names = await exercise(host, () => outage(host));
    if (backendName === "redis")
      await until("the host sees the backend down", 10_000, async () => (await scrape(host)).metrics.value("lockhost_backend_up") === 0);
    const { text, metrics } = await scrape(host);
    const v = (row: SeriesRow | string, labels: Record<string, string> = {}): number => metrics.value(typeof row === "string" ? row : row.name, labels);

    // Guests.
    expect(v(SERIES.guestCalls, { plugin: "locker", export: "add", outcome: "ok" })).toBe(2);
    expect(v(SERIES.guestCalls, { plugin: "locker", export: "holdTrap", outcome: "trap" })).toBe(1);
    expect(v(SERIES.guestCalls, { plugin: "locker", export: "holdSpin", outcome: "timeout" })).toBe(1);
    expect(v(SERIES.guestCalls, { plugin: "locker", export: "exhaustMemory", outcome: "trap" })).toBe(1);
    expect(v(SERIES.guestTraps, { plugin: "locker" })).toBe(2);
    expect(v(SERIES.guestTimeouts, { plugin: "locker" })).toBe(1);
    expect(v(SERIES.guestRestarts, { plugin: "locker", reason: "trap" })).toBe(2);
    expect(v(SERIES.guestRestarts, { plugin: "locker", reason: "timeout" })).toBe(1);
    // A plugin that never failed shows its zeros, for alerts on their rate.
    expect(metrics.has(SERIES.guestTraps.name, { plugin: "cron" })).toBe(true);
    expect(v(SERIES.guestTraps, { plugin: "cron" })).toBe(0);
    expect(v(`${SERIES.guestCallTime.name}_count`, { plugin: "locker", export: "add" })).toBe(2);
    // The time limit is 500 ms: that call took at least that long.
    expect(v(`${SERIES.guestCallTime.name}_sum`, { plugin: "locker", export: "holdSpin" })).toBeGreaterThanOrEqual(0.5);
    expect(v(`${SERIES.guestCallTime.name}_bucket`, { plugin: "locker", export: "holdSpin", le: "0.25" })).toBe(0);

    // Waits: one timed out after ~150 ms, one won after the ~200 ms the holder kept the key.
    const wait = (outcome: string, part: string): number => v(`${SERIES.acquireWait.name}_${part}`, { kind: "mutex", plugin: "life", outcome });
    expect([wait("timeout", "count"), wait("acquired", "count")]).toEqual([1, 1]);
    expect(wait("timeout", "sum")).toBeGreaterThanOrEqual(0.1);
    expect(v(SERIES.waitTimeouts, { kind: "mutex", plugin: "life" })).toBe(1);
    expect(v(SERIES.contended, { kind: "mutex", plugin: "life" })).toBeGreaterThanOrEqual(2);

    // Every kind, labelled by its name in the kind table.
    for (const kind of ["rw", "semaphore", "fair", "leader"]) {
      expect(v(SERIES.acquisitions, { kind, plugin: "host" }), kind).toBe(1);
      expect(v(SERIES.releases, { kind, plugin: "host" }), kind).toBe(1);
      expect(v(`${SERIES.holdTime.name}_count`, { kind, plugin: "host", outcome: "released" }), kind).toBe(1);
    }
    expect(v(SERIES.contended, { kind: "fair", plugin: "host" })).toBe(1);
    expect(v(SERIES.lost, { kind: "mutex", plugin: "host" })).toBe(1);
    expect(v(`${SERIES.holdTime.name}_count`, { kind: "mutex", plugin: "host", outcome: "lost" })).toBe(1);
    // A guest's lock, released when its call returned (and those a trap or a time limit let go).
    expect(v(SERIES.acquisitions, { kind: "mutex", plugin: "locker" })).toBe(2);
    expect(v(SERIES.releases, { kind: "mutex", plugin: "locker" })).toBe(2);

    // Schedules.
    const ticks = (schedule: string, outcome: string): number => v(SERIES.scheduleTicks, { schedule, outcome });
    expect([ticks("tick-job", "ran"), ticks("tick-job", "skipped_contended"), ticks("tick-job", "skipped_error"), ticks("oom-job", "failed")]).toEqual([
      1, 1, 1, 1,
    ]);
    expect(v(`${SERIES.scheduleRunTime.name}_count`, { schedule: "tick-job", outcome: "ran" })).toBe(1);
    expect(v(`${SERIES.scheduleRunTime.name}_count`, { schedule: "oom-job", outcome: "failed" })).toBe(1);
    expect(v(SERIES.acquisitions, { kind: "mutex", plugin: "cron" })).toBe(1);

    // The backend, and the process.
    expect(v(SERIES.backendUp)).toBe(backendName === "redis" ? 0 : 1);
    for (const name of ["process_cpu_user_seconds_total", "process_resident_memory_bytes", "nodejs_heap_size_used_bytes"]) {
      expect(v(name, { node: host.config.host.node }), name).toBeGreaterThan(0);
    }
    expect(metrics.has("nodejs_eventloop_lag_seconds")).toBe(true);

    checkAgainstTable(host, metrics);
    checkHistograms(metrics);
    // No lock's name, nor a host-side key, anywhere in the text.
    expect(names.size).toBeGreaterThanOrEqual(8);
    for (const name of [...names, ...Object.values(KEYS)]) expect(text, name).not.toContain(name);
  });
});

describe("/metrics", () => {
  it("two hosts in one process each show their own series and the process's, labelled with their node", async () => {
    const backend = new MemoryBackend();
    const one = { locking: { backend: "memory" }, admin: { listen: "127.0.0.1:0" } } as ConfigInput;
    const a = await start({ ...one, host: { node: "node-a" } }, backend);
    const b = await start({ ...one, host: { node: "node-b" } }, backend);
    await a.locks.release((await a.locks.tryLock("shared-secret", { ttlMs: 5_000 }))!);
    const [sa, sb] = [(await scrape(a)).metrics, (await scrape(b)).metrics];
    expect(sa.value(SERIES.acquisitions.name, { node: "node-a" })).toBe(1);
    expect(sb.value(SERIES.acquisitions.name)).toBe(0);
    for (const [m, node] of [
      [sa, "node-a"],
      [sb, "node-b"],
    ] as const) {
      expect(m.has("process_cpu_user_seconds_total", { node, backend: "memory" }), node).toBe(true);
      expect(
        m.samples.every((s) => s.labels.node === node),
        node,
      ).toBe(true);
    }
  });

  it("lists in its table exactly the process metrics prom-client makes", async () => {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry });
    const made = (await registry.getMetricsAsJSON()).map((m) => [m.name, m.type] as const);
    expect(new Map(made)).toEqual(new Map(PROCESS_SERIES.map((r) => [r.name, r.type])));
  });

  it(`counts the lock series of at most ${MAX_PLUGIN_LABELS} plugins by name; the others' as "${OTHER_PLUGIN}"`, async () => {
    const locks = new LockService(new MemoryBackend(), { node: "n" });
    const metrics = lockMetrics(locks, "n");
    try {
      for (let i = 0; i < MAX_PLUGIN_LABELS + 5; i++) await locks.release((await locks.tryLock("k", { ttlMs: 5_000, plugin: `tenant-${i}` }))!);
      const scraped = parsePrometheus(await metrics.render());
      const plugins = new Set(scraped.samples.filter((s) => s.family === SERIES.acquisitions.name).map((s) => s.labels.plugin));
      expect(plugins.size).toBe(MAX_PLUGIN_LABELS + 1);
      expect(scraped.value(SERIES.acquisitions.name, { plugin: OTHER_PLUGIN })).toBe(5);
      expect(scraped.value(SERIES.acquisitions.name)).toBe(MAX_PLUGIN_LABELS + 5);
    } finally {
      metrics.close();
      await locks.close();
    }
  });

  it.each(GUEST_RUNTIMES)("counts a trap and its restart in the %s runtime", async (runtime) => {
    const host = await start({
      locking: { backend: "memory" },
      admin: { listen: "127.0.0.1:0" },
      plugins: [{ name: "locker", wasm: guestWasm("locker"), isolation: runtime }],
    } as ConfigInput);
    await expect(host.call("locker", "holdTrap", [1, 5_000])).rejects.toMatchObject({ code: "GUEST_TRAP" });
    expect(await host.call("locker", "add", [2, 2])).toBe(4);
    const { metrics } = await scrape(host);
    expect(metrics.value(SERIES.guestTraps.name, { plugin: "locker" })).toBe(1);
    expect(metrics.value(SERIES.guestRestarts.name, { plugin: "locker", reason: "trap" })).toBe(1);
    expect(metrics.value(SERIES.guestCalls.name, { plugin: "locker", export: "holdTrap", outcome: "trap" })).toBe(1);
    expect(metrics.value(SERIES.guestCalls.name, { plugin: "locker", export: "add", outcome: "ok" })).toBe(1);
    expect(metrics.value(SERIES.releases.name, { kind: "mutex", plugin: "locker" })).toBe(1);
  });
});
