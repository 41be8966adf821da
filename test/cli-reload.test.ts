// `lockhost reload` and SIGHUP against a real `lockhost run` process (memory backend, an admin
// listener with a token): the exit codes (0 reloaded, 1 refused with the host's code and why,
// 2 no listener), a reload by signal that adds a schedule, and a sha256 pin that does not match
// at start (exit 2, CONFIG_INVALID naming the plugin).
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { guestWasm } from "./support/guests.js";
import { freePort } from "./support/servers.js";
import { sleep } from "./support/until.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");
const TOKEN = "cli-reload-token-0123456789";

let dir: string;
const running: ChildProcess[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "lockhost-cli-reload-"));
});
afterEach(() => {
  for (const child of running.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const env = { ...process.env, LOCKHOST_ADMIN_TOKEN: TOKEN };

/** `lockhost reload ...`, waited for. */
function reload(...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [cli, "reload", ...args], { cwd: root, encoding: "utf8", timeout: 150_000, env });
}

/** A `lockhost run` process and what it printed. */
function run(config: string): { child: ChildProcess; out: () => string; until: (text: string) => Promise<void>; exit: Promise<number | null> } {
  const child = spawn(process.execPath, [cli, "run", "--config", config, "--log-format", "json"], { cwd: root, env, stdio: ["ignore", "pipe", "pipe"] });
  running.push(child);
  let out = "";
  child.stdout!.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return {
    child,
    out: () => out,
    exit,
    async until(text) {
      const deadline = Date.now() + 60_000;
      while (!out.includes(text)) {
        if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no "${text}" in:\n${out}`);
        await sleep(50);
      }
    },
  };
}

async function setup(name: string, port: number): Promise<{ file: string; wasm: string; write: (extra?: string, head?: string) => Promise<void> }> {
  const file = join(dir, `${name}.toml`);
  const wasm = join(dir, `${name}.wasm`);
  await copyFile(guestWasm("ticker"), wasm);
  const write = (extra = "", head = `[host]\nnode = "${name}"\n`): Promise<void> =>
    writeFile(
      file,
      `${head}[locking]\nbackend = "memory"\n[admin]\nlisten = "127.0.0.1:${port}"\ntoken = ` +
        `"\${LOCKHOST_ADMIN_TOKEN}"\n[[plugins]]\nname = "t"\nwasm = "${wasm}"\n${extra}`,
    );
  await write();
  return { file, wasm, write };
}

describe("lockhost reload", () => {
  it("exits 0 with what changed, 1 with the host's code and reason when it refuses (the host runs on), and 2 when no listener answers", async () => {
    const port = await freePort();
    const { file, wasm, write } = await setup("cli-a", port);
    const host = run(file);
    await host.until("lockhost host started");

    await write(`[[scheduled]]\nplugin = "t"\nexport = "run"\nschedule = "1s"\n`);
    const ok = reload("--config", file);
    expect(ok.stderr).toBe("");
    expect(ok.stdout).toContain(`reloaded ${file} at http://127.0.0.1:${port}`);
    expect(ok.stdout).toContain("kept t");
    expect(ok.stdout).toContain("schedules: added t.run");
    expect(ok.status).toBe(0);
    await host.until('"msg":"guest: tick build=a schedule=run');

    await copyFile(guestWasm("ticker-b"), wasm);
    const json = reload("--config", file, "--json");
    expect(json.status, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({ source: file, plugins: { replaced: ["t"] } });
    await host.until('"msg":"guest: tick build=b schedule=run');

    await write("", `[host]\nnode = "renamed"\n`);
    const refused = reload("--config", file);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        "^lockhost reload: NOT_RELOADABLE: the admin listener answered 409: .*" +
          "reload refused, nothing changed: this key changes what a running host cannot: \\[host\\] node",
      ),
    );
    await host.until("reload refused; the running config is kept: NOT_RELOADABLE");

    await write(`[[scheduled]]\nplugin = "t"\nexport = "run"\nschedule = "sometimes"\n`);
    // Through --admin (this command reads no config then), the host's own answer: 1.
    const invalid = reload("--admin", `http://127.0.0.1:${port}`);
    expect(invalid.status).toBe(1);
    expect(invalid.stderr).toMatch(/^lockhost reload: CONFIG_INVALID: the admin listener answered 422: .*schedule/);
    // With --config the command reads the broken file itself first, and says so: 2.
    const ownConfig = reload("--config", file);
    expect(ownConfig.status).toBe(2);
    expect(ownConfig.stderr).toContain("lockhost: CONFIG_INVALID");

    // Without the token the listener refuses: 1 too, naming the token.
    const noToken = spawnSync(process.execPath, [cli, "reload", "--admin", `http://127.0.0.1:${port}`], {
      cwd: root,
      encoding: "utf8",
      timeout: 60_000,
      env: { ...process.env, LOCKHOST_ADMIN_TOKEN: "" },
    });
    expect(noToken.status).toBe(1);
    expect(noToken.stderr).toContain("PERMISSION_DENIED");
    expect(noToken.stderr).toContain("reload needs an Authorization: Bearer <token> header");

    const nobody = reload("--admin", `http://127.0.0.1:${await freePort()}`);
    expect(nobody.status).toBe(2);
    expect(nobody.stderr).toContain("no admin listener answers");

    const usage = reload("extra");
    expect(usage.status).toBe(2);

    // Still running its last good config, ticking with build b.
    expect(host.child.exitCode).toBeNull();
    host.child.kill("SIGTERM");
    expect(await host.exit).toBe(0);
  }, 240_000);

  it("SIGHUP reloads the file: a schedule added there starts ticking; an invalid file is refused and logged, and the host runs on", async () => {
    const port = await freePort();
    const { file, write } = await setup("cli-hup", port);
    const host = run(file);
    await host.until("lockhost host started");
    await write(`[[scheduled]]\nplugin = "t"\nexport = "other"\nschedule = "1s"\n`);
    host.child.kill("SIGHUP");
    await host.until("reload: applied");
    await host.until('"msg":"guest: tick build=a schedule=other');
    await write(`[[scheduled]]\nplugin = "t"\nexport = "missing"\nschedule = "1s"\n`);
    host.child.kill("SIGHUP");
    await host.until("reload refused; the running config is kept: CONFIG_INVALID");
    expect(host.out()).toMatch(/plugin t has no export \\"missing\\"/);
    expect(host.child.exitCode).toBeNull();
    host.child.kill("SIGTERM");
    expect(await host.exit).toBe(0);
  }, 120_000);

  it("a sha256 pin that does not match the module fails the start: exit 2, CONFIG_INVALID naming the plugin", async () => {
    const { file, write } = await setup("cli-pin", await freePort());
    await write(`sha256 = "${"ab".repeat(32)}"\n`);
    const r = spawnSync(process.execPath, [cli, "run", "--config", file], { cwd: root, encoding: "utf8", timeout: 60_000, env });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain(`lockhost: CONFIG_INVALID: ${file}: [[plugins]] "t": sha256 pins the module to ${"ab".repeat(32)}, but wasm = `);
  }, 120_000);
});
