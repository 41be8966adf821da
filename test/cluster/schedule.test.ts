// The scheduler across real host processes: two `lockhost run` processes with the same
// require_global schedule on one Redis (and on one PostgreSQL); exactly one runs each tick.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dropPgTable, dropRedisPrefix } from "../support/cleanup.js";
import { databaseUrl, redisUrl } from "../support/servers.js";
import { guestWasm } from "../support/guests.js";
import { DIST_CLI } from "./cluster.js";

const RUN = randomUUID().slice(0, 8);
const ROOT = resolve(import.meta.dirname, "../..");
const RAN = "schedule lock taken; running";
const SKIPPED = "tick skipped: another node holds the schedule lock";

interface LogLine {
  readonly msg: string;
  readonly tickAtMs?: number;
  readonly schedule?: string;
}

/** A `lockhost run` process and everything it printed. */
class RunningHost {
  readonly lines: LogLine[] = [];
  readonly #child: ChildProcess;
  readonly #exit: Promise<number | null>;
  #buffer = "";
  #err = "";

  constructor(config: string, node: string) {
    this.#child = spawn(process.execPath, [DIST_CLI, "run", "--config", config], {
      cwd: ROOT,
      env: { ...process.env, LOCKHOST_NODE: node },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#exit = new Promise((r) => this.#child.once("exit", (code) => r(code)));
    this.#child.stdout!.on("data", (d: Buffer) => {
      this.#buffer += d.toString();
      const parts = this.#buffer.split("\n");
      this.#buffer = parts.pop()!;
      for (const p of parts) if (p.startsWith("{")) this.lines.push(JSON.parse(p) as LogLine);
    });
    this.#child.stderr!.on("data", (d: Buffer) => void (this.#err += d.toString()));
  }

  get exited(): boolean {
    return this.#child.exitCode !== null || this.#child.signalCode !== null;
  }

  ticks(msg: string, schedule = "report.run"): number[] {
    return this.lines.filter((l) => l.msg === msg && l.schedule === schedule).map((l) => l.tickAtMs!);
  }

  async stop(): Promise<number | null> {
    if (!this.exited) this.#child.kill("SIGTERM");
    return this.#exit;
  }

  describe(): string {
    return `${this.lines.map((l) => JSON.stringify(l)).join("\n")}\n${this.#err}`;
  }
}

async function oneRunnerPerTick(locking: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-schedule-"));
  const config = join(dir, "lockhost.toml");
  writeFileSync(
    config,
    `
[host]
node = "\${LOCKHOST_NODE}"
shutdown_timeout_ms = 2000
${locking}

[[plugins]]
name = "report"
wasm = "${join(ROOT, "plugins/guests/build/report.wasm")}"

[[scheduled]]
id = "report.run"
plugin = "report"
export = "run"
schedule = "300ms"
hint = "require_global"
ttl_ms = 10000
`,
  );
  const hosts = [new RunningHost(config, "node-a"), new RunningHost(config, "node-b")];
  try {
    // Run until both have seen at least eight ticks together.
    const deadline = Date.now() + 20_000;
    const shared = (): number[] => {
      const [a, b] = hosts.map((h) => new Set([...h.ticks(RAN), ...h.ticks(SKIPPED)]));
      return [...a!].filter((t) => b!.has(t));
    };
    while (shared().length < 8 && Date.now() < deadline && !hosts.some((h) => h.exited)) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const codes = await Promise.all(hosts.map((h) => h.stop()));
    const detail = hosts.map((h) => h.describe()).join("\n----\n");
    expect(codes, detail).toEqual([0, 0]);
    const both = shared();
    expect(both.length, detail).toBeGreaterThanOrEqual(8);
    const ranBy = (t: number): number => hosts.filter((h) => h.ticks(RAN).includes(t)).length;
    for (const t of both) expect(ranBy(t), `tick ${t}\n${detail}`).toBe(1);
    // No tick ran twice, including the ones only one host saw.
    const all = hosts.flatMap((h) => h.ticks(RAN));
    expect(new Set(all).size, detail).toBe(all.length);
    // Both nodes took part in the run.
    expect(
      hosts.every((h) => h.ticks(RAN).length > 0 || h.ticks(SKIPPED).length > 0),
      detail,
    ).toBe(true);
  } finally {
    await Promise.all(hosts.map((h) => h.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Issue 34's repro, scaled down: one plugin with a long job (2.5 s, keepalive) and a quick
 * schedule (short TTL) on two host processes. A quick tick that meets the plugin's only instance
 * busy is skipped (an overlap, no lock taken) rather than queued; every quick call is entered
 * with its lock held, and none runs on both hosts.
 */
async function quickBesideLong(locking: string): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-schedule-"));
  const config = join(dir, "lockhost.toml");
  writeFileSync(
    config,
    `
[host]
node = "\${LOCKHOST_NODE}"
shutdown_timeout_ms = 5000
${locking}

[[plugins]]
name = "jobs"
wasm = "${guestWasm("lifecycle")}"
call_timeout_ms = 30000

[[scheduled]]
id = "long"
plugin = "jobs"
export = "longJob"
schedule = "3s"
hint = "require_global"
ttl_ms = 2000
keepalive = true

[[scheduled]]
id = "quick"
plugin = "jobs"
export = "quickJob"
schedule = "500ms"
hint = "require_global"
ttl_ms = 1000
`,
  );
  const hosts = [new RunningHost(config, "node-a"), new RunningHost(config, "node-b")];
  const BUSY = "tick skipped: every instance of plugin jobs is busy (instances = 1); it took no lock. More instances let its schedules run beside each other";
  try {
    // Until two long jobs ran and quick ticks were skipped for them.
    const deadline = Date.now() + 40_000;
    const enough = (): boolean => hosts.flatMap((h) => h.ticks(RAN, "long")).length >= 2 && hosts.flatMap((h) => h.ticks(BUSY, "quick")).length >= 2;
    while (!enough() && Date.now() < deadline && !hosts.some((h) => h.exited)) await new Promise((r) => setTimeout(r, 100));
    const codes = await Promise.all(hosts.map((h) => h.stop()));
    const detail = hosts.map((h) => h.describe()).join("\n----\n");
    expect(codes, detail).toEqual([0, 0]);
    expect(enough(), detail).toBe(true);
    const entries = hosts.flatMap((h) => h.lines.flatMap((l) => /^guest: quick job start state (-?\d+)$/.exec(l.msg)?.slice(1) ?? []));
    expect(entries.length, detail).toBeGreaterThan(0);
    expect(
      entries.filter((state) => state !== "1"),
      detail,
    ).toEqual([]);
    expect(
      hosts.flatMap((h) => h.lines.filter((l) => l.schedule === "quick" && /lock lost|not run/.test(l.msg))),
      detail,
    ).toEqual([]);
    const ran = hosts.flatMap((h) => h.ticks(RAN, "quick"));
    expect(new Set(ran).size, detail).toBe(ran.length);
    // A skipped tick took no lock on the host that skipped it.
    for (const h of hosts) {
      const taken = new Set(h.ticks(RAN, "quick"));
      expect(
        h.ticks(BUSY, "quick").filter((t) => taken.has(t)),
        detail,
      ).toEqual([]);
    }
  } finally {
    await Promise.all(hosts.map((h) => h.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
}

describe("a require_global schedule across two host processes", () => {
  const prefix = `lockhost-test:sched-${RUN}:`;
  const table = `lockhost_test_sched_${RUN}`;
  afterAll(async () => {
    await dropRedisPrefix(redisUrl(), prefix);
    await dropPgTable(databaseUrl(), table);
  });

  it("runs each tick on exactly one of them on Redis", async () => {
    await oneRunnerPerTick(`[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}"\nkey_prefix = "${prefix}"`);
  }, 60_000);

  it("runs each tick on exactly one of them on PostgreSQL", async () => {
    await oneRunnerPerTick(`[locking]\nbackend = "pg"\n[locking.pg]\nurl = "${databaseUrl()}"\ntable = "${table}"`);
  }, 60_000);

  it("on Redis: a quick schedule beside a long job never runs without its lock; ticks that find the instance busy are skipped", async () => {
    await quickBesideLong(`[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}"\nkey_prefix = "${prefix}"`);
  }, 90_000);
});
