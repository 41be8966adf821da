// `lockhost run` under a service manager's notify protocol (systemd Type=notify), with real
// parts: a real unix datagram socket bound by python3 (the manager's end, closing the barrier's
// descriptors as systemd does), a real `lockhost run` with NOTIFY_SOCKET pointing at it, a real
// SIGTERM by PID. READY=1 comes when /readyz answers 200, STOPPING=1 when the stop begins; a
// socket nobody listens on is said once and never stops the host.
import { spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { notify, reloadingState } from "../host/cli/notify.js";
import { until } from "./support/until.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");
const receiverScript = join(root, "test/support/notify-socket.py");

const NOT_TOLD = "NOTIFY_SOCKET is set but the service manager could not be told";

interface LogLine {
  level: number;
  msg: string;
  url?: string;
}

/** A process and everything it printed. */
interface Proc {
  readonly child: ChildProcess;
  readonly exit: Promise<number | null>;
  out(): string;
}

const running: ChildProcess[] = [];

function launch(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Proc {
  const child = spawn(command, args, { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  running.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exit, out: () => out };
}

/** The manager's end: the messages it got, each a datagram's text. */
async function receiver(name: string): Promise<{ messages(): string[]; proc: Proc }> {
  const proc = launch("python3", [receiverScript, name]);
  await until("the python3 receiver binds", 30_000, () => proc.out().startsWith("listening\n") || proc.child.exitCode !== null);
  expect(proc.out(), "the python3 receiver did not bind").toMatch(/^listening\n/);
  const messages = (): string[] =>
    proc
      .out()
      .split("\n")
      .slice(1)
      .filter((l) => l.startsWith('"'))
      .map((l) => JSON.parse(l) as string);
  return { messages, proc };
}

const lines = (out: string): LogLine[] =>
  out
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l) as LogLine);

/** Whether one datagram assigned `assignment` (a message is newline-separated assignments). */
const has = (messages: string[], assignment: string): boolean => messages.some((m) => m.split("\n").includes(assignment));

let dir: string;
let config: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "lockhost-notify-"));
  config = join(dir, "lockhost.toml");
  await writeFile(
    config,
    `[host]
node = "notify-test"
shutdown_timeout_ms = 5000

[locking]
backend = "memory"

[admin]
listen = "127.0.0.1:0"

[[plugins]]
name = "report"
wasm = "${join(root, "plugins/guests/build/report.wasm")}"

[[scheduled]]
plugin = "report"
export = "run"
schedule = "1s"
hint = "require_global"
ttl_ms = 5000
`,
  );
});

afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runHost(notifySocket: string | undefined): Proc {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env.NOTIFY_SOCKET;
  if (notifySocket !== undefined) env.NOTIFY_SOCKET = notifySocket;
  return launch(process.execPath, [cli, "run", "--config", config, "--log-format", "json"], env);
}

describe("lockhost run and NOTIFY_SOCKET", () => {
  for (const [label, name] of [
    ["a socket file", () => join(dir, `notify-${randomBytes(4).toString("hex")}.sock`)],
    ["an abstract socket (@name)", () => `@lockhost-notify-test-${process.pid}-${randomBytes(4).toString("hex")}`],
  ] as const) {
    it(`sends READY=1 once /readyz answers 200 and STOPPING=1 when SIGTERM starts the stop, on ${label}`, async () => {
      const socket = name();
      const manager = await receiver(socket);
      const host = runHost(socket);
      // Bounds for a broken build on a loaded machine, not speed assertions.
      await until("READY=1", 60_000, () => has(manager.messages(), "READY=1") || host.child.exitCode !== null);
      expect(has(manager.messages(), "READY=1"), `no READY=1; the host printed:\n${host.out()}`).toBe(true);
      const ready = manager.messages().find((m) => m.split("\n").includes("READY=1"))!;
      // systemd-notify names this process as the main one.
      expect(ready.split("\n")).toContain(`MAINPID=${host.child.pid}`);
      // Ready means what /readyz means: asked now, it answers 200.
      const url = lines(host.out()).find((l) => l.msg === "admin listener started")?.url;
      expect(url, host.out()).toBeDefined();
      const readyz = await fetch(`${url}/readyz`);
      expect(readyz.status).toBe(200);
      expect(has(manager.messages(), "STOPPING=1")).toBe(false);

      process.kill(host.child.pid!, "SIGTERM");
      await until("STOPPING=1", 30_000, () => has(manager.messages(), "STOPPING=1") || host.child.exitCode !== null);
      expect(await host.exit, host.out()).toBe(0);
      expect(has(manager.messages(), "STOPPING=1"), `no STOPPING=1; the manager got ${JSON.stringify(manager.messages())}`).toBe(true);
      // In order: ready first, stopping after.
      const order = manager.messages().filter((m) => /(^|\n)(READY|STOPPING)=1/.test(m));
      expect(order.map((m) => (m.includes("READY=1") ? "READY" : "STOPPING"))).toEqual(["READY", "STOPPING"]);
      expect(host.out()).not.toContain(NOT_TOLD);
    }, 120_000);
  }

  it("sends RELOADING=1 with MONOTONIC_USEC, then READY=1, around a reload asked for by SIGHUP", async () => {
    const socket = join(dir, `notify-${randomBytes(4).toString("hex")}.sock`);
    const manager = await receiver(socket);
    const host = runHost(socket);
    await until("READY=1", 60_000, () => has(manager.messages(), "READY=1") || host.child.exitCode !== null);
    expect(has(manager.messages(), "READY=1"), `no READY=1; the host printed:\n${host.out()}`).toBe(true);
    process.kill(host.child.pid!, "SIGHUP");
    await until(
      "READY=1 after the reload",
      60_000,
      () => manager.messages().filter((m) => m.split("\n").includes("READY=1")).length >= 2 || host.child.exitCode !== null,
    );
    process.kill(host.child.pid!, "SIGTERM");
    expect(await host.exit, host.out()).toBe(0);
    const order = manager.messages().filter((m) => /(^|\n)(READY|RELOADING|STOPPING)=1/.test(m));
    expect(
      order.map((m) => /(?:^|\n)(READY|RELOADING|STOPPING)=1/.exec(m)![1]),
      JSON.stringify(manager.messages()),
    ).toEqual(["READY", "RELOADING", "READY", "STOPPING"]);
    expect(order[1]).toMatch(/(^|\n)MONOTONIC_USEC=\d+($|\n)/);
  }, 120_000);

  it("runs on and says so once when nothing listens on NOTIFY_SOCKET", async () => {
    const host = runHost(join(dir, "nobody-listens.sock"));
    await until("a tick", 60_000, () => lines(host.out()).some((l) => l.msg === "schedule lock taken; running") || host.child.exitCode !== null);
    expect(host.child.exitCode, host.out()).toBeNull();
    await until("the warning", 30_000, () => host.out().includes(NOT_TOLD));
    process.kill(host.child.pid!, "SIGTERM");
    expect(await host.exit, host.out()).toBe(0);
    // READY=1 and STOPPING=1 both failed: one warning, at warn level, naming the socket.
    const warnings = lines(host.out()).filter((l) => l.msg.startsWith(NOT_TOLD));
    expect(warnings, host.out()).toHaveLength(1);
    expect(warnings[0]!.level).toBe(40);
    expect(warnings[0]!.msg).toContain('"READY=1"');
  }, 120_000);

  it("sends nothing and says nothing without NOTIFY_SOCKET", async () => {
    const host = runHost(undefined);
    await until("a tick", 60_000, () => lines(host.out()).some((l) => l.msg === "schedule lock taken; running") || host.child.exitCode !== null);
    process.kill(host.child.pid!, "SIGTERM");
    expect(await host.exit, host.out()).toBe(0);
    expect(host.out()).not.toContain("NOTIFY_SOCKET");
  }, 120_000);

  it("sends what a reload sends, in order: RELOADING=1 with MONOTONIC_USEC on the monotonic clock, then READY=1", async () => {
    const socket = `@lockhost-notify-test-${process.pid}-${randomBytes(4).toString("hex")}`;
    const manager = await receiver(socket);
    const before = process.hrtime.bigint() / 1000n;
    const state = reloadingState();
    expect(state).toMatch(/^RELOADING=1\nMONOTONIC_USEC=\d+$/);
    const usec = BigInt(/MONOTONIC_USEC=(\d+)/.exec(state)![1]!);
    expect(usec >= before && usec <= process.hrtime.bigint() / 1000n).toBe(true);
    const saved = process.env.NOTIFY_SOCKET;
    process.env.NOTIFY_SOCKET = socket;
    try {
      const sent = [notify(state), notify("READY=1")];
      expect(await Promise.all(sent)).toEqual([true, true]);
      // Without NOTIFY_SOCKET (unset or empty), nothing is sent.
      process.env.NOTIFY_SOCKET = "";
      expect(await notify("READY=1")).toBe(false);
    } finally {
      if (saved === undefined) delete process.env.NOTIFY_SOCKET;
      else process.env.NOTIFY_SOCKET = saved;
    }
    await until("both messages", 30_000, () => has(manager.messages(), "READY=1"));
    const told = manager.messages().filter((m) => !m.startsWith("BARRIER="));
    expect(told).toEqual([`MAINPID=${process.pid}\n${state}`, `MAINPID=${process.pid}\nREADY=1`]);
  }, 60_000);
});
