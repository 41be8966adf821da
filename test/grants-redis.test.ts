// The Redis ACL that docs/backends.md ("Least-privilege grants") lists, read from the page and
// run on a private redis-server: lockhost's basics work as a user with exactly those rules, and
// a user missing one gets an error that names what it lacks.
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { BackendHealth } from "../host/backend-health.js";
import { permitSpec } from "../kit/kinds.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { redisDefaults } from "../plugins/backends/redis/config.js";
import { startRedisCluster, startRedisServer, type RedisServer } from "./support/servers.js";
import { exerciseBasics } from "./support/grant-basics.js";
import { silent } from "./support/log.js";

const PASSWORD = "grants-test-pw";

const page = readFileSync(new URL("../docs/backends.md", import.meta.url), "utf8");

/** The rules of the docs' ACL SETUSER line that starts with `start`, as words. */
function documentedLine(start: string): string[] {
  const line = page.split("\n").find((l) => l.startsWith(`ACL SETUSER lockhost ${start}`));
  if (!line) throw new Error(`docs/backends.md has no \`ACL SETUSER lockhost ${start}...\` line`);
  return line
    .split(" ")
    .slice(3)
    .map((w) => (w === ">CHANGE-ME" ? `>${PASSWORD}` : w));
}

/** The docs' ACL SETUSER line for the default prefix, as its words. */
const documentedRules = (): string[] => documentedLine("reset on >CHANGE-ME ");

let server: RedisServer;
let admin: Redis;
const backends: RedisBackend[] = [];

beforeAll(async () => {
  server = await startRedisServer();
  admin = new Redis(server.url, { lazyConnect: true });
  await admin.connect();
}, 60_000);

afterEach(async () => {
  await Promise.all(backends.splice(0).map((b) => b.close()));
});

afterAll(async () => {
  admin?.disconnect();
  await server?.stop();
});

/** A user named `name` with the documented rules, changed by `edit`; its URL. */
async function userWith(name: string, edit: (rules: string[]) => string[] = (r) => r): Promise<string> {
  await admin.call("ACL", "SETUSER", name, ...edit(documentedRules()));
  return `redis://${name}:${PASSWORD}@127.0.0.1:${server.port}`;
}

function backendAt(url: string): RedisBackend {
  const b = new RedisBackend({ ...redisDefaults, url, commandTimeoutMs: 5_000 }, silent);
  backends.push(b);
  return b;
}

describe("Redis least-privilege ACL (docs/backends.md)", () => {
  it("runs the basics and every kind as a user with exactly the documented rules", async () => {
    const url = await userWith("lockhost");
    const run = randomUUID().slice(0, 8);
    await exerciseBasics(backendAt(url), backendAt(url), run);
    // The ACL log records every refusal: lockhost needed nothing beyond the rules.
    const denied = (await admin.call("ACL", "LOG")) as unknown[];
    expect(denied).toEqual([]);
  });

  it("without EVAL or EVALSHA: the start-up check fails for good, naming the command", async () => {
    const noEval = await backendAt(await userWith("lockhost-noeval", (r) => [...r, "-eval"]))
      .ping()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(noEval).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((noEval as Error).message).toContain("the Redis user lacks the 'eval' command (+eval)");
    const url = await userWith("lockhost-noevalsha", (r) => [...r, "-evalsha"]);
    const backend = backendAt(url);
    const err = await backend.ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain("the Redis user lacks the 'evalsha' command (+evalsha)");
    const locks = new LockService(backend, { node: "n" });
    await expect(BackendHealth.atStart(locks, silent, "lockhost.toml: [locking.redis]")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("lacks the 'evalsha' command"),
    });
    // A script's first call on a connection goes as EVAL (allowed), the next as EVALSHA.
    await locks.tryLock("k1", { ttlMs: 1_000 });
    await expect(locks.tryLock("k2", { ttlMs: 1_000 })).rejects.toMatchObject({
      code: "BACKEND_UNAVAILABLE",
      retryable: false,
      message: expect.stringContaining("the Redis user lacks the 'evalsha' command"),
    });
    await locks.close({ closeBackend: false });
  });

  it("with a key pattern that misses the prefix: the error names the pattern it needs", async () => {
    const url = await userWith("lockhost-otherkeys", (r) => r.map((w) => (w === "~lockhost:*" ? "~other:*" : w)));
    const err = await backendAt(url)
      .ping()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain("the Redis user lacks access to lockhost's keys (its key pattern must cover the key prefix: ~lockhost:*)");
  });

  it("without a command a script runs, or the channel pattern: the step fails saying so", async () => {
    const noZadd = backendAt(await userWith("lockhost-nozadd", (r) => [...r, "-zadd"]));
    await noZadd.ping();
    const locks = new LockService(noZadd, { node: "n" });
    await expect(locks.try("sem", { ttlMs: 1_000, ...permitSpec(2) })).rejects.toMatchObject({
      code: "BACKEND_UNAVAILABLE",
      retryable: false,
      message: expect.stringContaining("the Redis user lacks a command one of lockhost's scripts runs"),
    });
    await locks.close({ closeBackend: false });

    const noChannels = backendAt(await userWith("lockhost-nochannels", (r) => r.map((w) => (w === "&lockhost:*" ? "&other:*" : w))));
    const other = new LockService(noChannels, { node: "n" });
    const permit = (await other.try("sem", { ttlMs: 5_000, ...permitSpec(2) }))!;
    // A semaphore's release always publishes on its channel.
    await expect(other.release(permit)).rejects.toMatchObject({
      code: "BACKEND_UNAVAILABLE",
      message: expect.stringContaining("its channel pattern must cover the key prefix: &lockhost:*"),
    });
    await other.close({ closeBackend: false });
  });

  it("on a Redis Cluster, with the documented cluster rules on every node: the basics and every kind", async () => {
    const cluster = await startRedisCluster();
    const nodes = cluster.ports.map((port) => new Redis(port, "127.0.0.1", { lazyConnect: true }));
    const clustered: RedisBackend[] = [];
    try {
      for (const node of nodes) {
        await node.connect();
        await node.call("ACL", "SETUSER", "lockhost", ...documentedRules());
        await node.call("ACL", "SETUSER", "lockhost", ...documentedLine("+cluster"));
      }
      const url = `redis://lockhost:${PASSWORD}@127.0.0.1:${cluster.ports[0]}`;
      for (let i = 0; i < 2; i++) clustered.push(new RedisBackend({ ...redisDefaults, url, cluster: true, commandTimeoutMs: 5_000 }, silent));
      await exerciseBasics(clustered[0]!, clustered[1]!, randomUUID().slice(0, 8));
      for (const node of nodes) expect(await node.call("ACL", "LOG")).toEqual([]);
    } finally {
      await Promise.all(clustered.map((b) => b.close()));
      for (const node of nodes) node.disconnect();
      await cluster.stop();
    }
  }, 120_000);
});
