// A backend that freezes (SIGSTOP) and resumes, against a private Redis and a private
// PostgreSQL: a call that timed out in the client while the server was frozen may still run on
// the server once it resumes. Nothing it left behind outlives the freeze: a lock so taken, or
// not released, is released by its owner as soon as the backend answers, every schedule runs
// again on its next tick after the freeze (not a TTL later), and the log says the outage once.
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { LockService } from "../host/locking/service.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import type { LockBackend } from "../kit/backend.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger, type LogLine } from "./support/log.js";
import { startPostgresServer, startRedisServer, type TestServer } from "./support/servers.js";
import { sleep, until } from "./support/until.js";

const COMMAND_TIMEOUT_MS = 500;
/** The schedules' TTL: a lock left behind would stop its schedule this long. */
const TTL_MS = 30_000;
/** How long the server stays frozen: many ticks, several health checks and reconnect attempts. */
const FROZEN_MS = 6_000;
/**
 * How soon after the freeze every schedule must run again: far below TTL_MS (a lock left behind
 * would take that long), with room for a loaded machine (the reconnect backoff is at most 1 s).
 */
const RESUMED_WITHIN_MS = 15_000;

const servers: Record<"redis" | "pg", TestServer | undefined> = { redis: undefined, pg: undefined };
beforeAll(async () => {
  [servers.redis, servers.pg] = await Promise.all([startRedisServer(), startPostgresServer()]);
});
afterAll(async () => {
  await Promise.all([servers.redis?.stop(), servers.pg?.stop()]);
});

let n = 0;
const table = (): string => `lockhost_stall_${process.pid}_${++n}`;
const locking = (name: "redis" | "pg"): ConfigInput["locking"] =>
  name === "redis"
    ? { backend: "redis", redis: { url: servers.redis!.url, commandTimeoutMs: COMMAND_TIMEOUT_MS, keyPrefix: `lockhost-stall:${process.pid}:${++n}:` } }
    : { backend: "pg", pg: { url: servers.pg!.url, commandTimeoutMs: COMMAND_TIMEOUT_MS, table: table() } };
const backendOf = (name: "redis" | "pg", log = captureLogger().logger): LockBackend =>
  name === "redis"
    ? new RedisBackend(
        { url: servers.redis!.url, keyPrefix: `lockhost-stall:${process.pid}:${++n}:`, commandTimeoutMs: COMMAND_TIMEOUT_MS, reclaimOwnLocks: false },
        log,
      )
    : new PgBackend({ ...pgDefaults, url: servers.pg!.url, table: table(), commandTimeoutMs: COMMAND_TIMEOUT_MS }, log);

describe.each(["redis", "pg"] as const)("%s frozen and resumed", (name) => {
  const hosts: Host[] = [];
  const services: LockService[] = [];
  afterEach(async () => {
    servers[name]!.resume();
    await Promise.all(hosts.splice(0).map((h) => h.stop(2_000)));
    await Promise.all(services.splice(0).map((s) => s.close()));
  });

  it("an acquisition that timed out while the server was frozen ran on it afterwards, and is released by its owner once it answers", async () => {
    const service = new LockService(backendOf(name), { node: "stall" });
    services.push(service);
    const other = new LockService(backendOf(name), { node: "other" });
    services.push(other);
    // Connected first: on a loaded machine a new session may miss the 500 ms command timeout once.
    await until("the backend answers", RESUMED_WITHIN_MS, async () => {
      const lease = await service.tryLock("warm", { ttlMs: TTL_MS }).catch(() => null);
      if (lease) await service.release(lease);
      return lease !== null;
    });
    servers[name]!.pause();
    const err = await service.tryLock("left", { ttlMs: TTL_MS }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    await sleep(1_000);
    servers[name]!.resume();
    // Free again long before its TTL: another host takes it.
    await until("the key is free again", RESUMED_WITHIN_MS, async () => {
      const lease = await other.tryLock("left", { ttlMs: TTL_MS }).catch(() => null);
      if (lease) await other.release(lease);
      return lease !== null;
    });
    await until("the book is empty", RESUMED_WITHIN_MS, () => service.stats().unsettled === 0);
  });

  it("a release that timed out in a freeze is made again once the server answers (pg: its session ends with its locks); the key is free at once", async () => {
    const service = new LockService(backendOf(name), { node: "stall" });
    services.push(service);
    const other = new LockService(backendOf(name), { node: "other" });
    services.push(other);
    const lease = (await service.tryLock("owed", { ttlMs: TTL_MS }))!;
    expect(lease).not.toBeNull();
    servers[name]!.pause();
    const err = await service.release(lease).catch((e: unknown) => e);
    if (name === "redis") {
      expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect(service.stats().unsettled).toBe(1);
    } else {
      // PostgreSQL's session whose statement did not answer is closed, and its locks with it.
      expect(err).toMatchObject({ code: expect.stringMatching(/^(BACKEND_UNAVAILABLE|LOST)$/) });
    }
    await sleep(1_000);
    servers[name]!.resume();
    await until("the lease ends", RESUMED_WITHIN_MS, () => lease.state !== "held");
    if (name === "redis") expect(lease.state).toBe("released");
    await until("another host takes the key", RESUMED_WITHIN_MS, async () => {
      const taken = await other.tryLock("owed", { ttlMs: TTL_MS }).catch(() => null);
      if (taken) await other.release(taken);
      return taken !== null;
    });
    expect(service.stats()).toMatchObject({ unsettled: 0, held: 0 });
  });

  it("every schedule runs again on its next tick after the freeze, and the log says the outage once (one line down, one line back)", async () => {
    const log = captureLogger();
    const every = { kind: "interval", everyMs: 200, text: "200ms" } as const;
    const ids = ["a", "b", "c"];
    const host = await Host.start(
      resolveConfig({
        host: { node: `stall-${name}` },
        locking: locking(name),
        plugins: [{ name: "cron", wasm: guestWasm("cron") }],
        scheduled: ids.map((id, i) => ({ id, plugin: "cron", export: ["tick", "other", "nightly"][i]!, schedule: every, ttlMs: TTL_MS })),
      } as ConfigInput),
      { logger: log.logger },
    );
    hosts.push(host);
    host.scheduler.start();
    const ticks = () => host.scheduler.ticks();
    await until("every schedule ran", 10_000, () => ids.every((id) => ticks()[id]!.ran > 0));
    const from = log.lines.length;
    servers[name]!.pause();
    await sleep(FROZEN_MS);
    const ranBefore = ids.map((id) => ticks()[id]!.ran);
    servers[name]!.resume();
    await until("every schedule runs again", RESUMED_WITHIN_MS, () => ids.every((id, i) => ticks()[id]!.ran > ranBefore[i]!));
    // Said while frozen and after: from the host, one line down and one back; from the client
    // about its connection (Redis), at most one line each way; nothing repeated.
    await until("the host says the backend is back", 10_000, () => log.messages().includes(`the ${name} backend answers again`));
    const lines = log.lines.slice(from);
    const at = (level: number): LogLine[] => lines.filter((l) => l.level === level);
    expect(lines.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.filter((l) => l.msg.startsWith(`the ${name} backend stopped answering`)).map((l) => l.level)).toEqual([40]);
    expect(lines.filter((l) => l.msg === `the ${name} backend answers again`).map((l) => l.level)).toEqual([30]);
    const warnings = at(40).map((l) => l.msg);
    const clientDown = warnings.filter((m) => !m.startsWith(`the ${name} backend stopped answering`));
    expect(clientDown.length, clientDown.join("\n")).toBeLessThanOrEqual(1);
    expect(warnings.filter((m) => m.includes("still unreachable") || m.includes("still running"))).toEqual([]);
    const clientBack = at(30)
      .map((l) => l.msg)
      .filter((m) => /recovered|reconnected|connected again/.test(m));
    expect(clientBack.length, clientBack.join("\n")).toBeLessThanOrEqual(1);
  }, 60_000);
});
