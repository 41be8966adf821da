// The process metrics under their standard names (process_*, nodejs_*: what ready-made Node.js
// dashboards read), on a real `lockhost run`'s /metrics and in an embedder's Host without an
// admin listener (Host.metrics, a prom-client Registry): two hosts in one process share one set
// of process metrics without a clash, and an embedder that made prom-client's default metrics
// in its own global registry merges the host's registry into it (a real process, as an
// embedder's program runs).
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PROCESS_SERIES, SERIES } from "../host/admin/metric-series.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { parsePrometheus, type Scrape } from "./support/prometheus.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");

/** What the usual Node.js dashboards chart, by these names exactly. */
const STANDARD = [
  "process_cpu_seconds_total",
  "process_cpu_user_seconds_total",
  "process_resident_memory_bytes",
  "process_start_time_seconds",
  "nodejs_eventloop_lag_seconds",
  "nodejs_heap_size_used_bytes",
  "nodejs_heap_size_total_bytes",
  "nodejs_version_info",
] as const;

/** Checks that `scrape` has the standard process series, labelled `labels`, and no lockhost_-prefixed copy of any. */
function hasStandardSeries(scrape: Scrape, labels: Readonly<Record<string, string>> = {}): void {
  for (const name of STANDARD) expect(scrape.has(name, labels), name).toBe(true);
  expect(scrape.value("process_resident_memory_bytes", labels)).toBeGreaterThan(0);
  expect(scrape.types.get("nodejs_gc_duration_seconds")).toBe("histogram");
  expect([...scrape.types.keys()].filter((n) => /^lockhost_(process|nodejs)_/.test(n))).toEqual([]);
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "lockhost-process-metrics-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("`lockhost run`'s /metrics", () => {
  const running: ChildProcess[] = [];
  afterEach(() => {
    for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });

  it("shows the process metrics under their standard names, beside lockhost's series", async () => {
    const file = join(dir, "run.toml");
    await writeFile(
      file,
      `[host]\nnode = "metrics-run"\n[locking]\nbackend = "memory"\n[admin]\nlisten = "127.0.0.1:0"\n` +
        `[[plugins]]\nname = "cron"\nwasm = "${guestWasm("cron")}"\n[[scheduled]]\nid = "tick"\nplugin = "cron"\nexport = "tick"\nschedule = "1h"\n`,
    );
    const env = { ...process.env, LOCKHOST_NODE_NOTICE: "0" };
    const child = spawn(process.execPath, [cli, "run", "--config", file], { cwd: root, stdio: ["ignore", "pipe", "pipe"], env });
    running.push(child);
    let out = "";
    child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
    const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`no "lockhost host started" line within 60 s:\n${out}`)), 60_000);
      const look = (): void => {
        for (const line of out.split("\n")) {
          if (!line.startsWith("{")) continue;
          const entry = JSON.parse(line) as { msg: string; admin?: string };
          if (entry.msg === "lockhost host started" && entry.admin) {
            clearTimeout(deadline);
            resolve(entry.admin);
            return;
          }
        }
        if (child.exitCode !== null) reject(new Error(`lockhost run exited ${child.exitCode}:\n${out}`));
        else setTimeout(look, 100);
      };
      look();
    });
    const res = await fetch(`${url}/metrics`);
    expect(res.status).toBe(200);
    const scrape = parsePrometheus(await res.text());
    hasStandardSeries(scrape, { node: "metrics-run", backend: "memory" });
    expect(scrape.has(SERIES.backendUp.name, { node: "metrics-run" })).toBe(true);
    expect(scrape.has(SERIES.locksHeld.name)).toBe(true);
    child.kill("SIGTERM");
    expect(await exit).toBe(0);
  });
});

describe("Host.metrics, without an admin listener", () => {
  const hosts: Host[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
  });

  async function start(node: string, backend: MemoryBackend, extra: Partial<ConfigInput> = {}): Promise<Host> {
    const config = resolveConfig({ host: { node }, locking: { backend: "memory" }, ...extra } as ConfigInput);
    const host = await Host.start(config, { logger: captureLogger().logger, backend });
    hosts.push(host);
    return host;
  }

  it("is a registry whose text has the lock, guest, schedule and backend series and the process's", async () => {
    const host = await start("embedded", new MemoryBackend(), {
      plugins: [{ name: "locker", wasm: guestWasm("locker") }],
    } as Partial<ConfigInput>);
    expect(host.admin).toBeUndefined();
    await host.locks.release((await host.locks.tryLock("job", { ttlMs: 5_000 }))!);
    expect(await host.call("locker", "add", [2, 3])).toBe(5);
    const scrape = parsePrometheus(await host.metrics.metrics());
    expect(scrape.value(SERIES.acquisitions.name, { node: "embedded", backend: "memory", kind: "mutex", plugin: "host" })).toBe(1);
    expect(scrape.value(SERIES.guestCalls.name, { plugin: "locker", export: "add", outcome: "ok" })).toBe(1);
    expect(scrape.value(SERIES.backendUp.name, { node: "embedded" })).toBe(1);
    expect(scrape.has(SERIES.locksHeld.name)).toBe(true);
    hasStandardSeries(scrape, { node: "embedded", backend: "memory" });
    // Every row of the table shows, the process's included (those prom-client makes on Linux).
    for (const row of PROCESS_SERIES) expect(scrape.types.get(row.name), row.name).toBe(row.type);
  });

  it("two hosts in one process: each its own lock series, both the one set of process metrics, no clash", async () => {
    const backend = new MemoryBackend();
    const a = await start("node-a", backend);
    const b = await start("node-b", backend);
    await a.locks.release((await a.locks.tryLock("job", { ttlMs: 5_000 }))!);
    const [sa, sb] = [parsePrometheus(await a.metrics.metrics()), parsePrometheus(await b.metrics.metrics())];
    expect(sa.value(SERIES.acquisitions.name)).toBe(1);
    expect(sb.value(SERIES.acquisitions.name)).toBe(0);
    for (const [scrape, node] of [
      [sa, "node-a"],
      [sb, "node-b"],
    ] as const) {
      hasStandardSeries(scrape, { node });
      expect(
        scrape.samples.every((s) => s.labels.node === node),
        node,
      ).toBe(true);
    }
    // One set of process metrics for the process: the same metric in both registries.
    expect(a.metrics.getSingleMetric("process_cpu_seconds_total")).toBe(b.metrics.getSingleMetric("process_cpu_seconds_total"));
    expect(a.metrics.getSingleMetric(SERIES.locksHeld.name)).not.toBe(b.metrics.getSingleMetric(SERIES.locksHeld.name));
  });
});

describe("an embedder's program that serves its own metrics", () => {
  // The packages lockhost's build resolves, as an embedder's install would share them.
  const from = (pkg: string): string => JSON.stringify(pathToFileURL(createRequire(join(root, "package.json")).resolve(pkg)).href);

  it("merges Host.metrics into a registry where it made prom-client's default metrics itself", async () => {
    const program = join(dir, "embedder.mjs");
    await writeFile(
      program,
      [
        `const { collectDefaultMetrics, Counter, register, Registry } = await import(${from("prom-client")});`,
        `const { pino } = await import(${from("pino")});`,
        `const { Host, resolveConfig } = await import(${JSON.stringify(pathToFileURL(join(root, "dist/host/index.js")).href)});`,
        "collectDefaultMetrics();",
        'new Counter({ name: "app_jobs_total", help: "Jobs the app ran." }).inc(3);',
        'const host = await Host.start(resolveConfig({ host: { node: "app-1" }, locking: { backend: "memory" } }), { logger: pino({ level: "silent" }) });',
        'await host.locks.release(await host.locks.tryLock("job", { ttlMs: 5000 }));',
        "const merged = Registry.merge([register, host.metrics]);",
        "process.stdout.write(await merged.metrics());",
        "await host.stop();",
      ].join("\n"),
    );
    const { stdout } = await promisify(execFile)(process.execPath, [program], { cwd: root, timeout: 60_000 });
    const scrape = parsePrometheus(stdout);
    expect(scrape.value("app_jobs_total")).toBe(3);
    expect(scrape.value(SERIES.acquisitions.name)).toBe(1);
    hasStandardSeries(scrape);
  });
});
