// The CLI's output through a real pipe to a slow reader: every byte arrives before it exits.
// Before: `lockhost locks --json | wc -c` read 65536 of 374,902 bytes, exit code 0 (process.exit()
// dropped what the pipe had not taken yet).
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createBackend } from "../host/registry/create.js";
import { LockService } from "../host/locking/service.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { redisUrl } from "./support/servers.js";

const root = fileURLToPath(new URL("..", import.meta.url));
const cli = join(root, "dist/host/cli/main.js");
const PREFIX = `lockhost-test:cli-pipe-${randomUUID().slice(0, 8)}:`;
const LOCKS = 1000;

/**
 * Runs the CLI with its stdout on a pipe nobody reads for `stallMs` (the reader is slow: the
 * pipe fills up, the CLI finishes its work meanwhile), then reads all of it.
 */
function slowlyRead(args: readonly string[], stallMs: number): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [cli, ...args], { cwd: root, stdio: ["ignore", "pipe", "pipe"] });
    const chunks: Buffer[] = [];
    let stderr = "";
    // Listened to at once, then paused: a stream nobody listens to is resumed into the void when
    // the child exits (Node's flushStdio), losing what the pipe held.
    child.stdout.on("data", (d: Buffer) => void chunks.push(d));
    child.stdout.pause();
    setTimeout(() => child.stdout.resume(), stallMs);
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    // 'close' may come before the reader wakes up when all the output fit in the pipe's buffers:
    // what was written is read to its end all the same.
    const ended = new Promise<void>((r) => child.stdout.once("end", () => r()));
    child.on("error", reject);
    child.on("close", (status) => {
      clearTimeout(killer);
      void ended.then(() => resolve({ status, stdout: Buffer.concat(chunks).toString("utf8"), stderr }));
    });
  });
}

describe("the CLI's output in a pipe", () => {
  let dir: string;
  let file: string;
  let locks: LockService;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-cli-pipe-"));
    file = join(dir, "lockhost.toml");
    await writeFile(file, `[locking]\nbackend = "redis"\n[locking.redis]\nurl = "${redisUrl()}"\nkey_prefix = "${PREFIX}"\n`);
    locks = new LockService(
      await createBackend({ backend: "redis", redis: { ...redisDefaults, url: redisUrl(), keyPrefix: PREFIX } }, captureLogger().logger),
      {
        node: "cli-pipe-holder-with-a-long-node-name",
      },
    );
    // Long names, so one page of them is far past the pipe's 64 KiB.
    const name = (i: number): string => `cli-pipe/${"a-long-lock-name-".repeat(5)}${i}`;
    for (let i = 0; i < LOCKS; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, j) => locks.tryLock(name(i + j), { ttlMs: 120_000 })));
    }
    expect(locks.heldCount).toBe(LOCKS);
  }, 120_000);

  afterAll(async () => {
    await locks?.close();
    await dropRedisPrefix(redisUrl(), PREFIX);
    await rm(dir, { recursive: true, force: true });
  });

  it("`locks --json` writes the whole page (> 200 KiB) to a slow reader, which parses it", async () => {
    const r = await slowlyRead(["locks", "--json", "--limit", String(LOCKS), "--config", file], 1500);
    expect(r.status, r.stderr).toBe(0);
    expect(Buffer.byteLength(r.stdout)).toBeGreaterThan(200 * 1024);
    const page = JSON.parse(r.stdout) as { locks: { name: string }[]; cursor?: string };
    expect(page.locks).toHaveLength(LOCKS);
    expect(new Set(page.locks.map((l) => l.name)).size).toBe(LOCKS);
  }, 90_000);

  it("`locks` as a table writes every row to a slow reader", async () => {
    const r = await slowlyRead(["locks", "--limit", String(LOCKS), "--config", file], 1500);
    expect(r.status, r.stderr).toBe(0);
    const rows = r.stdout.trim().split("\n");
    expect(rows[0]).toMatch(/^LOCK +KIND/);
    expect(rows.filter((l) => l.startsWith("global:cli-pipe/"))).toHaveLength(LOCKS);
  }, 90_000);
});
