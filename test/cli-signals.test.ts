// Signals to a `lockhost run` / `lockhost call` that holds locks, as an operator (or a service
// manager) sends them: real processes, real signals by PID, a private redis-server that a test
// freezes (SIGSTOP). No signal ends a host that holds locks without a graceful stop, and the stop
// says truthfully what it could not release.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CANCELLED } from "../abi/status.js";
import { createBackend } from "../host/registry/create.js";
import { LockService } from "../host/locking/service.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { startRedisServer, type RedisServer } from "./support/servers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");

interface LogLine {
  level: number;
  msg: string;
  signal?: string;
  unreleased?: { name: string; kind: string; fence: number; code: string }[];
}

interface Run {
  readonly child: ChildProcess;
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  exited(): boolean;
  out(): string;
  lines(): LogLine[];
  /** Waits until `ready(out)` or the process exits (a bound for a broken build: 60 s). */
  until(ready: (out: string) => boolean): Promise<void>;
}

function start(args: readonly string[]): Run {
  const child = spawn(process.execPath, [cli, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
  let exited = false;
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => {
      exited = true;
      resolve({ code, signal });
    }),
  );
  running.push(child);
  return {
    child,
    exit,
    exited: () => exited,
    out: () => out,
    lines: () =>
      out
        .split("\n")
        .filter((l) => l.startsWith("{"))
        .map((l) => JSON.parse(l) as LogLine),
    async until(ready) {
      const deadline = Date.now() + 60_000;
      while (!exited && Date.now() < deadline && !ready(out)) await Promise.race([new Promise((r) => setTimeout(r, 100)), exit]);
    },
  };
}

const running: ChildProcess[] = [];
let redis: RedisServer;
let client: Redis;
let dir: string;

beforeAll(async () => {
  redis = await startRedisServer();
  client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  dir = await mkdtemp(join(tmpdir(), "lockhost-cli-signals-"));
});

afterEach(async () => {
  redis.resume();
  for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  await client.flushall();
});

afterAll(async () => {
  client?.disconnect();
  await redis?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A config on the private Redis: the report plugin ticking every second (its schedule lock held between ticks), node `node`. */
async function config(node: string, extra = "", shutdownTimeoutMs = 3000): Promise<string> {
  const file = join(dir, `${node}.toml`);
  await writeFile(
    file,
    `[host]\nnode = "${node}"\nshutdown_timeout_ms = ${shutdownTimeoutMs}\n` +
      `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redis.url}"\ncommand_timeout_ms = 500\n` +
      `[[plugins]]\nname = "report"\nwasm = "${guestWasm("report", "example")}"\n` +
      `[[plugins]]\nname = "lifecycle"\nwasm = "${guestWasm("lifecycle")}"\n` +
      `[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nhint = "require_global"\nttl_ms = 60000\n${extra}`,
  );
  return file;
}

/** The Redis keys of locks held now (fence counters aside). */
async function heldKeys(): Promise<string[]> {
  return (await client.keys("lockhost:lock:*")).sort();
}

/** Waits until the host's node lock (taken at start on a distributed backend) is in Redis. */
async function nodeLockHeld(run: Run, node: string): Promise<void> {
  const key = `lockhost:lock:{lockhost:node:${node}}`;
  await run.until(() => false === run.exited() && run.out().includes("lockhost host started"));
  const deadline = Date.now() + 60_000;
  while (!run.exited() && Date.now() < deadline && (await client.exists(key)) === 0) await new Promise((r) => setTimeout(r, 100));
  expect(await client.exists(key), run.out()).toBe(1);
}

describe("lockhost run: shutdown tells the truth", () => {
  it("SIGTERM with Redis frozen: retries the releases until shutdown_timeout_ms, names every lock left in one ERROR line and exits 1", async () => {
    const run = start(["run", "--config", await config("frozen-a")]);
    await nodeLockHeld(run, "frozen-a");
    await run.until((out) => out.includes("schedule lock taken; running"));
    redis.pause();
    run.child.kill("SIGTERM");
    const { code } = await run.exit;
    redis.resume();
    const lines = run.lines();
    expect(
      lines.some((l) => l.msg.includes("every lock released")),
      run.out(),
    ).toBe(false);
    const errors = lines.filter((l) => l.level >= 50);
    expect(errors, run.out()).toHaveLength(1);
    const [error] = errors;
    expect(error!.msg).toMatch(/^lockhost host stopped; \d+ locks? not released within shutdown_timeout_ms \(3000 ms\), each held until its TTL ends: /);
    expect(error!.msg).toMatch(/lockhost:node:frozen-a \(mutex, fence \d+\)/);
    expect(error!.unreleased!.map((u) => u.name)).toContain("lockhost:node:frozen-a");
    for (const u of error!.unreleased!) {
      expect(u).toMatchObject({ kind: "mutex", code: expect.stringMatching(/^(BACKEND_UNAVAILABLE|TIMEOUT)$/) });
      expect(u.fence).toBeGreaterThan(0);
      expect(error!.msg).toContain(`${u.name} (${u.kind}, fence ${u.fence})`);
    }
    expect(code).toBe(1);
  }, 120_000);

  it("a clean SIGTERM exits 0, says every lock released, and leaves no lock in Redis", async () => {
    const run = start(["run", "--config", await config("clean-a")]);
    await nodeLockHeld(run, "clean-a");
    run.child.kill("SIGTERM");
    const { code } = await run.exit;
    expect(
      run.lines().map((l) => l.msg),
      run.out(),
    ).toContain("lockhost host stopped; every lock released");
    expect(run.lines().filter((l) => l.level >= 50)).toEqual([]);
    expect(code).toBe(0);
    expect(await heldKeys()).toEqual([]);
  }, 120_000);
});

describe("lockhost run: no signal kills a host with locks held", () => {
  it("a second SIGTERM while the stop waits on a frozen Redis exits 1 at once, saying the locks not released end at their TTL", async () => {
    const run = start(["run", "--config", await config("twice-a", "", 60_000)]);
    await nodeLockHeld(run, "twice-a");
    redis.pause();
    run.child.kill("SIGTERM");
    await run.until((out) => out.includes("shutting down: no new ticks"));
    run.child.kill("SIGTERM");
    const { code } = await run.exit;
    redis.resume();
    const second = run.lines().find((l) => l.msg.startsWith("second signal"));
    expect(second?.msg, run.out()).toBe("second signal: exiting without waiting; a lock not released yet is held until its TTL ends");
    expect(run.lines().some((l) => l.msg.includes("every lock released"))).toBe(false);
    expect(code).toBe(1);
  }, 120_000);

  it("SIGHUP reloads (every plugin kept), SIGUSR2 and SIGALRM are logged and ignored, SIGPIPE ignored, every lock kept; SIGQUIT stops gracefully", async () => {
    const file = await config("hup-a");
    const run = start(["run", "--config", file]);
    await nodeLockHeld(run, "hup-a");
    for (const signal of ["SIGHUP", "SIGUSR2", "SIGALRM", "SIGPIPE"] as const) run.child.kill(signal);
    await run.until((out) => ["SIGHUP", "SIGUSR2", "SIGALRM"].every((s) => out.includes(`"msg":"${s}:`)) && out.includes("reload: applied"));
    expect(run.lines().find((l) => l.signal === "SIGHUP")?.msg, run.out()).toBe(`SIGHUP: reloading ${file}`);
    expect(run.lines().find((l) => l.msg.startsWith("reload: applied"))?.msg, run.out()).toContain("kept report, lifecycle");
    const warned = run.lines().filter((l) => l.signal !== undefined && l.level === 40);
    expect(
      warned.find((l) => l.signal === "SIGHUP"),
      run.out(),
    ).toBeUndefined();
    expect(warned.find((l) => l.signal === "SIGUSR2")?.msg).toBe("SIGUSR2: no action is bound to it; ignored");
    expect(warned.find((l) => l.signal === "SIGALRM")?.msg).toBe("SIGALRM: no action is bound to it; ignored");
    expect(run.exited(), run.out()).toBe(false);
    expect(await heldKeys()).toContain("lockhost:lock:{lockhost:node:hup-a}");
    // Still running the schedule after them.
    const ticks = (): number => run.lines().filter((l) => l.msg === "schedule lock taken; running").length;
    const before = ticks();
    await run.until(() => ticks() > before);
    expect(ticks(), run.out()).toBeGreaterThan(before);

    run.child.kill("SIGQUIT");
    const { code, signal } = await run.exit;
    expect(signal).toBeNull();
    expect(run.lines().find((l) => l.signal === "SIGQUIT")?.msg).toBe("shutting down: no new ticks, waiting for running calls");
    expect(run.lines().map((l) => l.msg)).toContain("lockhost host stopped; every lock released");
    expect(code).toBe(0);
    expect(await heldKeys()).toEqual([]);
  }, 120_000);
});

describe("lockhost call: signals act as on run", () => {
  it("SIGHUP is ignored (a call has no config to reload) while the export waits; SIGINT ends the wait (-CANCELLED), releases all, exits 0", async () => {
    const file = await config("call-a");
    // This process holds "lifecycle:k1" (the guest's key "k1" in its plugin's scope), so the call waits on it.
    const locks = new LockService(await createBackend({ backend: "redis", redis: { ...redisDefaults, url: redis.url } }, captureLogger().logger), {
      node: "test",
    });
    try {
      expect(await locks.tryLock({ name: "lifecycle:k1" }, { ttlMs: 60_000 })).not.toBeNull();
      // acquireKey(keyId 1, ttl 30 s, wait 60 s, flags 0)
      const call = start(["call", "lifecycle", "acquireKey", "1", "30000", "60000", "0", "--config", file]);
      await call.until((out) => out.includes("lockhost host started"));
      await new Promise((r) => setTimeout(r, 2000)); // the guest parks in its wait meanwhile
      call.child.kill("SIGHUP");
      await call.until((out) => out.includes("SIGHUP: this command has no config to reload; ignored"));
      expect(call.exited(), call.out()).toBe(false);
      call.child.kill("SIGINT");
      const { code, signal } = await call.exit;
      expect(signal, call.out()).toBeNull();
      expect(call.lines().map((l) => l.msg)).toContain("lockhost host stopped; every lock released");
      expect(code, call.out()).toBe(0);
      expect(call.out()).toMatch(new RegExp(`^-${CANCELLED}$`, "m"));
      expect(await heldKeys()).toEqual(["lockhost:lock:{lifecycle:k1}"]);
    } finally {
      await locks.close();
    }
  }, 120_000);
});
