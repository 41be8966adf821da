// A queue must not outlive its waiters: a host killed while its waiter queues for a fair mutex
// (or a write lock: the same queue) must not keep a free key from everyone until its place
// lapses. Its place is tied to what dies with it (pg: its session's pid; Redis: its instance's
// subscription), so the next host takes the key at once. Real processes, killed with SIGKILL.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import type { LockBackend } from "../kit/backend.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";
import { sleep } from "./support/until.js";
import { silent } from "./support/log.js";

const TABLE = `lockhost_test_fair_dead_${randomUUID().slice(0, 8)}`;
const PREFIX = `lockhost-test-fair-dead:${randomUUID().slice(0, 8)}:`;
const CHILD = fileURLToPath(new URL("./support/queued-host.mjs", import.meta.url));

afterAll(async () => {
  await dropPgTable(databaseUrl(), TABLE);
  await dropRedisPrefix(redisUrl(), PREFIX);
});

const targets: { name: string; url: string; where: string; create: () => LockBackend }[] = [
  { name: "pg", url: databaseUrl(), where: TABLE, create: () => new PgBackend({ ...pgDefaults, url: databaseUrl(), table: TABLE }, silent) },
  {
    name: "redis",
    url: redisUrl(),
    where: PREFIX,
    create: () => new RedisBackend({ url: redisUrl(), keyPrefix: PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent),
  },
];

describe.each(targets)("a dead host's queued waiter: $name", (target) => {
  it("gives its place up with its host: the key goes to the next host within a poll interval, not when the place lapses", async () => {
    // The bound below is one poll interval: 3 s leaves a loaded machine room for the first
    // attempt, and is still nothing beside the three minutes a place lapses after.
    const pollIntervalMs = 3_000;
    const a = new LockService(target.create(), { node: "a", waiting: { pollIntervalMs } });
    const c = new LockService(target.create(), { node: "c", waiting: { pollIntervalMs } });
    try {
      const key = `dead-${randomUUID().slice(0, 8)}`;
      const held = (await a.tryLock(key, { ttlMs: 30_000, fair: true }))!;
      const child = spawn(process.execPath, [CHILD, target.name, target.url, target.where, key], { stdio: "ignore" });
      const exited = new Promise((r) => child.once("exit", r));
      const until = performance.now() + 10_000;
      while ((await a.status(key, { kind: "fair" })).queued !== 1) {
        if (performance.now() > until) throw new Error("the child host never queued");
        await sleep(20);
      }
      child.kill("SIGKILL");
      await exited;
      // The server notices the closed socket: give it a moment, far below the place's three minutes.
      await sleep(500);
      await a.release(held);
      const t0 = performance.now();
      const lease = await c.acquire(key, { ttlMs: 10_000, waitMs: 20_000, fair: true });
      expect(performance.now() - t0).toBeLessThan(pollIntervalMs);
      expect(await c.status(key, { kind: "fair" })).toMatchObject({ queued: 0 });
      await c.release(lease);
    } finally {
      await a.close();
      await c.close();
    }
  });
});
