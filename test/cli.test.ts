// The lockhost CLI as an operator runs it: a real process, real signals.
import { spawn, spawnSync } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

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

  it("names the config file when the configured backend is not available", async () => {
    const file = await configFile('[locking]\nbackend = "redis"\n');
    for (const args of [["status", "global:x"], ["run"]]) {
      const r = lockhost(...args, "--config", file);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`CONFIG_INVALID: ${file}: [locking] backend = "redis" is not available`);
    }
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
