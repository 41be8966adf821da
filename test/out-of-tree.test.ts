// A backend written outside lockhost, end to end: the packed lockhost is installed in a fresh
// folder, a backend package there is compiled against its public kit (lockhost/backend), the
// published contract suite (lockhost/testing) runs against it, and the CLI runs a guest on it,
// named in the TOML only ([locking] packages) and configured by its own [locking.acme] table.
import { execFile, spawn } from "node:child_process";
import { copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const root = join(import.meta.dirname, "..");
const node = process.execPath;
let app: string;

beforeAll(async () => {
  app = await mkdtemp(join(tmpdir(), "lockhost-out-of-tree-"));
  // The dist is built by `npm test`'s pretest; prepare would only build it again.
  await run("npm", ["pack", "--ignore-scripts", "--pack-destination", app], { cwd: root, timeout: 120_000 });
  const tarball = (await readdir(app)).find((f) => f.endsWith(".tgz"))!;
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "app", private: true, type: "module", dependencies: { lockhost: `file:./${tarball}` } }));
  await run("npm", ["install", "--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"], { cwd: app, timeout: 300_000 });
  // vitest is lockhost/testing's optional peer: the author brings their own (here, ours).
  await symlink(join(root, "node_modules/vitest"), join(app, "node_modules/vitest"), "dir");

  // The backend package, in TypeScript, compiled against the installed lockhost's types.
  const pkg = join(app, "node_modules/lockhost-backend-acme");
  await mkdir(pkg, { recursive: true });
  await copyFile(join(root, "test/fixtures/acme-backend/index.ts"), join(pkg, "index.ts"));
  await writeFile(join(pkg, "package.json"), JSON.stringify({ name: "lockhost-backend-acme", type: "module", exports: { ".": "./index.js" } }));
  await writeFile(
    join(pkg, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: { target: "ES2022", module: "NodeNext", moduleResolution: "NodeNext", strict: true, skipLibCheck: true, types: [] },
      files: ["index.ts"],
    }),
  );
  await run(node, [join(root, "node_modules/typescript/bin/tsc"), "-p", pkg], { cwd: pkg, timeout: 120_000 });

  await copyFile(join(root, "plugins/guests/build/report.wasm"), join(app, "report.wasm"));
}, 600_000);

afterAll(async () => {
  if (app) await rm(app, { recursive: true, force: true });
});

describe("an embedder's install of the packed lockhost", () => {
  it("carries no guest compiler: assemblyscript (and its binaryen) is an optional peer for guest authors", async () => {
    const installed = await readdir(join(app, "node_modules"));
    expect(installed).toContain("lockhost");
    expect(installed).not.toContain("assemblyscript");
    expect(installed).not.toContain("binaryen");
  });
});

describe("the packed lockhost's dashboard", () => {
  it("ships compiled: the installed package serves its page, modules and icon (no TypeScript needed)", async () => {
    await writeFile(
      join(app, "dashboard.mjs"),
      [
        'import { pino } from "pino";',
        'import { LockService, startAdminServer } from "lockhost";',
        'import { MemoryBackend } from "lockhost/memory";',
        'const service = new LockService(new MemoryBackend(), { node: "n" });',
        'const server = await startAdminServer({ service, settings: { listen: { host: "127.0.0.1", port: 0 } }, log: pino({ level: "silent" }), node: "n" });',
        "const got = {};",
        'for (const path of ["/dashboard", "/dashboard/main.js", "/dashboard/locks.js", "/dashboard/dashboard.css", "/favicon.ico"]) {',
        "  const res = await fetch(server.url + path);",
        '  got[path] = [res.status, res.headers.get("content-type"), (await res.text()).length > 0];',
        "}",
        "console.log(JSON.stringify(got));",
        "await server.close();",
        "await service.close();",
      ].join("\n"),
    );
    const { stdout } = await run(node, ["dashboard.mjs"], { cwd: app, timeout: 60_000 });
    expect(JSON.parse(stdout)).toEqual({
      "/dashboard": [200, "text/html; charset=utf-8", true],
      "/dashboard/main.js": [200, "application/javascript; charset=utf-8", true],
      "/dashboard/locks.js": [200, "application/javascript; charset=utf-8", true],
      "/dashboard/dashboard.css": [200, "text/css; charset=utf-8", true],
      "/favicon.ico": [200, "image/svg+xml", true],
    });
    const shipped = await readdir(join(app, "node_modules/lockhost/dist/host/admin/dashboard/client"));
    expect(shipped.filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts"))).toEqual([]);
  });
});

describe("a third-party backend against the packed lockhost", () => {
  it("passes lockhost/testing, the contract suite every built-in backend runs", async () => {
    await writeFile(
      join(app, "acme.test.js"),
      [
        'import { pino } from "pino";',
        'import { backendContract } from "lockhost/testing";',
        'import { backend } from "lockhost-backend-acme";',
        'backendContract("acme", { create: () => backend.create({ label: "contract", maxLocks: 100_000 }, { log: pino({ level: "silent" }) }), ' +
          "queueKinds: false, election: false });",
      ].join("\n"),
    );
    const vitest = join(root, "node_modules/vitest/vitest.mjs");
    const result = await run(node, [vitest, "run", "--root", app, "--dir", app, "acme.test.js"], { cwd: app, timeout: 300_000 }).catch(
      (err: { stdout?: string; stderr?: string }) => ({ stdout: err.stdout ?? "", stderr: err.stderr ?? "", failed: true }),
    );
    expect(result, `${result.stdout}\n${result.stderr}`).not.toHaveProperty("failed");
    // eslint-disable-next-line no-control-regex
    const plain = result.stdout.replace(/\x1b\[[0-9;]*m/g, "");
    expect(plain).toMatch(/Tests\s+\d+ passed \(\d+\)/);
    expect(plain).not.toMatch(/failed/);
  }, 300_000);

  it("runs a guest on it through the CLI, named in the TOML only", async () => {
    await writeFile(
      join(app, "lockhost.toml"),
      `
[host]
node = "acme-node"
[locking]
backend = "acme"
packages = ["lockhost-backend-acme"]
[locking.acme]
label = "cli"
[[plugins]]
name = "report"
wasm = "report.wasm"
[[scheduled]]
plugin = "report"
export = "run"
schedule = "1s"
`,
    );
    const cli = spawn(node, [join(app, "node_modules/lockhost/dist/host/cli/main.js"), "run", "--config", "lockhost.toml"], { cwd: app });
    let out = "";
    cli.stdout.on("data", (d: Buffer) => (out += d.toString()));
    cli.stderr.on("data", (d: Buffer) => (out += d.toString()));
    const exited = new Promise<number | null>((resolve) => cli.on("exit", resolve));
    try {
      const deadline = Date.now() + 15_000;
      while (!out.includes("schedule lock taken") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      expect(out).toContain("schedule lock taken");
      expect(out).toContain('"lock":"lockhost:schedule:report.run"');
    } finally {
      cli.kill("SIGTERM");
    }
    expect(await exited, out).toBe(0);
  }, 60_000);

  it.each([
    [
      "validates its [locking.acme] table with its own schema, naming the file, table and key",
      '[locking]\nbackend = "acme"\npackages = ["lockhost-backend-acme"]\n[locking.acme]\nmax_locks = 0\n',
      "bad.toml: [locking.acme]: max_locks must be an integer from 1 to 100000, got 0",
    ],
    [
      "names a package that cannot be loaded, and the setting that asked for it",
      '[locking]\nbackend = "zk"\npackages = ["lockhost-backend-zk"]\n',
      'bad.toml: [locking] packages: "lockhost-backend-zk" could not be loaded',
    ],
  ])(
    "%s",
    async (_, toml, message) => {
      await writeFile(join(app, "bad.toml"), toml);
      const cli = join(app, "node_modules/lockhost/dist/host/cli/main.js");
      const refused = await run(node, [cli, "run", "--config", "bad.toml"], { cwd: app, timeout: 30_000 }).then(
        () => ({ code: 0, stderr: "" }),
        (e: { code?: number; stderr?: string }) => ({ code: e.code, stderr: e.stderr ?? "" }),
      );
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain(message);
    },
    60_000,
  );
});
