// A holder hears of a loss at once, with or without keepalive, on every backend: when another
// process force-releases its lock, or takes it over by owner token and releases it. On
// PostgreSQL the holder's other locks on the same session stay held.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import pg from "pg";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { databaseUrl, redisUrl } from "./support/servers.js";

const RUN = randomUUID().slice(0, 8);
const PREFIX = `lockhost-test:lost-${RUN}:`;
const TABLE = `lockhost_test_lost_${RUN}`;
/**
 * "At once": by the notice, not by a renewal or the TTL. The leases last 30 s (a keepalive renews
 * every 10 s, and without one nothing looks before the TTL), so 3 s tells the notice apart from
 * both and leaves room for a machine at load 10 (500 ms was missed there once).
 */
const TOLD_WITHIN_MS = 3_000;

const memory = new MemoryBackend();
const stores: Record<string, () => LockBackend> = {
  memory: () => memory,
  redis: () => new RedisBackend({ ...redisDefaults, url: redisUrl(), keyPrefix: PREFIX }, captureLogger().logger),
  // One session: the holder's locks all share it, so a session ended would take all of them.
  pg: () => new PgBackend({ ...pgDefaults, url: databaseUrl(), table: TABLE, sessions: 1 }, captureLogger().logger),
};

afterAll(async () => {
  await dropRedisPrefix(redisUrl(), PREFIX);
  await dropPgTable(databaseUrl(), TABLE);
});

async function toldWithin(lease: { state: string }, ms: number): Promise<number> {
  const started = performance.now();
  while (lease.state !== "lost") {
    if (performance.now() - started > ms) throw new Error(`the holder was not told within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
  return performance.now() - started;
}

describe.each(Object.keys(stores))("%s: the holder hears of a loss at once", (store) => {
  it.each([false, true])("when another process force-releases its lock (keepalive %s), and keeps its other locks", async (keepalive) => {
    const holder = new LockService(stores[store]!(), { node: "holder" });
    const operator = new LockService(stores[store]!(), { node: "operator" });
    try {
      const key = `force-${keepalive}`;
      const lease = (await holder.tryLock(key, { ttlMs: 30_000, keepalive }))!;
      const other = (await holder.tryLock(`${key}-other`, { ttlMs: 30_000, keepalive }))!;
      let reason: unknown;
      lease.signal.addEventListener("abort", () => (reason = lease.signal.reason));
      expect(await operator.forceRelease({ name: lease.name })).toBe(1);
      await toldWithin(lease, TOLD_WITHIN_MS);
      expect(reason).toMatchObject({ code: "LOST" });
      // The key is free for the next holder, with a higher fence; the holder's other lock is untouched.
      const next = (await operator.tryLock(key, { ttlMs: 30_000 }))!;
      expect(next.fence).toBeGreaterThan(lease.fence);
      expect(other.state).toBe("held");
      expect((await holder.status({ name: other.name })).held).toBe(true);
      await holder.renew(other, 30_000);
      await operator.release(next);
      await holder.release(other);
    } finally {
      await holder.close({ closeBackend: store !== "memory" });
      await operator.close({ closeBackend: store !== "memory" });
    }
  });

  it("when another process takes its lock over by owner token and releases it", async () => {
    const holder = new LockService(stores[store]!(), { node: "holder" });
    const other = new LockService(stores[store]!(), { node: "other" });
    try {
      const lease = (await holder.tryLock("handed-over", { ttlMs: 30_000 }))!;
      await other.release(await other.restore("handed-over", lease.owner));
      await toldWithin(lease, TOLD_WITHIN_MS);
      await expect(holder.release(lease)).rejects.toMatchObject({ code: "LOST" });
    } finally {
      await holder.close({ closeBackend: store !== "memory" });
      await other.close({ closeBackend: store !== "memory" });
    }
  });
});

describe("pg: the holder hears of a loss at once", () => {
  it("when the session that holds its lock ends (the server freed the advisory lock), while its notices still arrive", async () => {
    const backend = stores.pg!() as PgBackend;
    const holder = new LockService(backend, { node: "holder" });
    const admin = new pg.Client({ connectionString: databaseUrl() });
    await admin.connect();
    try {
      // Long TTL and keepalive off: only the backend's own word can tell the holder before the lease ends.
      const lease = (await holder.tryLock("session-ended", { ttlMs: 60_000, keepalive: false }))!;
      const [pid] = backend.sessionPids;
      // Only the lock session: the LISTEN connection stays up, so no reconnect says "notices may be lost".
      await admin.query("select pg_terminate_backend($1)", [pid]);
      await toldWithin(lease, TOLD_WITHIN_MS);
      expect(lease.lostReason).toMatchObject({ code: "LOST" });
    } finally {
      await admin.end();
      await holder.close();
    }
  });
});
