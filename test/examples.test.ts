// The shipped example configs, run as their comments say, for a few ticks against the real
// backend (private servers: these tests share no key, table or port with others): the happy path
// logs no ERROR and no WARN line, and SIGTERM stops each with every lock released.
// Before: the ledger plugin of examples/{redis,pg,etcd}.toml had no [plugins.config] and logged
// an ERROR every 3 s; lockhost.toml run directly warned ECONNREFUSED every tick (its ledger
// service is started only by `npm start`).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEtcdCluster, type EtcdCluster } from "./support/etcd-servers.js";
import { startPostgresServer, startRedisServer, type PgServer, type RedisServer } from "./support/servers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");

/** The memory backend's notice, a warning by design (its locks are not shared): the one WARN an example on memory logs. */
const MEMORY_NOTICE = "memory backend: locks live in this process only and are NOT shared with other hosts; use redis or pg for a cluster";

interface LogLine {
  level: number;
  msg: string;
}

/**
 * Runs `args` (node arguments) from the repository root until `ready(lines)` holds, then
 * SIGTERM; resolves to its exit code, its JSON log lines and its whole output.
 */
async function runExample(
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  ready: (lines: LogLine[]) => boolean,
): Promise<{ code: number | null; lines: LogLine[]; out: string }> {
  const child = spawn(process.execPath, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  let exited = false;
  void exit.then(() => (exited = true));
  const lines = (): LogLine[] =>
    out
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => JSON.parse(l) as LogLine);
  try {
    // A bound for a broken example, not a speed assertion.
    const deadline = Date.now() + 90_000;
    while (!exited && Date.now() < deadline && !ready(lines())) await new Promise((r) => setTimeout(r, 200));
    expect(exited, `the example exited before its ticks:\n${out}`).toBe(false);
    expect(ready(lines()), `no ticks in time:\n${out}`).toBe(true);
  } finally {
    child.kill("SIGTERM");
  }
  const code = await exit;
  return { code, lines: lines(), out };
}

const ticks = (lines: LogLine[]): number => lines.filter((l) => l.msg === "schedule lock taken; running").length;

/** No ERROR line, no WARN line but the memory notice, every lock released at the end, exit 0. */
function expectClean({ code, lines, out }: { code: number | null; lines: LogLine[]; out: string }): void {
  const loud = lines.filter((l) => l.level >= 40 && l.msg !== MEMORY_NOTICE);
  expect(loud, out).toEqual([]);
  expect(lines.map((l) => l.msg)).toContain("lockhost host stopped; every lock released");
  expect(code, out).toBe(0);
}

describe("the example configs run clean", () => {
  let redis: RedisServer | undefined;
  let pg: PgServer | undefined;
  let etcd: EtcdCluster | undefined;
  beforeAll(async () => {
    [redis, pg, etcd] = await Promise.all([startRedisServer(), startPostgresServer(), startEtcdCluster(1)]);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([redis?.stop(), pg?.stop(), etcd?.stop()]);
  }, 60_000);

  it("lockhost.toml, run directly as two local nodes", async () => {
    const run = await runExample([cli, "run", "--config", "lockhost.toml", "--local-nodes", "2"], {}, (lines) => ticks(lines) >= 3);
    expectClean(run);
  }, 120_000);

  it("examples/demo.toml through `npm start` (examples/demo.ts, with its ledger service): fenced writes accepted", async () => {
    const run = await runExample(
      [join(root, "dist/examples/demo.js")],
      {},
      (lines) => ticks(lines) >= 3 && lines.some((l) => l.msg.startsWith("guest: ledger: write accepted with fence")),
    );
    expect(run.out).toMatch(/^ledger service: accepted 100 under global:ledger with fence \d+; balance \d+$/m);
    expectClean(run);
  }, 120_000);

  it.each([
    ["examples/redis.toml", () => ({ REDIS_URL: redis!.url })],
    ["examples/pg.toml", () => ({ DATABASE_URL: pg!.url })],
    ["examples/etcd.toml", () => ({ ETCD_ENDPOINT: etcd!.endpoints[0]! })],
  ])(
    "%s, on its backend",
    async (file, backend) => {
      const env = { ...backend(), LOCKHOST_NODE: "example-a", LOCKHOST_ADMIN_LISTEN: "127.0.0.1:0" };
      const run = await runExample([cli, "run", "--config", file], env, (lines) => ticks(lines) >= 3);
      expectClean(run);
    },
    120_000,
  );
});
