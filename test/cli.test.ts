// The lockhost CLI as an operator runs it: a real process, real signals.
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { CONFIG_DEFAULTS } from "../host/config/defaults.js";
import type { LockingConfig } from "../host/config/types.js";
import { LockService } from "../host/locking/service.js";
import { createBackend } from "../plugins/backends/index.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { databaseUrl, freePort, redisUrl } from "./support/servers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");
const lockhost = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { cwd: root, encoding: "utf8", timeout: 20_000 });

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
  it.each([[], ["--help"], ["run", "--help"], ["status", "--help"], ["release", "--help"]])("prints help for %j", (...args) => {
    const r = lockhost(...args);
    expect(r.stdout).toContain("Usage: lockhost");
    expect(r.status).toBe(args.length === 0 ? 2 : 0);
  });

  it("rejects an unknown command and a release without --force", () => {
    expect(lockhost("frobnicate").status).toBe(2);
    const r = lockhost("release", "global:x", "--config", "lockhost.toml");
    expect(r.status).toBe(2);
    expect(r.stderr).toContain("refusing without --force");
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
    const child = spawn(process.execPath, [cli, "run", "--config", "lockhost.toml", "--local-nodes", "2"], { cwd: root });
    // Listen for the exit first: a child that dies early ends the wait instead of hanging the test.
    let exited = false;
    const exit = new Promise<number | null>((resolve) =>
      child.on("exit", (code) => {
        exited = true;
        resolve(code);
      }),
    );
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const deadline = Date.now() + 15_000;
    while (!exited && Date.now() < deadline && !(out.includes("another node holds the schedule lock") && out.includes("report: generated with fence"))) {
      await Promise.race([new Promise((r) => setTimeout(r, 100)), exit]);
    }
    expect(exited, `lockhost run exited before SIGTERM:\n${out}`).toBe(false);
    child.kill("SIGTERM");
    const code = await exit;
    const lines = out.split("\n").filter(Boolean).map((l) => JSON.parse(l) as { msg: string; node?: string });
    const msgs = lines.map((l) => l.msg);
    expect(msgs).toContain("schedule lock taken; running");
    expect(msgs).toContain("tick skipped: another node holds the schedule lock");
    expect(msgs.some((m) => m.startsWith("guest: report: generated with fence"))).toBe(true);
    expect(msgs.filter((m) => m === "lockhost host stopped; every lock released")).toHaveLength(2);
    expect(code).toBe(0);
  });
});

const RUN = randomUUID().slice(0, 8);
const PREFIX = `lockhost-test:cli-${RUN}:`;
const TABLE = `lockhost_test_cli_${RUN}`;

describe.each([
  {
    backend: "redis",
    toml: () => `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}"\nkey_prefix = "${PREFIX}"`,
    locking: (): LockingConfig => ({ backend: "redis", redis: { ...CONFIG_DEFAULTS.redis, url: redisUrl(), keyPrefix: PREFIX } }),
    unreachable: (port: number) => `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "redis://:hunter2@127.0.0.1:${port}"\ncommand_timeout_ms = 300`,
  },
  {
    backend: "pg",
    toml: () => `[locking]\nbackend = "pg"\n[locking.pg]\nurl = "${databaseUrl()}"\ntable = "${TABLE}"`,
    locking: (): LockingConfig => ({ backend: "pg", pg: { ...CONFIG_DEFAULTS.pg, url: databaseUrl(), table: TABLE } }),
    unreachable: (port: number) => `[locking]\nbackend = "pg"\n[locking.pg]\nurl = "postgres://postgres:hunter2@127.0.0.1:${port}/test"\ncommand_timeout_ms = 300`,
  },
])("lockhost status and release --force on $backend", ({ backend, toml, locking, unreachable }) => {
  afterAll(async () => {
    if (backend === "redis") await dropRedisPrefix(redisUrl(), PREFIX);
    else await dropPgTable(databaseUrl(), TABLE);
  });

  it("shows the holder of a lock another process holds, force-releases it, and the holder finds it lost", async () => {
    const file = await configFile(toml());
    const locks = new LockService(createBackend(locking(), captureLogger().logger), { node: "cli-holder" });
    try {
      const lease = await locks.tryLock("cli-x", { ttlMs: 30_000 });
      expect(lease).not.toBeNull();
      const shown = lockhost("status", "global:cli-x", "--config", file, "--json");
      expect(shown.status, shown.stderr).toBe(0);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        key: "global:cli-x", held: true, owner: lease!.owner, fence: lease!.fence, holder: { plugin: "host", node: "cli-holder", hostname: hostname() },
      });
      const human = lockhost("status", "global:cli-x", "--config", file);
      expect(human.stdout).toContain(`holder:        plugin host on node cli-holder (host ${hostname()})`);

      const released = lockhost("release", "--force", "global:cli-x", "--config", file);
      expect(released.status, released.stderr).toBe(0);
      expect(released.stdout.trim()).toBe("released global:cli-x");
      expect(JSON.parse(lockhost("status", "global:cli-x", "--config", file, "--json").stdout)).toEqual({ key: "global:cli-x", held: false });
      await expect(locks.renew(lease!)).rejects.toMatchObject({ code: "LOST" });
      expect(lockhost("release", "--force", "global:cli-x", "--config", file).stdout.trim()).toBe("global:cli-x was not held");
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
