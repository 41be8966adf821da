// Reload without a gap, across real host processes: two `lockhost run` on one Redis, a `1s`
// require_global schedule, ten reloads of both hosts (SIGHUP and POST /reload in turn), one
// swapping the plugin's .wasm for another build, one adding a schedule, one changing it, one
// removing it. Ticks are counted from the guest's own lines (one per job, naming its build and
// export), each tied to the tick of the host's "schedule lock taken" line it follows.
//
// What "no tick missed" means here: the scheduler fires a schedule's tick at each whole second
// on every host that runs the schedule, and one host runs it under its lock. A host's timer that
// fires more than a period late (its event loop was blocked) does not fire the ticks it slept
// through, and says which ("ticks not fired on this node"). So: every whole second T from the
// first tick any host fired to the last is run exactly once in the cluster, unless every host that
// ran the schedule around T said it did not fire T; and no tick anywhere runs twice.
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dropRedisPrefix } from "../support/cleanup.js";
import { guestWasm } from "../support/guests.js";
import { freePort, redisUrl } from "../support/servers.js";
import { sleep } from "../support/until.js";
import { DIST_CLI } from "./cluster.js";

const RUN = randomUUID().slice(0, 8);
const ROOT = resolve(import.meta.dirname, "../..");
const TOKEN = `reload-test-token-${RUN}`;
const RAN = "schedule lock taken; running";
const SKIPPED = "tick skipped: another node holds the schedule lock";
const NOT_FIRED = "ticks not fired on this node";

interface LogLine {
  readonly level: number;
  readonly msg: string;
  readonly schedule?: string;
  readonly tickAtMs?: number;
  readonly fence?: number;
  readonly plugin?: string;
  readonly firstTickAtMs?: number;
  readonly lastTickAtMs?: number;
}

/** One `lockhost run` process and what it printed, in order. */
class RunningHost {
  readonly lines: LogLine[] = [];
  readonly child: ChildProcess;
  readonly admin: string;
  readonly #exit: Promise<number | null>;
  #buffer = "";
  #err = "";

  constructor(config: string, node: string, port: number) {
    this.admin = `http://127.0.0.1:${port}`;
    this.child = spawn(process.execPath, [DIST_CLI, "run", "--config", config], {
      cwd: ROOT,
      env: { ...process.env, LOCKHOST_NODE: node, LOCKHOST_ADMIN_LISTEN: `127.0.0.1:${port}`, LOCKHOST_ADMIN_TOKEN: TOKEN },
      stdio: ["ignore", "pipe", "pipe"],
    });
    this.#exit = new Promise((r) => this.child.once("exit", (code) => r(code)));
    this.child.stdout!.on("data", (d: Buffer) => {
      this.#buffer += d.toString();
      const parts = this.#buffer.split("\n");
      this.#buffer = parts.pop()!;
      for (const p of parts) if (p.startsWith("{")) this.lines.push(JSON.parse(p) as LogLine);
    });
    this.child.stderr!.on("data", (d: Buffer) => void (this.#err += d.toString()));
  }

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null;
  }

  count(prefix: string): number {
    return this.lines.filter((l) => l.msg.startsWith(prefix)).length;
  }

  /** Waits until `n` lines start with `prefix` (fails at once on a refused reload or an exit). */
  async until(prefix: string, n: number): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (this.count(prefix) < n) {
      if (this.exited || Date.now() > deadline || this.count("reload refused") > 0) throw new Error(`no ${n}th "${prefix}"\n${this.describe()}`);
      await sleep(50);
    }
  }

  /** The fire times this host fired schedule `id` at (ran it or found another node holding its lock). */
  fired(id: string): number[] {
    return this.lines.filter((l) => (l.msg === RAN || l.msg === SKIPPED) && l.schedule === id).map((l) => l.tickAtMs!);
  }

  /** Whether this host said it did not fire tick `t` of schedule `id`. */
  notFired(id: string, t: number): boolean {
    return this.lines.some((l) => l.msg.startsWith(NOT_FIRED) && l.schedule === id && l.firstTickAtMs! <= t && t <= l.lastTickAtMs!);
  }

  async stop(): Promise<number | null> {
    if (!this.exited) this.child.kill("SIGTERM");
    return this.#exit;
  }

  describe(): string {
    return `${this.lines.map((l) => JSON.stringify(l)).join("\n")}\n${this.#err}`;
  }
}

/** A guest line: "guest: tick build=<b> schedule=<export> held=<yes|no> call=<n>". */
const TICK_LINE = /^guest: tick build=(\w+) schedule=(\w+) held=(\w+) call=(\d+)$/;

describe("reload across two host processes on Redis", () => {
  const prefix = `lockhost-test:reload-${RUN}:`;
  afterAll(async () => {
    await dropRedisPrefix(redisUrl(), prefix);
  });

  it("ten reloads (SIGHUP and POST /reload in turn; a new .wasm build, a schedule added, changed and removed): each 1s tick runs exactly once", async () => {
    const dir = await mkdtemp(join(tmpdir(), "lockhost-reload-cluster-"));
    const config = join(dir, "lockhost.toml");
    const wasm = join(dir, "ticker.wasm");
    await copyFile(guestWasm("ticker"), wasm);
    const head = `[host]
node = "\${LOCKHOST_NODE}"
shutdown_timeout_ms = 3000
[locking]
backend = "redis"
[locking.redis]
url = "${redisUrl()}"
key_prefix = "${prefix}"
[admin]
listen = "\${LOCKHOST_ADMIN_LISTEN}"
token = "\${LOCKHOST_ADMIN_TOKEN}"
[[plugins]]
name = "ticker"
wasm = "${wasm}"
[[scheduled]]
id = "run"
plugin = "ticker"
export = "run"
schedule = "1s"
ttl_ms = 10000
`;
    const other = (ttlMs: number): string => `[[scheduled]]\nid = "other"\nplugin = "ticker"\nexport = "other"\nschedule = "1s"\nttl_ms = ${ttlMs}\n`;
    await writeFile(config, head);
    const hosts = [new RunningHost(config, "reload-a", await freePort()), new RunningHost(config, "reload-b", await freePort())];
    const detail = (): string => hosts.map((h) => h.describe()).join("\n----\n");
    try {
      for (const h of hosts) await h.until("admin listener started", 1);
      while (!hosts.some((h) => h.fired("run").length >= 2)) {
        if (hosts.some((h) => h.exited)) throw new Error(detail());
        await sleep(100);
      }
      // Each step: the file's next content, then both hosts reload it, one after the other.
      const steps: (() => Promise<void>)[] = [
        async () => undefined,
        () => writeFile(config, head + other(10_000)),
        async () => undefined,
        () => copyFile(guestWasm("ticker-b"), wasm),
        () => writeFile(config, head + other(20_000)),
        async () => undefined,
        () => writeFile(config, head),
        async () => undefined,
        async () => undefined,
        async () => undefined,
      ];
      for (const [i, edit] of steps.entries()) {
        await edit();
        for (const h of hosts) {
          if (i % 2 === 0) {
            h.child.kill("SIGHUP");
          } else {
            const res = await fetch(`${h.admin}/reload`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
            expect(res.status, `${await res.clone().text()}\n${detail()}`).toBe(200);
          }
          await h.until("reload: applied", i + 1);
        }
        await sleep(1_300);
      }
      await sleep(1_500);
    } finally {
      const codes = await Promise.all(hosts.map((h) => h.stop()));
      await rm(dir, { recursive: true, force: true });
      expect(codes, detail()).toEqual([0, 0]);
    }
    const all = detail();
    for (const h of hosts) {
      expect(h.count("reload: applied"), all).toBe(10);
      expect(h.count("reload refused"), all).toBe(0);
    }

    // The guest's lines, each tied to its tick: a schedule's ticks never overlap on a host (one
    // runs at a time, across a reload too), so its k-th line on a host is the job of the k-th tick
    // that host ran under the schedule's lock, and comes after that lock was taken.
    const runs: { host: number; build: string; schedule: string; call: number; tickAtMs: number; index: number }[] = [];
    for (const [host, h] of hosts.entries()) {
      for (const id of ["run", "other"]) {
        const taken = h.lines.flatMap((l, index) => (l.msg === RAN && l.schedule === id ? [{ tickAtMs: l.tickAtMs!, index }] : []));
        const lines = h.lines.flatMap((l, index) => {
          const m = TICK_LINE.exec(l.msg);
          return m && m[2] === id ? [{ m, index }] : [];
        });
        // Every tick the host ran under its lock wrote its line, with the lock held.
        expect(lines.length, `${id} on host ${host}\n${all}`).toBe(taken.length);
        lines.forEach(({ m, index }, k) => {
          expect(index, all).toBeGreaterThan(taken[k]!.index);
          expect(m[3], all).toBe("yes");
          runs.push({ host, build: m[1]!, schedule: id, call: Number(m[4]), tickAtMs: taken[k]!.tickAtMs, index });
        });
      }
    }

    for (const id of ["run", "other"]) {
      const ran = new Map<number, number>();
      for (const r of runs.filter((x) => x.schedule === id)) ran.set(r.tickAtMs, (ran.get(r.tickAtMs) ?? 0) + 1);
      // No tick twice, anywhere.
      for (const [t, n] of ran) expect(n, `${id} tick ${t} ran ${n} times\n${all}`).toBe(1);
      const fired = hosts.map((h) => h.fired(id));
      const every = fired.flat();
      expect(every.length, `${id} never fired\n${all}`).toBeGreaterThan(5);
      const first = Math.min(...every);
      const last = Math.max(...every);
      let missed = 0;
      for (let t = first; t <= last; t += 1_000) {
        if (ran.get(t) === 1) continue;
        // Allowed only when every host that ran the schedule around t said it slept through t.
        const around = hosts.filter((_, i) => fired[i]!.length > 0 && Math.min(...fired[i]!) <= t && t <= Math.max(...fired[i]!));
        expect(
          around.every((h) => h.notFired(id, t)),
          `${id} tick ${t} (${new Date(t).toISOString()}) ran on no host\n${all}`,
        ).toBe(true);
        missed++;
      }
      expect(missed, all).toBeLessThanOrEqual(2);
    }

    // The new build took over on each host at its reload, and its instances started afresh; the
    // old build ran nothing once its instances were drained.
    for (const [host, h] of hosts.entries()) {
      const swapped = h.lines.findIndex(
        (l) => l.msg.startsWith("reload: applied") && (l as { plugins?: { replaced?: string[] } }).plugins?.replaced?.includes("ticker"),
      );
      const drained = h.lines.findIndex((l) => l.msg === "reload: the old instances of plugin ticker finished their calls and were closed");
      expect(swapped, all).toBeGreaterThan(0);
      expect(drained, all).toBeGreaterThan(swapped);
      const mine = runs.filter((r) => r.host === host);
      for (const r of mine) {
        if (r.build === "b") expect(r.index, all).toBeGreaterThan(swapped);
        else expect(r.index, all).toBeLessThan(drained);
      }
      const b = mine.filter((r) => r.build === "b");
      if (b.length > 0) expect(Math.min(...b.map((r) => r.call)), all).toBe(1);
    }
    expect(
      runs.some((r) => r.build === "b"),
      all,
    ).toBe(true);
    expect(
      runs.some((r) => r.schedule === "other"),
      all,
    ).toBe(true);
  }, 180_000);
});
