// The lockhost CLI as an operator runs it: a real process, real signals.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { nodeNotice } from "../host/cli/node-notice.js";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { LockingConfig } from "../host/config/types.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { LockService } from "../host/locking/service.js";
import { createBackend } from "../host/registry/create.js";
import { permitSpec, READ } from "../kit/kinds.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { etcdEndpoints } from "./support/etcd-servers.js";
import { databaseUrl, freePort, redisUrl } from "./support/servers.js";
import { guestWasm } from "./support/guests.js";
import { makeTestCerts, type TestCerts } from "./support/certs.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");
const lockhost = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8", timeout: 20_000 });

/** Environment of a child CLI: no admin token unless a test gives one. */
function childEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  if (!("LOCKHOST_ADMIN_TOKEN" in extra)) delete env.LOCKHOST_ADMIN_TOKEN;
  return env;
}

/**
 * The CLI as a child process, without blocking this one: a Host in this process must keep
 * answering the child's admin requests meanwhile.
 */
function lockhostAsync(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: opts.cwd ?? root, env: childEnv(opts.env) });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}

let dir: string | undefined;
afterEach(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

async function configFile(text: string): Promise<string> {
  dir = await mkdtemp(join(tmpdir(), "lockhost-cli-"));
  const file = join(dir, "lockhost.toml");
  await writeFile(file, text);
  return file;
}

describe("lockhost CLI", () => {
  it.each([[], ["--help"], ["run", "--help"], ["call", "--help"], ["status", "--help"], ["release", "--help"]])("prints help for %j", (...args) => {
    const r = lockhost(...args);
    expect(r.stdout).toContain("Usage: lockhost");
    expect(r.status).toBe(args.length === 0 ? 2 : 0);
  });

  it("prints its version, and --help lists every command", () => {
    const version = (JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string }).version;
    for (const flag of ["--version", "-V"]) {
      const r = lockhost(flag);
      expect(r.status).toBe(0);
      expect(r.stdout.trim()).toBe(`lockhost ${version}`);
    }
    const help = lockhost("--help").stdout;
    for (const command of ["run", "check", "call", "status", "locks", "release"]) expect(help).toMatch(new RegExp(`^  ${command} `, "m"));
  });

  it("says first, on a Node older than 22, that it is end of life and how to get a newer one (LOCKHOST_NODE_NOTICE=0 silences it)", () => {
    expect(nodeNotice("22.0.0")).toBeUndefined();
    expect(nodeNotice("26.1.0")).toBeUndefined();
    expect(nodeNotice("20.20.2")).toMatch(
      /^lockhost: Node 20\.20\.2 is end of life and unsupported; lockhost supports Node 22, 24 and 26\. Install one from https:\/\/nodejs\.org/,
    );
    const { LOCKHOST_NODE_NOTICE: _quiet, ...env } = process.env;
    const told = spawnSync(process.execPath, [cli, "--version"], { cwd: root, encoding: "utf8", timeout: 20_000, env });
    expect(told.status).toBe(0);
    const notice = nodeNotice(process.versions.node);
    if (notice === undefined) expect(told.stderr).toBe("");
    else expect(told.stderr).toBe(`${notice}\n`);
    expect(lockhost("--version").stderr).toBe("");
  });

  it("rejects an unknown command and a release without --force", () => {
    expect(lockhost("frobnicate").status).toBe(2);
    const r = lockhost("release", "global:x", "--config", "lockhost.toml");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("refusing without --force");
  });

  it("says how to enable the admin listener when `status` has no KEY and the config has no [admin]", () => {
    const r = lockhost("status", "--config", "lockhost.toml");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("lockhost.toml has no [admin] table, so the running host has no admin listener to ask");
    expect(r.stderr).toContain('[admin]\n  listen = "127.0.0.1:9464"');
    expect(r.stdout).toBe("");
  });

  it("says to pass --admin when the config's admin port is 0", async () => {
    const file = await configFile(`[admin]\nlisten = "127.0.0.1:0"\n`);
    const r = lockhost("status", "--config", file);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("[admin] listen has port 0");
    expect(r.stderr).toContain("pass --admin");
  });

  it("says no admin listener answers, with exit code 2, when none listens at the URL", async () => {
    const port = await freePort();
    for (const args of [["status"], ["status", "global:x"], ["release", "--force", "global:x"]]) {
      const r = await lockhostAsync([...args, "--admin", `http://127.0.0.1:${port}`], { cwd: tmpdir() });
      expect(r.status, r.stderr).toBe(2);
      expect(r.stderr).toContain(`no admin listener answers at http://127.0.0.1:${port} (ECONNREFUSED)`);
      expect(r.stderr).toContain("To enable it");
    }
  });

  it("rejects an --admin that is not an http URL", () => {
    const r = lockhost("status", "--admin", "ftp://127.0.0.1:9464");
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("INVALID_ARGUMENT: --admin must be the admin listener's URL");
  });

  it("explains that status needs a shared backend when the config uses memory", () => {
    const r = lockhost("status", "report:daily-report", "--config", "lockhost.toml");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("CONFIG_INVALID");
    expect(r.stderr).toContain("needs a shared backend");
  });

  it("exits 2 with the file, table and key of a config error", async () => {
    const file = await configFile('[[plugins]]\nname = "Bad Name"\nwasm = "x.wasm"\n');
    const r = lockhost("run", "--config", file);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/CONFIG_INVALID: .*lockhost\.toml: \[\[plugins\]\] #1.*name/);
  });

  it("runs the example config as two local nodes: one takes each tick, the other skips it, and SIGTERM exits 0 with every lock released", async () => {
    const run = runCli(["run", "--config", "lockhost.toml", "--local-nodes", "2"]);
    await run.until((out) => out.includes("another node holds the schedule lock") && out.includes("report: generated with fence"));
    expect(run.exited(), `lockhost run exited before SIGTERM:\n${run.out()}`).toBe(false);
    run.child.kill("SIGTERM");
    const code = await run.exit;
    const out = run.out();
    const lines = out
      .split("\n")
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; node?: string });
    const msgs = lines.map((l) => l.msg);
    expect(msgs).toContain("schedule lock taken; running");
    expect(msgs).toContain("tick skipped: another node holds the schedule lock");
    expect(msgs.some((m) => m.startsWith("guest: report: generated with fence"))).toBe(true);
    expect(msgs.filter((m) => m === "lockhost host stopped; every lock released")).toHaveLength(2);
    expect(code).toBe(0);
    // JSON when piped, starting with the summary as one line of fields.
    expect(lines.find((l) => l.msg === "lockhost running")).toMatchObject({
      backend: "memory",
      nodes: ["vm-1", "vm-2"],
      plugins: [{ name: "report", runtime: "worker" }],
      schedules: [{ id: "report.run", every: "2s", hint: "require_global" }],
    });
  });

  it("checks a config without running it: plugins, schedules, backend, then what would run", () => {
    const r = lockhost("check", "--config", "lockhost.toml");
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^lockhost\.toml: ok$/m);
    expect(r.stdout).toMatch(/^ {2}ok {3}plugin report: .*report\.wasm loads and instantiates in the worker runtime \(ABI checked\)$/m);
    expect(r.stdout).toContain("  ok   schedules: every export exists and takes no arguments");
    expect(r.stdout).toContain("  ok   backend memory answers");
    expect(r.stdout).toContain("Would run:\n  node vm, backend memory\n    plugins:   report  worker runtime");
    // What each plugin may do: config keys, never their values (the default URL is not shown).
    const demo = lockhost("check", "--config", "examples/demo.toml");
    expect(demo.status, demo.stdout + demo.stderr).toBe(0);
    expect(demo.stdout).toContain("  plugin ledger may: config ledger_url; http to 127.0.0.1:8787 (POST); functions none");
    expect(demo.stdout).not.toContain("http://127.0.0.1:8787");
  });

  it("`call` runs an export once and prints what it returned: numbers, strings, --string, --json; logs on stderr", async () => {
    const file = await configFile(
      `[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\n[[plugins]]\nname = "shapes"\nwasm = "${guestWasm("shapes")}"\n` +
        `[[plugins]]\nname = "cron"\nwasm = "${guestWasm("cron")}"\n[[scheduled]]\nplugin = "cron"\n[admin]\nlisten = "127.0.0.1:0"\n`,
    );
    const add = lockhost("call", "locker", "add", "2", "3", "--config", file);
    expect(add.status, add.stderr).toBe(0);
    expect(add.stdout).toBe("5\n");
    // Logs are JSON lines on stderr (piped): the host's, and why its locks are this process's own.
    const logs = add.stderr
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { msg: string; node: string });
    expect(logs.map((l) => l.msg)).toContain("lockhost host started");
    expect(logs.find((l) => l.msg.startsWith("the memory backend's locks live in this process"))).toBeDefined();
    expect(logs.every((l) => l.node === `${hostname()}/call`)).toBe(true);
    expect(lockhost("call", "locker", "add", "--config", file, "--", "-1", "2").stdout).toBe("1\n");
    expect(lockhost("call", "locker", "add", "2", "3", "--json", "--config", file).stdout).toBe('{"result":5}\n');
    expect(lockhost("call", "locker", "noop", "--json", "--config", file).stdout).toBe('{"result":null}\n');
    expect(lockhost("call", "locker", "noop", "--config", file).stdout).toBe("");
    // Text is a string argument; a JSON string keeps digits as text.
    const echo = lockhost("call", "shapes", "echo", "a b", "3", '"42"', "--config", file);
    expect(echo.status, echo.stderr).toBe(0);
    expect(echo.stdout).toBe("5\n");
    expect(echo.stderr).toContain("guest: echo [a b] 3 [42]");
    const declared = lockhost("call", "cron", "lockhost_schedules", "--string", "--config", file);
    expect(declared.stdout).toBe("# every export of this plugin, when it runs\ntick 200ms\n\nnightly 0 3 * * *\n\n");
    // No schedule ran, and no admin listener was started.
    expect(declared.stderr).not.toContain("schedule lock taken");
    expect(declared.stderr).not.toContain("admin listener started");
  });

  it("`call` of an unknown export or plugin exits 2 and says what it most likely meant; a failing export exits 1", async () => {
    const file = await configFile(`[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\ncall_timeout_ms = 300\n`);
    const typo = lockhost("call", "locker", "ad", "1", "2", "--config", file);
    expect(typo.status).toBe(2);
    expect(typo.stderr).toMatch(/lockhost call: UNKNOWN_EXPORT: plugin locker has no export "ad" \(did you mean "add"\? it exports: /);
    const plugin = lockhost("call", "lockr", "add", "1", "2", "--config", file);
    expect(plugin.status).toBe(2);
    expect(plugin.stderr).toContain(`lockhost call: INVALID_ARGUMENT: no plugin named "lockr" (did you mean "locker"? configured: locker)`);
    const args = lockhost("call", "locker", "add", "1", "--config", file);
    expect(args.status).toBe(2);
    expect(args.stderr).toContain("lockhost call: INVALID_ARGUMENT: export add(i32, i32) of plugin locker takes 2 argument(s), got 1");
    const spin = lockhost("call", "locker", "holdSpin", "1", "60000", "--config", file);
    expect(spin.status).toBe(1);
    expect(spin.stderr).toContain("lockhost call: GUEST_TIMEOUT: ");
    expect(lockhost("call", "locker", "--config", file).status).toBe(2);
  });

  it("lists the schedules a plugin declares among what `check` would run", async () => {
    const file = await configFile(
      `[[plugins]]\nname = "cron"\nwasm = "${guestWasm("cron")}"\n[[scheduled]]\nplugin = "cron"\n[[scheduled]]\nid = "spelled"\nplugin = ` +
        `"cron"\nexport = "other"\nschedule = "1m"\nhint = "node_local"\n`,
    );
    const r = lockhost("check", "--config", file);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain(
      "    schedules: cron.tick  every 200ms, require_global\n" +
        "               cron.nightly  every 0 3 * * *, require_global\n" +
        "               spelled  every 1m, node_local\n",
    );
    expect(r.stdout).not.toContain("declared by the plugin");
  });

  it("lists every fault `check` finds, with its code, and exits 1", async () => {
    const port = await freePort();
    const broken = await configFile(
      `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "redis://127.0.0.1:${port}"\ncommand_timeout_ms = 300\n` +
        `[[plugins]]\nname = "ghost"\nwasm = "missing.wasm"\n[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\n`,
    );
    const r = lockhost("check", "--config", broken);
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/lockhost\.toml: 2 fault\(s\)/);
    expect(r.stdout).toMatch(/FAIL plugin ghost: .*missing\.wasm.*\n {7}CONFIG_INVALID: .*\[\[plugins\]\] "ghost": wasm = ".*missing\.wasm" does not exist/);
    expect(r.stdout).toMatch(/ok {3}plugin locker: /);
    expect(r.stdout).toMatch(/FAIL backend redis answers\n {7}BACKEND_UNAVAILABLE: /);
    const noExport = await configFile(
      `[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\n[[scheduled]]\nplugin = "locker"\nexport = "nope"\nschedule = "1s"\n`,
    );
    const s = lockhost("check", "--config", noExport);
    expect(s.status).toBe(1);
    expect(s.stdout).toMatch(
      /FAIL schedules: every export exists and takes no arguments\n {7}CONFIG_INVALID: .*\[\[scheduled\]\] "locker\.nope": plugin locker has no export "nope"/,
    );
  });

  it("exits 2 from check and run when the Redis URL names a database the server does not have, naming [locking.redis] url and the database", async () => {
    const file = await configFile(`[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}/99"\ncommand_timeout_ms = 2000\n`);
    const c = lockhost("check", "--config", file);
    expect(c.status).toBe(2);
    expect(c.stdout).toMatch(
      /FAIL backend redis answers\n {7}CONFIG_INVALID: .*\[locking\.redis\] url \S+\/99 names database 99, which redis at \S+ does not have/,
    );
    const r = lockhost("run", "--config", file);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/CONFIG_INVALID: .*\[locking\.redis\]: the redis backend refused this host for good.*names database 99/);
  });

  it("`check` still checks the schedules when a plugin fails to load: each of its schedules is a fault, the others' exports are checked", async () => {
    const file = await configFile(
      `[[plugins]]\nname = "ghost"\nwasm = "missing.wasm"\n[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\n` +
        `[[scheduled]]\nid = "haunt"\nplugin = "ghost"\nexport = "boo"\nschedule = "1s"\n` +
        `[[scheduled]]\nplugin = "ghost"\n` +
        `[[scheduled]]\nplugin = "locker"\nexport = "nope"\nschedule = "1s"\n` +
        `[[scheduled]]\nplugin = "locker"\nexport = "noop"\nschedule = "1s"\n`,
    );
    const r = lockhost("check", "--config", file);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stdout).toMatch(/lockhost\.toml: 2 fault\(s\)/);
    expect(r.stdout).toMatch(/FAIL plugin ghost: /);
    expect(r.stdout).toMatch(/FAIL schedules: every export exists and takes no arguments\n {7}CONFIG_INVALID: .*lockhost\.toml: 3 errors:/);
    expect(r.stdout).toMatch(
      /\[\[scheduled\]\] "haunt": plugin ghost did not load \(its fault is above\), so this schedule would not run and its export boo is not checked/,
    );
    expect(r.stdout).toMatch(/\[\[scheduled\]\] "ghost": plugin ghost did not load .* its export \(every one it declares\) is not checked/);
    expect(r.stdout).toMatch(/\[\[scheduled\]\] "locker\.nope": plugin locker has no export "nope"/);
    expect(r.stdout).not.toContain("locker.noop");
  });

  it("`check` and the summary show a plugin's instances and what they cost", async () => {
    const file = await configFile(`[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\ninstances = 3\nmemory_limit_mib = 8\n`);
    const r = lockhost("check", "--config", file);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toMatch(/locker {2}worker runtime, 8 MiB, 5000 ms per call, 3 instances \(one call each at a time; up to 24 MiB in all\)/);
    const bad = lockhost("check", "--config", await configFile(`[[plugins]]\nname = "locker"\nwasm = "${guestWasm("locker")}"\ninstances = 65\n`));
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/\[\[plugins\]\] #1.*instances.*65/);
  });

  it("logs readable lines with --log-format pretty, starting with a one-screen summary", async () => {
    const run = runCli(["run", "--config", "lockhost.toml", "--log-format", "pretty"]);
    await run.until((out) => out.includes("schedule lock taken; running"));
    run.child.kill("SIGINT");
    expect(await run.exit).toBe(0);
    const out = run.out();
    expect(out).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: schedule lock taken; running \{"node":"vm","schedule":"report\.run"/m);
    expect(out).toContain("INFO: lockhost running: node vm, backend memory\n  plugins:   report  worker runtime, 4 MiB, 2000 ms per call\n");
    expect(out).toContain("  admin:     off (add an [admin] table for status, metrics and the dashboard)");
    expect(out).not.toMatch(/^\{"level"/m);
    const bad = lockhost("run", "--config", "lockhost.toml", "--log-format", "xml");
    expect(bad.stderr).toContain('--log-format must be json or pretty, got "xml"');
    expect(bad.status).not.toBe(0);
  });
});

const RUN = randomUUID().slice(0, 8);
const PREFIX = `lockhost-test:cli-${RUN}:`;
const TABLE = `lockhost_test_cli_${RUN}`;

describe.each([
  {
    backend: "redis",
    toml: () => `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}"\nkey_prefix = "${PREFIX}"`,
    locking: (): LockingConfig => ({ backend: "redis", redis: { ...redisDefaults, url: redisUrl(), keyPrefix: PREFIX } }),
    unreachable: (port: number) => `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "redis://:hunter2@127.0.0.1:${port}"\ncommand_timeout_ms = 300`,
  },
  {
    backend: "pg",
    toml: () => `[locking]\nbackend = "pg"\n[locking.pg]\nurl = "${databaseUrl()}"\ntable = "${TABLE}"`,
    locking: (): LockingConfig => ({ backend: "pg", pg: { ...pgDefaults, url: databaseUrl(), table: TABLE } }),
    unreachable: (port: number) =>
      `[locking]\nbackend = "pg"\n[locking.pg]\nurl = "postgres://postgres:hunter2@127.0.0.1:${port}/test"\ncommand_timeout_ms = 300`,
  },
])("lockhost status and release --force on $backend", ({ backend, toml, locking, unreachable }) => {
  afterAll(async () => {
    if (backend === "redis") await dropRedisPrefix(redisUrl(), PREFIX);
    else await dropPgTable(databaseUrl(), TABLE);
  });

  it("reads (status, locks) and force-releases on the backend without the admin token: its ${VAR} may be unset", async () => {
    // The token protects the admin listener only; these commands go to the backend itself.
    const file = await configFile(`${toml()}\n[admin]\nlisten = "127.0.0.1:9464"\ntoken = "\${LOCKHOST_CLI_UNSET_TOKEN}"\n`);
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-holder" });
    try {
      await locks.tryLock("cli-unset-token", { ttlMs: 30_000 });
      const status = lockhost("status", "global:cli-unset-token", "--config", file, "--json");
      expect(status.status, status.stderr).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({ held: true });
      const list = lockhost("locks", "--config", file, "--prefix", "global:cli-unset-token", "--json");
      expect(list.status, list.stderr).toBe(0);
      expect(JSON.parse(list.stdout)).toMatchObject({ locks: [{ name: "global:cli-unset-token" }] });
      const released = lockhost("release", "--force", "global:cli-unset-token", "--config", file);
      expect(released.status, released.stderr).toBe(0);
      expect(released.stdout.trim()).toBe("released global:cli-unset-token");
    } finally {
      await locks.close();
    }
  });

  it("`call` takes the export's locks on the backend, as other processes see them, and releases them when done", async () => {
    const file = await configFile(`${toml()}\n[[plugins]]\nname = "shapes"\nwasm = "${guestWasm("shapes")}"\n`);
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-holder" });
    try {
      await locks.tryLock("busy", { ttlMs: 30_000, scope: { plugin: "shapes" } });
      const contended = lockhost("call", "shapes", "take", "busy", "0", "--config", file);
      expect(contended.status, contended.stderr).toBe(0);
      expect(contended.stdout).toBe("0\n");
      const taken = lockhost("call", "shapes", "take", "free", "0", "--config", file);
      expect(taken.stdout, taken.stderr).toBe("1\n");
      // Kept by the guest, released when the call's host stopped.
      expect((await locks.status({ name: "shapes:free" })).held).toBe(false);
    } finally {
      await locks.close();
    }
  });

  it("says what a schedule lock's status means: held from a tick until half a period after it, so 'not held' between ticks", async () => {
    const file = await configFile(toml());
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-holder" });
    try {
      const lease = (await locks.tryLock("schedule:cli-job", { ttlMs: 30_000, scope: { plugin: "lockhost" } }))!;
      const held = lockhost("status", "lockhost:schedule:cli-job", "--config", file);
      expect(held.status, held.stderr).toBe(0);
      expect(held.stdout).toContain("lockhost:schedule:cli-job: held\n");
      expect(held.stdout).toContain(
        "  schedule:      cli-job: the holder took it for the tick at acquired_at and holds it until half a period after that tick (or until its job " +
          "ends, if later)",
      );
      await locks.release(lease);
      const free = lockhost("status", "lockhost:schedule:cli-job", "--config", file);
      expect(free.status, free.stderr).toBe(0);
      expect(free.stdout).toContain("lockhost:schedule:cli-job: not held\n  schedule cli-job: its lock is held only from a tick until half a period after it");
      expect(free.stdout).toContain("which node ran each tick: the hosts' logs");
      // Data stays data: --json is the status alone.
      expect(JSON.parse(lockhost("status", "lockhost:schedule:cli-job", "--config", file, "--json").stdout)).toMatchObject({
        name: "lockhost:schedule:cli-job",
        held: false,
      });
      // Any other lock reads as before.
      expect(lockhost("status", "global:cli-not-a-schedule", "--config", file).stdout).toBe("global:cli-not-a-schedule: not held\n");
    } finally {
      await locks.close();
    }
  });

  it("shows the holder of a lock another process holds, force-releases it, and the holder finds it lost", async () => {
    const file = await configFile(toml());
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-holder" });
    try {
      const lease = await locks.tryLock("cli-x", { ttlMs: 30_000 });
      expect(lease).not.toBeNull();
      const shown = lockhost("status", "global:cli-x", "--config", file, "--json", "--show-owner");
      expect(shown.status, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        name: "global:cli-x",
        kind: "mutex",
        held: true,
        holders: [{ owner: lease!.owner, fence: lease!.fence, plugin: "host", node: "cli-holder", hostname: hostname() }],
      });
      // Without --show-owner the owner token, which lets anyone release or restore the lock, is not printed.
      const hidden = lockhost("status", "global:cli-x", "--config", file, "--json");
      expect(JSON.parse(hidden.stdout)).toMatchObject({ name: "global:cli-x", held: true, holders: [{ fence: lease!.fence }] });
      expect((JSON.parse(hidden.stdout) as { holders: object[] }).holders[0]).not.toHaveProperty("owner");
      expect(hidden.stdout).not.toContain(lease!.owner);
      const human = lockhost("status", "global:cli-x", "--config", file);
      expect(human.stdout).toContain(`holder:        plugin host on node cli-holder (host ${hostname()})`);
      expect(human.stdout).not.toContain(lease!.owner);
      expect(human.stdout).toContain("owner:         (hidden: --show-owner");

      const released = lockhost("release", "--force", "global:cli-x", "--config", file);
      expect(released.status, released.stderr).toBe(0);
      expect(released.stdout.trim()).toBe("released global:cli-x");
      expect(JSON.parse(lockhost("status", "global:cli-x", "--config", file, "--json").stdout)).toEqual({
        name: "global:cli-x",
        kind: "mutex",
        held: false,
        holders: [],
        limit: 0,
        queued: 0,
      });
      await expect(locks.renew(lease!)).rejects.toMatchObject({ code: "LOST" });
      expect(lockhost("release", "--force", "global:cli-x", "--config", file).stdout.trim()).toBe("global:cli-x was not held");
    } finally {
      await locks.close();
    }
  });

  it("shows the holders of a read/write lock and a semaphore (--kind), and force-releases them", async () => {
    const file = await configFile(toml());
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-kinds" });
    try {
      const r1 = (await locks.try("cli-doc", { ttlMs: 30_000, ...READ }))!;
      await locks.try("cli-doc", { ttlMs: 30_000, ...READ });
      const permit = (await locks.try("cli-doc", { ttlMs: 30_000, ...permitSpec(3) }))!;
      const rw = lockhost("status", "global:cli-doc", "--kind", "rw", "--config", file, "--json");
      expect(rw.status, rw.stderr).toBe(0);
      const body = JSON.parse(rw.stdout) as { holders: { mode: string; fence: number; node: string }[] };
      expect(body).toMatchObject({ name: "global:cli-doc", kind: "rw", held: true, limit: 0, queued: 0 });
      expect(body.holders.map((h) => [h.mode, h.node])).toEqual([
        ["shared", "cli-kinds"],
        ["shared", "cli-kinds"],
      ]);
      expect(rw.stdout).not.toContain(r1.owner);
      const human = lockhost("status", "global:cli-doc", "--kind", "semaphore", "--config", file);
      expect(human.stdout).toContain("semaphore global:cli-doc: held by 1 of 3 permits");
      expect(human.stdout).toContain(`permit fence ${permit.fence}  plugin host on node cli-kinds`);
      expect(lockhost("status", "global:cli-doc", "--config", file, "--json").stdout).toContain('"held":false');
      // The mutex of the name is free: status says which locks of it are held, here and from the plugin-scope name.
      const free = JSON.parse(lockhost("status", "global:cli-doc", "--config", file, "--json").stdout) as unknown;
      expect(free).toEqual({
        name: "global:cli-doc",
        kind: "mutex",
        held: false,
        holders: [],
        limit: 0,
        queued: 0,
        heldElsewhere: [
          { name: "global:cli-doc", kind: "rw" },
          { name: "global:cli-doc", kind: "semaphore" },
        ],
      });
      const hint = lockhost("status", "cli-doc", "--config", file).stdout.trim().split("\n");
      expect(hint).toEqual([
        "cli-doc: not held",
        "  but held: read/write lock global:cli-doc  (lockhost status global:cli-doc --kind rw)",
        "  but held: semaphore global:cli-doc  (lockhost status global:cli-doc --kind semaphore)",
      ]);
      const listed = lockhost("locks", "--kind", "rw", "--prefix", "global:cli-doc", "--config", file, "--json");
      expect(listed.status, listed.stderr).toBe(0);
      const page = JSON.parse(listed.stdout) as { locks: { name: string; kind: string; mode: string }[] };
      expect(page.locks.map((l) => [l.name, l.kind, l.mode])).toEqual([
        ["global:cli-doc", "rw", "shared"],
        ["global:cli-doc", "rw", "shared"],
      ]);
      expect(listed.stdout).not.toContain(r1.owner);
      expect(lockhost("locks", "--kind", "semaphore", "--prefix", "global:cli-doc", "--config", file).stdout).toContain("global:cli-doc (permit)");
      // Without --kind: every kind, with a kind column.
      const every = lockhost("locks", "--prefix", "global:cli-doc", "--config", file, "--json");
      expect(every.status, every.stderr).toBe(0);
      const all = JSON.parse(every.stdout) as { locks: { name: string; kind: string; mode: string }[]; cursor?: string };
      expect(all.locks.map((l) => [l.name, l.kind, l.mode])).toEqual([
        ["global:cli-doc", "rw", "shared"],
        ["global:cli-doc", "rw", "shared"],
        ["global:cli-doc", "semaphore", "shared"],
      ]);
      expect(all.cursor).toBeUndefined();
      const table = lockhost("locks", "--prefix", "global:cli-doc", "--config", file).stdout.trim().split("\n");
      expect(table.map((line) => line.split(/ {2,}/).slice(0, 2))).toEqual([
        ["LOCK", "KIND"],
        ["global:cli-doc (reader)", "rw"],
        ["global:cli-doc (reader)", "rw"],
        ["global:cli-doc (permit)", "semaphore"],
      ]);
      const released = lockhost("release", "--force", "global:cli-doc", "--kind", "rw", "--config", file);
      expect(released.stdout.trim()).toBe("released rw global:cli-doc (2 holders)");
      await expect(locks.renew(r1)).rejects.toMatchObject({ code: "LOST" });
      expect(lockhost("status", "global:cli-doc", "--kind", "rw", "--config", file).stdout.trim().split("\n")).toEqual([
        "read/write lock global:cli-doc: not held",
        "  but held: semaphore global:cli-doc  (lockhost status global:cli-doc --kind semaphore)",
      ]);
      expect(JSON.parse(lockhost("status", "global:cli-doc", "--kind", "rw", "--config", file, "--json").stdout)).toEqual({
        name: "global:cli-doc",
        kind: "rw",
        held: false,
        holders: [],
        limit: 0,
        queued: 0,
        heldElsewhere: [{ name: "global:cli-doc", kind: "semaphore" }],
      });
      const bad = lockhost("status", "global:cli-doc", "--kind", "mutexes", "--config", file);
      expect(bad.status).toBe(2);
      expect(bad.stderr).toContain('--kind must be mutex, rw, semaphore, fair or leader, got "mutexes"');
    } finally {
      await locks.close();
    }
  });

  it("shows a leader (--kind leader) with its value, and force-releases it", async () => {
    const file = await configFile(toml());
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-leader" });
    try {
      const leadership = await locks.campaign("cli-election", { ttlMs: 30_000, value: "primary", waitMs: 5_000 });
      const human = lockhost("status", "global:cli-election", "--kind", "leader", "--config", file);
      expect(human.status, human.stderr).toBe(0);
      const lines = human.stdout.trim().split("\n");
      expect(lines[0]).toBe("leader election global:cli-election: held");
      expect(lines).toContain(`  fence:         ${leadership.term}`);
      expect(lines).toContain('  value:         "primary"');
      expect(lines).toContain("  holder:        plugin host on node cli-leader" + ` (host ${hostname()})`);
      const json = lockhost("status", "global:cli-election", "--kind", "leader", "--config", file, "--json");
      expect(JSON.parse(json.stdout)).toMatchObject({
        name: "global:cli-election",
        kind: "leader",
        held: true,
        holders: [{ fence: leadership.term, value: "primary" }],
      });
      expect(json.stdout).not.toContain(leadership.lease.owner);
      // The mutex of the election's name is another lock.
      expect(JSON.parse(lockhost("status", "global:cli-election", "--config", file, "--json").stdout)).toMatchObject({
        held: false,
        heldElsewhere: [{ name: "global:cli-election", kind: "leader" }],
      });
      const released = lockhost("release", "--force", "global:cli-election", "--kind", "leader", "--config", file);
      expect(released.status, released.stderr).toBe(0);
      expect(released.stdout.trim()).toBe("released leader global:cli-election");
      await expect(locks.renew(leadership.lease)).rejects.toMatchObject({ code: "LOST" });
      expect(leadership.signal.aborted).toBe(true);
      expect(lockhost("release", "--force", "global:cli-election", "--kind", "leader", "--config", file).stdout.trim()).toBe(
        "leader global:cli-election was not held",
      );
    } finally {
      await locks.close();
    }
  });

  it("lists the locks another process holds, page by page, filtered, as a table and as JSON, without owner tokens", async () => {
    const file = await configFile(toml());
    const locks = new LockService(await createBackend(locking(), captureLogger().logger), { node: "cli-lister" });
    try {
      const leases = await Promise.all(["a", "b", "c"].map((k) => locks.tryLock(`cli-list-${k}`, { ttlMs: 30_000 })));
      await locks.tryLock("cli-other", { ttlMs: 30_000 });
      const seen: string[] = [];
      let args = ["locks", "--config", file, "--prefix", "global:cli-list-", "--limit", "2"];
      for (let page = 0; page < 10; page++) {
        const r = lockhost(...args);
        expect(r.status, r.stderr).toBe(0);
        const lines = r.stdout.trim().split("\n");
        expect(lines[0]).toMatch(/^LOCK +KIND +HOLDER +FENCE +AGE +TTL LEFT +WAITERS$/);
        for (const line of lines.slice(1)) if (line.startsWith("global:")) expect(line.split(/ +/)[1]).toBe("mutex");
        for (const line of lines.slice(1)) if (line.startsWith("global:")) seen.push(line.split(/ +/)[0]!);
        expect(r.stdout).not.toContain(leases[0]!.owner);
        const more = lines.find((l) => l.startsWith("more: "));
        if (!more) break;
        // The printed command runs as it is.
        args = more
          .slice("more: lockhost ".length)
          .match(/'[^']*'|\S+/g)!
          .map((w) => w.replace(/^'|'$/g, ""));
      }
      expect(seen.sort()).toEqual(["global:cli-list-a", "global:cli-list-b", "global:cli-list-c"]);
      const json = lockhost("locks", "--config", file, "--prefix", "global:cli-list-", "--json");
      expect(json.status, json.stderr).toBe(0);
      const body = JSON.parse(json.stdout) as { locks: Record<string, unknown>[]; cursor?: string };
      expect(body.cursor).toBeUndefined();
      expect(body.locks).toHaveLength(3);
      for (const lock of body.locks) {
        expect(lock).toMatchObject({ holder: { plugin: "host", node: "cli-lister" }, waiters: 0 });
        expect(lock).not.toHaveProperty("owner");
      }
      const none = lockhost("locks", "--config", file, "--plugin", "nobody", "--prefix", "global:cli-list-");
      expect(none.stdout.trim()).toBe("no lock held");
      const bad = lockhost("locks", "--config", file, "--limit", "0");
      expect(bad.status).toBe(1);
      expect(bad.stderr).toContain('INVALID_ARGUMENT: --limit must be an integer from 1 to 1000, got "0"');
    } finally {
      await locks.close();
    }
  });

  it("exits 1 with BACKEND_UNAVAILABLE, promptly and without the password, when the server is down", async () => {
    const file = await configFile(unreachable(await freePort()));
    const started = Date.now();
    const r = lockhost("status", "global:cli-x", "--config", file);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("BACKEND_UNAVAILABLE");
    expect(r.stderr + r.stdout).not.toContain("hunter2");
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe("lockhost status and release --force through a running host's admin listener", () => {
  const TOKEN = "cli-admin-token-0123456789";
  let host: Host | undefined;
  afterEach(async () => {
    await host?.stop(1_000);
    host = undefined;
  });

  async function startHost(): Promise<Host> {
    host = await Host.start(resolveConfig({ host: { node: "cli-admin-node" }, admin: { listen: "127.0.0.1:0", token: TOKEN } }), {
      logger: captureLogger().logger,
    });
    return host;
  }

  it("prints the host's counters as a table and as JSON", async () => {
    const h = await startHost();
    await h.locks.tryLock("cli-stats-a", { ttlMs: 60_000, keepalive: false });
    await h.locks.tryLock("cli-stats-b", { ttlMs: 60_000, keepalive: true });
    expect(await h.locks.tryLock("cli-stats-a", { ttlMs: 60_000 })).toBeNull();
    const url = h.admin!.url;

    const table = await lockhostAsync(["status", "--admin", url], { cwd: tmpdir() });
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toContain(`node cli-admin-node, memory backend (not distributed: this process only), admin ${url}`);
    expect(table.stdout).toMatch(/^ {2}locks held +2$/m);
    expect(table.stdout).toMatch(/^ {2}kept alive +1$/m);
    expect(table.stdout).toMatch(/^ {2}acquisitions +2$/m);
    expect(table.stdout).toMatch(/^ {2}contended tries +1$/m);
    expect(table.stdout).toMatch(/^ {2}time waited +0 ms$/m);

    const json = await lockhostAsync(["status", "--admin", url, "--json"], { cwd: tmpdir() });
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      node: "cli-admin-node",
      backend: "memory",
      stats: { held: 2, keepalive: 1, acquisitions: 2, contended: 1, lost: 0 },
    });
  });

  it("prints each schedule's ticks by outcome (an outage's skips are skipped_error)", async () => {
    host = await Host.start(
      resolveConfig({
        host: { node: "cli-ticks-node" },
        admin: { listen: "127.0.0.1:0" },
        plugins: [{ name: "cron", wasm: guestWasm("cron") }],
        scheduled: [{ id: "job", plugin: "cron", export: "tick", schedule: "1h" }],
      }),
      { logger: captureLogger().logger },
    );
    expect(await host.scheduler.runTick("job")).toBe("ran");
    const table = await lockhostAsync(["status", "--admin", host.admin!.url], { cwd: tmpdir() });
    expect(table.status, table.stderr).toBe(0);
    expect(table.stdout).toContain("schedule ticks on this node:\n  job  ran 1, failed 0, skipped_contended 0, skipped_overlap 0, skipped_error 0");
    const json = await lockhostAsync(["status", "--admin", host.admin!.url, "--json"], { cwd: tmpdir() });
    expect(JSON.parse(json.stdout)).toMatchObject({ backendUp: true, schedules: { job: { ran: 1, skipped_error: 0 } } });
  });

  it("finds the listener from the config's [admin] listen, and reads a memory lock's status through it", async () => {
    const h = await startHost();
    const lease = await h.locks.tryLock("cli-mem-k", { ttlMs: 60_000 });
    const file = await configFile(`[host]\nnode = "other"\n[admin]\nlisten = "${h.admin!.url.replace("http://", "")}"\n`);

    const stats = await lockhostAsync(["status", "--config", file, "--json"]);
    expect(stats.status, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ node: "cli-admin-node", stats: { held: 1 } });

    const status = await lockhostAsync(["status", "global:cli-mem-k", "--config", file, "--json", "--show-owner"], { env: { LOCKHOST_ADMIN_TOKEN: TOKEN } });
    expect(status.status, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({
      name: "global:cli-mem-k",
      kind: "mutex",
      held: true,
      holders: [{ owner: lease!.owner, fence: lease!.fence }],
    });
    // The listener shows an owner token only to a caller with the admin token.
    const noToken = await lockhostAsync(["status", "global:cli-mem-k", "--config", file, "--json", "--show-owner"]);
    expect(JSON.parse(noToken.stdout)).toMatchObject({ name: "global:cli-mem-k", kind: "mutex", held: true, holders: [{ fence: lease!.fence }] });
    expect(noToken.stdout).not.toContain(lease!.owner);
    const human = await lockhostAsync(["status", "global:cli-mem-k", "--admin", h.admin!.url], { cwd: tmpdir() });
    expect(human.stdout).toContain("global:cli-mem-k: held");
    expect(human.stdout).toContain("holder:        plugin host on node cli-admin-node");
  });

  it("lists a memory host's locks through its admin listener", async () => {
    const h = await startHost();
    await h.locks.tryLock("cli-mem-list", { ttlMs: 60_000 });
    const r = await lockhostAsync(["locks", "--admin", h.admin!.url, "--json"], { cwd: tmpdir() });
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ locks: [{ name: "global:cli-mem-list", kind: "mutex", holder: { node: "cli-admin-node" }, fence: 1 }] });
    const table = await lockhostAsync(["locks", "--admin", h.admin!.url], { cwd: tmpdir() });
    expect(table.stdout).toMatch(/^global:cli-mem-list +mutex +host @ cli-admin-node +1 /m);
    // A free name's status points at the locks of its key held elsewhere, through the listener too.
    const plugin = await lockhostAsync(["status", "cli-mem-list", "--admin", h.admin!.url], { cwd: tmpdir() });
    expect(plugin.stdout).toContain("cli-mem-list: not held\n  but held: mutex global:cli-mem-list  (lockhost status global:cli-mem-list)");
    const rw = await lockhostAsync(["status", "global:cli-mem-list", "--kind", "rw", "--admin", h.admin!.url, "--json"], { cwd: tmpdir() });
    expect(JSON.parse(rw.stdout)).toEqual({
      name: "global:cli-mem-list",
      kind: "rw",
      held: false,
      holders: [],
      limit: 0,
      queued: 0,
      heldElsewhere: [{ name: "global:cli-mem-list", kind: "mutex" }],
    });
  });

  it("force-releases only with the right token: none, wrong, then from the environment", async () => {
    const h = await startHost();
    const lease = (await h.locks.tryLock("cli-force-k", { ttlMs: 60_000 }))!;
    const args = ["release", "--force", "global:cli-force-k", "--admin", h.admin!.url];

    const none = await lockhostAsync(args, { cwd: tmpdir() });
    expect(none.status).toBe(1);
    expect(none.stderr).toContain("PERMISSION_DENIED");
    // Sent without a token, answered 401 by the listener.
    expect(none.stderr).toContain("force-release needs an Authorization: Bearer <token> header");
    expect(none.stderr).toContain("set LOCKHOST_ADMIN_TOKEN");
    const wrong = await lockhostAsync(args, { cwd: tmpdir(), env: { LOCKHOST_ADMIN_TOKEN: "wrong-token-0123456789" } });
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain("PERMISSION_DENIED: the admin listener refused: wrong admin token");
    expect(wrong.stderr).not.toContain("wrong-token-0123456789");
    expect((await h.locks.status({ name: lease.name })).held).toBe(true);

    const ok = await lockhostAsync(args, { cwd: tmpdir(), env: { LOCKHOST_ADMIN_TOKEN: TOKEN } });
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout.trim()).toBe("released global:cli-force-k");
    expect(ok.stdout + ok.stderr).not.toContain(TOKEN);
    expect((await h.locks.status({ name: lease.name })).held).toBe(false);
    await expect(h.locks.renew(lease)).rejects.toMatchObject({ code: "LOST" });

    const again = await lockhostAsync(args, { cwd: tmpdir(), env: { LOCKHOST_ADMIN_TOKEN: TOKEN } });
    expect(again.stdout.trim()).toBe("global:cli-force-k was not held");
  });

  it("`lockhost run` logs its admin URL (never the token), and `lockhost status --admin` reads it", async () => {
    const file = await configFile(`[host]\nnode = "run-admin"\n[admin]\nlisten = "127.0.0.1:0"\ntoken = "\${LOCKHOST_ADMIN_TOKEN}"\n`);
    const run = runCli(["run", "--config", file], childEnv({ LOCKHOST_ADMIN_TOKEN: TOKEN }));
    try {
      await run.until((out) => out.includes('"msg":"lockhost host started"'));
      expect(run.exited(), `lockhost run exited early:\n${run.out()}`).toBe(false);
      const started = run
        .out()
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { msg: string; admin?: string })
        .find((l) => l.msg === "lockhost host started");
      expect(started?.admin).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
      const r = await lockhostAsync(["status", "--admin", started!.admin!, "--json"], { cwd: tmpdir() });
      expect(r.status, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ node: "run-admin", backend: "memory", stats: { held: 0 } });
    } finally {
      run.child.kill("SIGTERM");
    }
    expect(await run.exit).toBe(0);
    expect(run.out()).not.toContain(TOKEN);
  });

  it("reads through the listener without the admin token's ${VAR}, and a release through it names the unset variable", async () => {
    const h = await startHost();
    await h.locks.tryLock("cli-read-no-token", { ttlMs: 60_000 });
    const file = await configFile(`[admin]\nlisten = "${h.admin!.url.replace("http://", "")}"\ntoken = "\${CLI_UNSET_TOKEN}"\n`);
    for (const args of [["status"], ["status", "global:cli-read-no-token"], ["locks"]]) {
      const r = await lockhostAsync([...args, "--config", file, "--json"]);
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    const release = await lockhostAsync(["release", "--force", "global:cli-read-no-token", "--config", file]);
    expect(release.status).toBe(2);
    expect(release.stderr).toContain("[admin]: token uses ${CLI_UNSET_TOKEN}, but the environment variable CLI_UNSET_TOKEN is not set");
    expect((await h.locks.status({ name: "global:cli-read-no-token" })).held).toBe(true);
  });

  it("force-releases a memory lock with the token from the config's [admin] token", async () => {
    const h = await startHost();
    const lease = (await h.locks.tryLock("cli-force-cfg", { ttlMs: 60_000 }))!;
    const listen = h.admin!.url.replace("http://", "");
    const file = await configFile(`[admin]\nlisten = "${listen}"\ntoken = "\${CLI_TEST_TOKEN}"\n`);
    const r = await lockhostAsync(["release", "--force", "global:cli-force-cfg", "--config", file], { env: { CLI_TEST_TOKEN: TOKEN } });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toBe("released global:cli-force-cfg");
    expect((await h.locks.status({ name: lease.name })).held).toBe(false);
  });
});

describe('lockhost status, locks and release --admin against a listener with auth = "all" over HTTPS', () => {
  const TOKEN = "cli-tls-token-0123456789abc";
  let certs: TestCerts;
  let host: Host | undefined;
  beforeAll(() => {
    certs = makeTestCerts();
  });
  afterAll(() => certs.remove());
  afterEach(async () => {
    await host?.stop(1_000);
    host = undefined;
  });
  const start = async (admin: Record<string, unknown>): Promise<Host> => {
    host = await Host.start(
      resolveConfig({
        host: { node: "cli-tls-node" },
        admin: { listen: "127.0.0.1:0", token: TOKEN, auth: "all", certFile: certs.serverCert, keyFile: certs.serverKey, ...admin },
      } as ConfigInput),
      {
        logger: captureLogger().logger,
      },
    );
    return host;
  };

  it("sends the token on reads (config or environment), trusts --admin-ca or the config's cert_file, and says why it is refused without it", async () => {
    const h = await start({});
    await h.locks.tryLock("cli-tls-k", { ttlMs: 60_000 });
    const url = h.admin!.url;
    expect(url).toMatch(/^https:\/\//);
    const env = { LOCKHOST_ADMIN_TOKEN: TOKEN };
    for (const args of [["status"], ["status", "global:cli-tls-k"], ["locks"]]) {
      const r = await lockhostAsync([...args, "--admin", url, "--admin-ca", certs.ca, "--json"], { cwd: tmpdir(), env });
      expect(r.status, `${args.join(" ")}: ${r.stderr}`).toBe(0);
    }
    const without = await lockhostAsync(["locks", "--admin", url, "--admin-ca", certs.ca], { cwd: tmpdir() });
    expect(without.status).toBe(1);
    expect(without.stderr).toContain("GET /locks needs an Authorization: Bearer <token> header");
    expect(without.stderr).toContain("set LOCKHOST_ADMIN_TOKEN");
    // The config names the listener (https, as it has cert_file), its certificate and the token.
    const file = await configFile(
      `[admin]\nlisten = "${url.replace("https://", "")}"\ntoken = "\${CLI_TLS_TOKEN}"\nauth = "all"\ncert_file = "${certs.serverCert}"\nkey_file = ` +
        `"${certs.serverKey}"\n`,
    );
    const stats = await lockhostAsync(["status", "--config", file, "--json"], { env: { CLI_TLS_TOKEN: TOKEN } });
    expect(stats.status, stats.stderr).toBe(0);
    expect(JSON.parse(stats.stdout)).toMatchObject({ node: "cli-tls-node", stats: { held: 1 } });
    const release = await lockhostAsync(["release", "--force", "global:cli-tls-k", "--config", file], { env: { CLI_TLS_TOKEN: TOKEN } });
    expect(release.status, release.stderr).toBe(0);
    expect(release.stdout.trim()).toBe("released global:cli-tls-k");
  });

  it("exits 2 naming the file and the reason: a CA file that is missing or not a certificate, a CA that did not sign the listener's certificate", async () => {
    const h = await start({});
    const url = h.admin!.url;
    const missing = join(certs.dir, "missing.pem");
    const gone = await lockhostAsync(["status", "--admin", url, "--admin-ca", missing], { cwd: tmpdir() });
    expect(gone.status).toBe(2);
    expect(gone.stderr).toContain(`CONFIG_INVALID: --admin-ca: cannot read ${missing} (ENOENT)`);
    const key = await lockhostAsync(["status", "--admin", url, "--admin-ca", certs.serverKey], { cwd: tmpdir() });
    expect(key.status).toBe(2);
    expect(key.stderr).toContain(`CONFIG_INVALID: --admin-ca: ${certs.serverKey} holds no PEM certificate`);
    const other = await lockhostAsync(["status", "--admin", url, "--admin-ca", certs.otherCa], { cwd: tmpdir(), env: { LOCKHOST_ADMIN_TOKEN: TOKEN } });
    expect(other.status).toBe(2);
    expect(other.stderr).toContain(`CONFIG_INVALID: the admin listener at ${url} shows a certificate that --admin-ca ${certs.otherCa} does not vouch for`);
    // No CA at all: the system's CAs do not know the test CA.
    const none = await lockhostAsync(["status", "--admin", url], { cwd: tmpdir(), env: { LOCKHOST_ADMIN_TOKEN: TOKEN } });
    expect(none.status).toBe(2);
    expect(none.stderr).toContain("pass --admin-ca FILE");
  });

  it("shows a client certificate with --admin-cert and --admin-key to a listener with client_ca_file", async () => {
    const h = await start({ clientCaFile: certs.ca });
    const args = ["status", "--admin", h.admin!.url, "--admin-ca", certs.ca, "--json"];
    const env = { LOCKHOST_ADMIN_TOKEN: TOKEN };
    const ok = await lockhostAsync([...args, "--admin-cert", certs.clientCert, "--admin-key", certs.clientKey], { cwd: tmpdir(), env });
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ node: "cli-tls-node" });
    const without = await lockhostAsync(args, { cwd: tmpdir(), env });
    expect(without.status).toBe(2);
    expect(without.stderr).toContain("pass --admin-cert and --admin-key");
    const half = await lockhostAsync([...args, "--admin-cert", certs.clientCert], { cwd: tmpdir(), env });
    expect(half.status).toBe(2);
    expect(half.stderr).toContain("--admin-cert and --admin-key go together");
  });
});

/** A `lockhost` child process whose output is collected and whose exit is awaited. */
interface CliRun {
  readonly child: ChildProcess;
  /** Resolves with the exit code; listened for first, so a child that dies early ends every wait. */
  readonly exit: Promise<number | null>;
  exited(): boolean;
  /** stdout and stderr so far. */
  out(): string;
  /** Resolves once `ready(out)` holds, the child exited, or 15 s passed. */
  until(ready: (out: string) => boolean): Promise<void>;
}

function runCli(args: readonly string[], env?: NodeJS.ProcessEnv): CliRun {
  const child = spawn(process.execPath, [cli, ...args], { cwd: root, ...(env && { env }) });
  let exited = false;
  const exit = new Promise<number | null>((resolve) =>
    child.on("exit", (code) => {
      exited = true;
      resolve(code);
    }),
  );
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  return {
    child,
    exit,
    exited: () => exited,
    out: () => out,
    async until(ready) {
      const deadline = Date.now() + 15_000;
      while (!exited && Date.now() < deadline && !ready(out)) await Promise.race([new Promise((r) => setTimeout(r, 100)), exit]);
    },
  };
}

describe("the operator guide's two hosts, as written", () => {
  it.each([
    ["Redis", "redis", "examples/redis.toml"],
    ["etcd", "etcd", "examples/etcd.toml"],
  ])("runs two hosts on the example %s config: one runner per tick, status and the admin listener answer", async (_, backend, file) => {
    // docs/operators.md "Two hosts, one backend, one runner per tick" (and the README's quick start), command for command (npx lockhost = this CLI).
    const servers = { REDIS_URL: redisUrl(), ETCD_ENDPOINT: etcdEndpoints()[0] };
    const env = (extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv => ({ ...process.env, ...servers, ...extra });
    const a = runCli(["run", "--config", file], env({ LOCKHOST_NODE: "node-a" }));
    const b = runCli(["run", "--config", file], env({ LOCKHOST_NODE: "node-b", LOCKHOST_ADMIN_LISTEN: "127.0.0.1:9465" }));
    try {
      const ran = (out: string): boolean => out.includes("schedule lock taken; running");
      const skipped = (out: string): boolean => out.includes("tick skipped: another node holds the schedule lock");
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !((ran(a.out()) && skipped(b.out())) || (ran(b.out()) && skipped(a.out())))) {
        expect(a.exited(), a.out()).toBe(false);
        expect(b.exited(), b.out()).toBe(false);
        await new Promise((r) => setTimeout(r, 200));
      }
      expect((ran(a.out()) && skipped(b.out())) || (ran(b.out()) && skipped(a.out())), a.out() + b.out()).toBe(true);
      expect(a.out() + b.out()).not.toContain("EADDRINUSE");
      const status = await lockhostAsync(["status", "lockhost:schedule:report.run", "--config", file], { env: servers });
      expect(status.status, status.stderr).toBe(0);
      expect(status.stdout).toMatch(/lockhost:schedule:report\.run: (held|not held)/);
      const locks = await lockhostAsync(["locks", "--config", file], { env: servers });
      expect(locks.status, locks.stderr).toBe(0);
      expect(locks.stdout).toMatch(/lockhost:node:node-[ab]/);
      const counters = await lockhostAsync(["status", "--admin", "http://127.0.0.1:9464"]);
      expect(counters.status, counters.stderr).toBe(0);
      expect(counters.stdout).toContain(`node node-a, ${backend} backend`);
    } finally {
      a.child.kill("SIGTERM");
      b.child.kill("SIGTERM");
      expect(await a.exit).toBe(0);
      expect(await b.exit).toBe(0);
    }
  });
});
