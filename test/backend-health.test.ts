// The host's view of its backend's health: a warning at start when it does not answer (a server
// not up yet, a host name that does not resolve yet), a fail at start only when the server
// refuses for good, and each change logged once while the host runs.
import { afterEach, describe, expect, it } from "vitest";
import { isPermanent, LockhostError } from "../kit/errors.js";
import type { AdminStatsBody } from "../host/admin/server.js";
import { BackendHealth, HEALTH_CHECK_EVERY_MS } from "../host/backend-health.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import type { TickEvent } from "../host/scheduler/scheduler.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { guestWasm } from "./support/guests.js";
import { captureLogger } from "./support/log.js";
import { startRedisServer, type TestServer } from "./support/servers.js";
import { until } from "./support/until.js";

/** A memory backend whose ping fails while `down` says so, the way `fault` says. */
function flaky(): { backend: MemoryBackend; state: { down: boolean; fault: LockhostError } } {
  const backend = new MemoryBackend();
  const state = { down: false, fault: new LockhostError("BACKEND_UNAVAILABLE", "no answer (test)") };
  backend.ping = () => (state.down ? Promise.reject(state.fault) : Promise.resolve());
  return { backend, state };
}

describe("backend health", () => {
  it("logs the backend going down once at warn and coming back once at info", async () => {
    const { backend, state } = flaky();
    const locks = new LockService(backend, { node: "n" });
    const log = captureLogger();
    const health = await BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]");
    expect(health.up).toBe(true);
    state.down = true;
    expect(await health.check()).toBe(false);
    expect(await health.check()).toBe(false);
    state.down = false;
    expect(await health.check()).toBe(true);
    const said = log.lines.filter((l) => l.msg.includes("backend"));
    expect(said.map((l) => [l.level, l.msg])).toEqual([
      [40, "the memory backend stopped answering; lock calls fail with BACKEND_UNAVAILABLE until it answers again"],
      [30, "the memory backend answers again"],
    ]);
    await locks.close();
  });

  it("warns at start when the backend does not answer, and fails the start when it refuses for good", async () => {
    const { backend, state } = flaky();
    const locks = new LockService(backend, { node: "n" });
    const log = captureLogger();
    state.down = true;
    const health = await BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]");
    expect(health.up).toBe(false);
    expect(log.lines.find((l) => l.level === 40)).toMatchObject({ err: "no answer (test)", msg: expect.stringContaining("does not answer at start") });
    state.fault = new LockhostError("BACKEND_UNAVAILABLE", "password refused (test)", { details: { permanent: 1 } });
    await expect(BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: "lockhost.toml: [locking.memory]: the memory backend refused this host for good, so retrying cannot help: password refused (test)",
    });
    await locks.close();
  });
});

describe("a backend the host cannot reach at start", () => {
  const hosts: Host[] = [];
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });
  const cron = { name: "cron", wasm: guestWasm("cron") };

  it.each([
    ["redis", { backend: "redis", redis: { url: "redis://lockhost-no-such-host.invalid:6379", commandTimeoutMs: 500 } }],
    ["pg", { backend: "pg", pg: { url: "postgres://postgres@lockhost-no-such-host.invalid:5432/test", commandTimeoutMs: 500 } }],
  ] as const)(
    "starts when the %s server's host name does not resolve yet (a service not up): /readyz says why, nothing is permanent",
    async (_name, locking) => {
      const log = captureLogger();
      const host = await Host.start(resolveConfig({ source: "lockhost.toml", locking, admin: { listen: "127.0.0.1:0" } } as ConfigInput), {
        logger: log.logger,
      });
      hosts.push(host);
      const ready = await fetch(`${host.admin!.url}/readyz`);
      expect(ready.status).toBe(503);
      expect(((await ready.json()) as { message: string }).message).toMatch(/ENOTFOUND|EAI_AGAIN/);
      const err = await host.locks.ping().catch((e: unknown) => e);
      expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", retryable: true });
      expect(isPermanent(err)).toBe(false);
      expect(log.lines.find((l) => l.level === 40 && l.msg.includes("does not answer at start"))).toBeDefined();
    },
  );

  it("starts while its Redis refuses connections, quietly (failures log at debug), and takes locks, runs schedules and leads once it answers", async () => {
    const redis = await startRedisServer();
    servers.push(redis);
    await redis.kill();
    const log = captureLogger();
    const host = await Host.start(
      resolveConfig({
        locking: { backend: "redis", redis: { url: redis.url, commandTimeoutMs: 300 } },
        admin: { listen: "127.0.0.1:0" },
        plugins: [cron],
        scheduled: [
          { id: "every-100ms", plugin: "cron", export: "tick", schedule: "100ms" },
          { id: "led", plugin: "cron", export: "other", schedule: "100ms", hint: "leader_only" },
        ],
      } as ConfigInput),
      { logger: log.logger },
    );
    hosts.push(host);
    const ran: TickEvent[] = [];
    host.scheduler.on("tick", (t) => void (t.outcome === "ran" && ran.push(t)));
    host.scheduler.start();
    const ready = await fetch(`${host.admin!.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { message: string }).message).toMatch(/ECONNREFUSED|unreachable/);
    // A campaign retries once a second: let it fail a few times.
    await until("campaigns failed while Redis was down", 10_000, () => log.lines.filter((l) => l.msg.startsWith("campaign failed")).length >= 2);
    await redis.start();
    await until("/readyz answers 200", 10_000, async () => (await fetch(`${host.admin!.url}/readyz`)).status === 200);
    await until("a tick ran under its lock", 10_000, () => ran.some((t) => t.id === "every-100ms"));
    await until("the leader ran a tick", 10_000, () => ran.some((t) => t.id === "led"));
    expect(log.lines.filter((l) => l.msg.startsWith("campaign failed")).every((l) => l.level === 20)).toBe(true);
    expect(log.lines.filter((l) => l.level >= 50)).toEqual([]);
    const lease = await host.locks.tryLock("after-start", { ttlMs: 10_000 });
    expect(lease).not.toBeNull();
    await host.locks.release(lease!);
  });
});

describe("an outage while the host runs", () => {
  const hosts: Host[] = [];
  const servers: TestServer[] = [];
  afterEach(async () => {
    await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
    await Promise.all(servers.splice(0).map((s) => s.stop()));
  });

  it("is one line down and one line back per host, however many schedules tick through it; each skipped tick is counted and logged at debug", async () => {
    const redis = await startRedisServer();
    servers.push(redis);
    const log = captureLogger();
    const every = { kind: "interval", everyMs: 100, text: "100ms" } as const;
    const host = await Host.start(
      resolveConfig({
        host: { node: "outage-node" },
        locking: { backend: "redis", redis: { url: redis.url, commandTimeoutMs: 300 } },
        admin: { listen: "127.0.0.1:0" },
        plugins: [{ name: "cron", wasm: guestWasm("cron") }],
        scheduled: [
          { id: "a", plugin: "cron", export: "tick", schedule: every },
          { id: "b", plugin: "cron", export: "other", schedule: every, hint: "prefer_global" },
          { id: "c", plugin: "cron", export: "nightly", schedule: every, hint: "node_local" },
        ],
      } as ConfigInput),
      { logger: log.logger },
    );
    hosts.push(host);
    host.scheduler.start();
    const ticks = () => host.scheduler.ticks();
    await until("both locked schedules ran", 10_000, () => ticks().a!.ran > 0 && ticks().b!.ran > 0);

    await redis.kill();
    // Down for several ticks of every schedule.
    await until("ticks skipped through the outage", 10_000, () => ticks().a!.skipped_error >= 5 && ticks().b!.skipped_error >= 5);
    const stats = (await (await fetch(`${host.admin!.url}/stats`)).json()) as AdminStatsBody;
    expect(stats.backendUp).toBe(false);
    expect(stats.schedules!.a!.skipped_error).toBeGreaterThanOrEqual(5);
    const metrics = await (await fetch(`${host.admin!.url}/metrics`)).text();
    expect(metrics).toContain('lockhost_backend_up{node="outage-node",backend="redis"} 0');
    expect(Number(/lockhost_schedule_ticks_total\{schedule="a",outcome="skipped_error"[^}]*\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(5);

    await redis.start();
    const ranBefore = ticks().a!.ran;
    await until("the host says the backend is back", 10_000, () => log.messages().includes("the redis backend answers again"));
    await until("ticks run again", 10_000, () => ticks().a!.ran > ranBefore);
    await host.stop(1_000);

    const down = log.lines.filter((l) => l.msg.startsWith("the redis backend stopped answering"));
    const back = log.lines.filter((l) => l.msg === "the redis backend answers again");
    expect(down.map((l) => l.level)).toEqual([40]);
    expect(back.map((l) => l.level)).toEqual([30]);
    expect(log.lines.filter((l) => l.level >= 50)).toEqual([]);
    // Beside the host's one line, the only warnings are the Redis client's own line about its
    // connection (plugins/backends/redis); no schedule, tick or campaign warns.
    const others = log.lines.filter((l) => l.level === 40 && l !== down[0]).map((l) => l.msg);
    expect(others.filter((m) => !/^(redis connection to \S+ lost|redis at \S+ still unreachable)/.test(m))).toEqual([]);
    // Each skipped tick is counted, and logged at debug only.
    const skipped = log.lines.filter((l) => l.msg === "tick skipped: the backend is unavailable");
    expect(skipped.every((l) => l.level === 20)).toBe(true);
    for (const id of ["a", "b"]) expect(skipped.filter((l) => l.schedule === id).length).toBe(ticks()[id]!.skipped_error);
    expect(ticks().c!.skipped_error).toBe(0); // node_local takes no lock
  });
});

describe("outage reports", () => {
  it("checks at once when told of a failed call (no wait for the next period), says it once, and tells onBack listeners of the recovery", async () => {
    const { backend, state } = flaky();
    const locks = new LockService(backend, { node: "n" });
    const log = captureLogger();
    const health = await BackendHealth.atStart(locks, log.logger, "lockhost.toml: [locking.memory]");
    let backs = 0;
    health.onBack(() => backs++);
    state.down = true;
    for (let i = 0; i < 5; i++) health.unavailable(state.fault);
    // At once, not at the next period (HEALTH_CHECK_EVERY_MS, 5 s): 2.5 s is margin load keeps.
    await until("the reported outage is checked", HEALTH_CHECK_EVERY_MS / 2, () => !health.up);
    for (let i = 0; i < 5; i++) health.unavailable(state.fault); // known down: nothing more to say
    state.down = false;
    await health.check();
    expect(backs).toBe(1);
    expect(log.lines.filter((l) => l.level >= 30).map((l) => l.msg)).toEqual([
      "the memory backend stopped answering; lock calls fail with BACKEND_UNAVAILABLE until it answers again",
      "the memory backend answers again",
    ]);
    await locks.close();
  });
});
