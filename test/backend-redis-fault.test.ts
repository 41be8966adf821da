// The Redis backend when its server fails, against a private redis-server this file kills and
// restarts: calls fail fast with BACKEND_UNAVAILABLE (never queue, never crash the host), the
// connection comes back by itself, a server that stops answering is cut off after one command
// timeout, and a refused password never shows up in errors or logs.
import { randomUUID } from "node:crypto";
import { createServer, type AddressInfo, type Socket } from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { AcquireRequest, LockMode } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { KeyLayout, RedisBackend } from "../plugins/backends/redis/index.js";
import { watchStalls } from "../plugins/backends/redis/client.js";
import { captureLogger } from "./support/log.js";
import { startRedisServer, type RedisServer } from "./support/servers.js";
import { callCounter, watchCounting, type CallCounter } from "./support/counter.js";
import type { RedisConfig } from "../plugins/backends/redis/config.js";
import { sleep } from "./support/until.js";

const COMMAND_TIMEOUT_MS = 500;
/** Generous: "promptly" means bounded by the command timeout, not a race against the scheduler. */
const PROMPT_MS = COMMAND_TIMEOUT_MS + 1_000;

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer();
});
afterAll(async () => {
  await server?.stop();
});

const config = (over: Partial<RedisConfig> = {}): RedisConfig => ({
  url: server.url,
  keyPrefix: `lockhost-fault:${randomUUID().slice(0, 8)}:`,
  commandTimeoutMs: COMMAND_TIMEOUT_MS,
  reclaimOwnLocks: false,
  ...over,
});

/** Runs `call`, expecting BACKEND_UNAVAILABLE within PROMPT_MS; returns the error. */
async function failsPromptly(call: () => Promise<unknown>): Promise<LockhostError> {
  const started = performance.now();
  const outcome = await call().then(
    (value) => ({ value }),
    (err: unknown) => ({ err }),
  );
  const elapsed = performance.now() - started;
  if (!("err" in outcome)) throw new Error(`expected a failure, got ${JSON.stringify(outcome.value)}`);
  expect(outcome.err).toBeInstanceOf(LockhostError);
  expect(outcome.err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
  expect(elapsed).toBeLessThan(PROMPT_MS);
  return outcome.err as LockhostError;
}

/**
 * Runs a script on `client` that keeps the server busy for `ms` (below lua-time-limit, so not
 * even BUSY): Redis answers nobody meanwhile.
 */
function spin(client: Redis, ms: number): Promise<unknown> {
  return client.eval(`local s = redis.call('TIME') local t repeat t = redis.call('TIME') until (t[1] - s[1]) * 1e6 + (t[2] - s[2]) > ${ms * 1000} return 1`, 0);
}

/** Polls `attempt` until it resolves to a non-null value, failing after `deadlineMs`. */
async function eventually<T>(attempt: () => Promise<T | null>, deadlineMs: number): Promise<T> {
  const deadline = Date.now() + deadlineMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await attempt();
      if (value !== null) return value;
    } catch (err) {
      last = err;
    }
    await sleep(100);
  }
  throw new Error(`no success within ${deadlineMs} ms; last error: ${String(last)}`);
}

describe("redis backend: fences that never step back", () => {
  it("issues fences above every earlier one after a restart without persistence and after a FLUSHALL", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const service = new LockService(backend, { node: "node-fence" });
    const admin = new Redis(server.url);
    try {
      // A run of fences as a busy resource sees them, then the counter is lost twice.
      let last = 0;
      for (let i = 0; i < 20; i++) {
        const lease = (await service.tryLock("fenced", { ttlMs: 10_000 }))!;
        expect(lease.fence).toBeGreaterThan(last);
        last = lease.fence;
        await service.release(lease);
      }
      expect(Number.isSafeInteger(last)).toBe(true);
      await server.kill(); // no persistence: every key is gone, the fence counter with them
      await server.start();
      const afterRestart = await eventually(() => service.tryLock("fenced", { ttlMs: 10_000 }), 10_000);
      expect(afterRestart.fence).toBeGreaterThan(last);
      await service.release(afterRestart);
      await admin.flushall();
      const afterFlush = (await service.tryLock("fenced", { ttlMs: 10_000 }))!;
      expect(afterFlush.fence).toBeGreaterThan(afterRestart.fence);
      expect(Number.isSafeInteger(afterFlush.fence)).toBe(true);
      await service.release(afterFlush);
    } finally {
      admin.disconnect();
      await service.close();
    }
  });
});

describe("redis backend: server killed and restarted", () => {
  it("fails fast while Redis is down, does not crash, and takes locks again once it is back", async () => {
    const capture = captureLogger();
    const backend = new RedisBackend(config(), capture.logger);
    const service = new LockService(backend, { node: "node-f" });
    try {
      const lease = await service.tryLock("job", { ttlMs: 10_000 });
      expect(lease).not.toBeNull();

      await server.kill();
      // Right after the kill the client may not have noticed yet: the call fails on the dead socket.
      const renewErr = await failsPromptly(() => service.renew(lease!));
      expect(renewErr.message).toContain(server.url);
      await failsPromptly(() => service.tryLock("other", { ttlMs: 1_000 }));
      // Later, while reconnect attempts are refused, calls fail at once.
      await sleep(300);
      for (let i = 0; i < 5; i++) {
        const started = performance.now();
        await failsPromptly(() => service.tryLock(`down-${i}`, { ttlMs: 1_000 }));
        expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS);
      }
      await failsPromptly(() => service.status({ name: "global:job" }));
      // A renewal failure is an outage, not a lost lock: the lease is still held.
      expect(lease!.state).toBe("held");

      await server.start();
      // The restarted server is empty (no persistence), so "job" is free again.
      const again = await eventually(() => service.tryLock("job", { ttlMs: 10_000 }), 10_000);
      expect(again.fence).toBeGreaterThan(0);
      await service.release(again);

      const messages = capture.messages();
      expect(messages.some((m) => /connection to .* lost/.test(m))).toBe(true);
      expect(messages.some((m) => /recovered/.test(m))).toBe(true);
      // One line per state change and per new error, not one per reconnect attempt.
      expect(capture.lines.filter((l) => l.level >= 40).length).toBeLessThanOrEqual(4);
    } finally {
      await service.close();
    }
  });

  it("closes without hanging while Redis is down", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    expect((await backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } })).acquired).toBe(true);
    await server.kill();
    try {
      await sleep(100);
      const started = performance.now();
      await backend.close();
      expect(performance.now() - started).toBeLessThan(PROMPT_MS);
    } finally {
      await server.start();
    }
  });

  it("a backend started while Redis is down fails fast, then connects by itself", async () => {
    await server.kill();
    const backend = new RedisBackend(config(), captureLogger().logger);
    try {
      await failsPromptly(() => backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } }));
      await server.start();
      const got = await eventually(async () => {
        const r = await backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } });
        return r.acquired ? r : null;
      }, 10_000);
      expect(got.fence).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  });
});

describe("redis backend: script cache", () => {
  /** Calls of `command` so far, from INFO commandstats. */
  async function calls(admin: Redis, command: string): Promise<number> {
    const stats = await admin.info("commandstats");
    return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, "m").exec(stats)?.[1] ?? 0);
  }

  it("sends EVALSHA on the lock path, and keeps working after SCRIPT FLUSH (falls back to EVAL)", async () => {
    const admin = new Redis(server.url);
    const backend = new RedisBackend(config(), captureLogger().logger);
    const holder = { plugin: "p", node: "n" };
    try {
      const k = "flushed";
      expect((await backend.acquire({ name: k, owner: "a", ttlMs: 10_000, holder })).acquired).toBe(true);
      expect(await backend.release(k, "a")).toBe("released");
      await admin.config("RESETSTAT");
      for (let i = 0; i < 20; i++) {
        expect((await backend.acquire({ name: k, owner: `o${i}`, ttlMs: 10_000, holder })).acquired).toBe(true);
        expect(await backend.release(k, `o${i}`)).toBe("released");
      }
      expect(await calls(admin, "evalsha")).toBe(40);
      expect(await calls(admin, "eval")).toBe(0);

      expect((await backend.acquire({ name: k, owner: "b", ttlMs: 10_000, holder })).acquired).toBe(true);
      await admin.script("FLUSH");
      expect((await backend.renew(k, "b", 10_000)).ok).toBe(true);
      await admin.script("FLUSH");
      expect((await backend.status(k))?.owner).toBe("b");
      await admin.script("FLUSH");
      expect(await backend.release(k, "b")).toBe("released");
      await admin.script("FLUSH");
      expect((await backend.acquire({ name: k, owner: "c", ttlMs: 10_000, holder })).acquired).toBe(true);
      await admin.script("FLUSH");
      expect(await backend.forceRelease(k)).toBe(true);
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });
});

describe("redis backend: read/write locks and semaphores when the server fails", () => {
  const shared = (key: string, mode: LockMode, owner: string, over: Partial<AcquireRequest> = {}): AcquireRequest => ({
    name: key,
    owner,
    ttlMs: 10_000,
    holder: { plugin: "p", node: "n" },
    mode,
    limit: 0,
    queueMs: 0,
    ...over,
  });

  it("sends EVALSHA on their path too, and keeps working after SCRIPT FLUSH", async () => {
    const admin = new Redis(server.url);
    const backend = new RedisBackend(config(), captureLogger().logger);
    const rw = backend.steps("rw");
    try {
      const k = "shared-flushed";
      expect((await rw.acquire(shared(k, "shared", "warm"))).acquired).toBe(true);
      expect(await rw.release(k, "warm")).toBe("released");
      await admin.config("RESETSTAT");
      for (let i = 0; i < 10; i++) {
        expect((await rw.acquire(shared(k, "exclusive", `o${i}`))).acquired).toBe(true);
        expect(await rw.release(k, `o${i}`)).toBe("released");
      }
      const stats = await admin.info("commandstats");
      expect(Number(/^cmdstat_evalsha:calls=(\d+)/m.exec(stats)?.[1])).toBe(20);
      expect(/^cmdstat_eval:/m.test(stats)).toBe(false);

      const steps: (() => Promise<unknown>)[] = [
        () => rw.acquire(shared(k, "shared", "a")),
        () => rw.acquire(shared(k, "exclusive", "w", { queueMs: 10_000 })),
        () => rw.renewMany([{ name: k, owner: "a", ttlMs: 10_000 }]),
        () => rw.status(k),
        () => rw.list({ prefix: k, limit: 10 }),
        () => rw.leaveQueue(k, "w"),
        () => rw.release(k, "a"),
        () => rw.acquire(shared(k, "shared", "b")),
        () => rw.forceRelease(k),
      ];
      const results: unknown[] = [];
      for (const step of steps) {
        await admin.script("FLUSH");
        results.push(await step());
      }
      expect(results[0]).toMatchObject({ acquired: true });
      expect(results[2]).toMatchObject([{ ok: true }]);
      expect(results[3]).toMatchObject({ queued: 1, holders: [{ owner: "a" }] });
      expect(results[6]).toBe("released");
      expect(results[8]).toBe(1);
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });

  it("fails fast while Redis is down, then serves again once it is back", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const sem = backend.steps("semaphore");
    try {
      expect((await sem.acquire(shared("down", "shared", "a", { limit: 2 }))).acquired).toBe(true);
      await server.kill();
      await failsPromptly(() => sem.renewMany([{ name: "down", owner: "a", ttlMs: 10_000 }]));
      await sleep(300);
      await failsPromptly(() => sem.acquire(shared("down", "shared", "b", { limit: 2 })));
      await failsPromptly(() => sem.release("down", "a"));
      await failsPromptly(() => sem.status("down"));
      await failsPromptly(() => sem.list({ limit: 10 }));
      await server.start();
      const again = await eventually(async () => {
        const r = await sem.acquire(shared("down", "shared", "c", { limit: 2 }));
        return r.acquired ? r : null;
      }, 10_000);
      expect(again.acquired).toBe(true);
    } finally {
      await backend.close();
    }
  });
});

describe("redis backend: a dropped connection", () => {
  it("waits for the first reconnect instead of failing when the server closes the connection (idle timeout, CLIENT KILL)", async () => {
    const admin = new Redis(server.url);
    const capture = captureLogger();
    const backend = new RedisBackend(config(), capture.logger);
    const holder = { plugin: "p", node: "n" };
    try {
      expect((await backend.acquire({ name: "k1", owner: "o", ttlMs: 5_000, holder })).acquired).toBe(true);
      const clients = await admin.client("LIST");
      const id = /id=(\d+) [^\n]*name=lockhost /.exec(String(clients))?.[1];
      expect(id).toBeDefined();
      await admin.client("KILL", "ID", id!);
      await sleep(20); // the client has seen the close; its first reconnect attempt is due in 25-50 ms
      expect((await backend.acquire({ name: "k2", owner: "o", ttlMs: 5_000, holder })).acquired).toBe(true);
      expect(capture.messages().some((m) => /dropped and was re-established/.test(m))).toBe(true);
      expect(capture.lines.filter((l) => l.level >= 40)).toEqual([]);
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });
});

describe("redis backend: a server that stops answering", () => {
  it("times out after commandTimeoutMs, cuts the connection off, and recovers when the server answers again", async () => {
    const capture = captureLogger();
    const backend = new RedisBackend(config(), capture.logger);
    const blocker = new Redis(server.url);
    try {
      const holder = { plugin: "p", node: "n" };
      expect((await backend.acquire({ name: "a", owner: "o", ttlMs: 5_000, holder })).acquired).toBe(true);
      const spinning = spin(blocker, 1_500);
      await sleep(50);
      const err = await failsPromptly(() => backend.renew("a", "o", 5_000));
      // The command's timeout and the socket's fire together; either message is right.
      expect(err.message).toMatch(/did not answer within 500 ms|lost with the command in flight/);
      // The silent connection was dropped; the reconnect attempt hangs as well (for at most one
      // command timeout), and from then on calls fail at once instead of each waiting again.
      await sleep(100);
      await failsPromptly(() => backend.acquire({ name: "b", owner: "o", ttlMs: 1_000, holder }));
      const started = performance.now();
      await failsPromptly(() => backend.acquire({ name: "c", owner: "o", ttlMs: 1_000, holder }));
      expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS);
      await spinning;
      const renewed = await eventually(async () => {
        const r = await backend.renew("a", "o", 5_000);
        return r.ok ? r : null;
      }, 10_000);
      expect(renewed.ok).toBe(true);
    } finally {
      await backend.close();
      blocker.disconnect();
    }
  });
});

describe("redis backend: one watchdog for every command's timeout", () => {
  it("gives a call on a connection idle for longer than commandTimeoutMs its whole commandTimeoutMs", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const blocker = new Redis(server.url);
    try {
      const holder = { plugin: "p", node: "n" };
      expect((await backend.acquire({ name: "a", owner: "o", ttlMs: 5_000, holder })).acquired).toBe(true);
      // The watchdog armed by that acquire fires while this connection is idle, or soon after.
      await sleep(COMMAND_TIMEOUT_MS * 0.8);
      // The server is silent for 60% of the timeout: slow, not stalled.
      const spinning = spin(blocker, 300);
      await sleep(20);
      const started = performance.now();
      expect(await backend.renew("a", "o", 5_000)).toMatchObject({ ok: true });
      expect(performance.now() - started).toBeGreaterThan(200);
      await spinning;
    } finally {
      await backend.close();
      blocker.disconnect();
    }
  });

  it("fails every command queued behind a silent server with one timeout, naming commandTimeoutMs", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const blocker = new Redis(server.url);
    try {
      const holder = { plugin: "p", node: "n" };
      // Connected first: a handshake command still waiting when the server goes silent was sent
      // before `started`, and the one timeout it starts would end less than 500 ms after it.
      expect((await backend.acquire({ name: "warm", owner: "o", ttlMs: 5_000, holder })).acquired).toBe(true);
      const spinning = spin(blocker, 1_200);
      await sleep(50);
      const started = performance.now();
      const calls = Array.from({ length: 5 }, (_, i) =>
        backend.acquire({ name: `q${i}`, owner: "o", ttlMs: 1_000, holder }).then(
          () => null,
          (err: unknown) => err,
        ),
      );
      const errors = await Promise.all(calls);
      const elapsed = performance.now() - started;
      for (const err of errors)
        expect(err).toMatchObject({
          code: "BACKEND_UNAVAILABLE",
          message: expect.stringMatching(/did not answer within 500 ms \(commandTimeoutMs\); the command may still have been applied/),
        });
      expect(elapsed).toBeGreaterThan(COMMAND_TIMEOUT_MS - 50);
      expect(elapsed).toBeLessThan(PROMPT_MS);
      await spinning;
    } finally {
      await backend.close();
      blocker.disconnect();
    }
  });

  it("times out a command behind slow replies after its own commandTimeoutMs, keeping a connection that still answers", async () => {
    const client = new Redis(server.url, { lazyConnect: true, maxRetriesPerRequest: 0 });
    client.on("error", () => undefined);
    watchStalls(client, 1_000);
    await client.connect();
    try {
      const outcome = (p: Promise<unknown>): Promise<unknown> =>
        p.then(
          () => "ok",
          (err: Error) => err,
        );
      // Redis reads what is in the socket when it is done with a command, so the three go out
      // apart: the server is busy 0-100 ms with the first, 100-700 with the second (sent at 50:
      // waits 650 ms of the 1,000), 700-1,400 with the third (sent at 150: waits 1,250 ms). It is
      // never silent for 1,000 ms.
      const first = outcome(spin(client, 100));
      await sleep(50);
      const second = outcome(spin(client, 600));
      await sleep(100);
      const third = outcome(spin(client, 700));
      expect(await first).toBe("ok");
      expect(await second).toBe("ok");
      expect(await third).toMatchObject({ message: "Command timed out" });
      expect(await client.ping()).toBe("PONG");
    } finally {
      client.disconnect();
    }
  });
});

describe("redis backend: the calls of one tick go as batches", () => {
  /** Script runs (EVALSHA, and EVAL for a script's first run on a connection) the server has seen. */
  async function scriptRuns(admin: Redis): Promise<number> {
    const info = await admin.info("commandstats");
    let calls = 0;
    for (const m of info.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)) calls += Number(m[1]);
    return calls;
  }

  it("sends 9 acquires and 9 releases made in one tick as script runs of at most 4, each call with its own result", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const admin = new Redis(server.url);
    try {
      const holder = { plugin: "p", node: "n" };
      expect((await backend.acquire({ name: "held", owner: "other", ttlMs: 5_000, holder })).acquired).toBe(true);
      const keys = ["held", ...Array.from({ length: 8 }, (_, i) => `free${i}`)];
      const before = await scriptRuns(admin);
      const results = await Promise.all(keys.map((key) => backend.acquire({ name: key, owner: `o-${key}`, ttlMs: 5_000, holder })));
      expect(await scriptRuns(admin)).toBe(before + 3); // runs of 4, 4 and 1
      expect(results[0]).toMatchObject({ acquired: false });
      expect((results[0] as { retryAfterMs?: number }).retryAfterMs).toBeGreaterThan(4_000);
      for (const r of results.slice(1)) expect(r).toMatchObject({ acquired: true, fence: expect.any(Number) });
      for (const key of keys.slice(1)) expect(await backend.status(key)).toMatchObject({ owner: `o-${key}` });

      const releases = await Promise.all(keys.map((key, i) => backend.release(key, i === 1 ? "not-the-owner" : `o-${key}`)));
      expect(releases[0]).toBe("mismatch"); // "held" is other's
      expect(releases[1]).toBe("mismatch");
      expect(releases.slice(2)).toEqual(Array(7).fill("released"));
      expect(await backend.status("free0")).toMatchObject({ owner: "o-free0" });
      expect(await backend.status("free1")).toBeNull();
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });

  it("never lets an acquire overtake a release of the same key called before it in the tick", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    try {
      const holder = { plugin: "p", node: "n" };
      expect((await backend.acquire({ name: "k", owner: "first", ttlMs: 5_000, holder })).acquired).toBe(true);
      const released = backend.release("k", "first");
      // Four acquires fill a batch, which goes at once; the release waiting for its tick goes ahead of it.
      const acquired = ["k", "a", "b", "c"].map((key) => backend.acquire({ name: key, owner: "second", ttlMs: 5_000, holder }));
      expect(await released).toBe("released");
      for (const result of await Promise.all(acquired)) expect(result).toMatchObject({ acquired: true });
    } finally {
      await backend.close();
    }
  });

  it("sends the calls still waiting for their tick's batch before close() quits the connection", async () => {
    const backend = new RedisBackend(config(), captureLogger().logger);
    const holder = { plugin: "p", node: "n" };
    await backend.ping(); // connected: the call below goes to its batch, not to the wait for a connection
    const acquired = backend.acquire({ name: "last", owner: "o", ttlMs: 5_000, holder });
    await backend.close();
    expect(await acquired).toMatchObject({ acquired: true });
  });

  it("fails only the call of a batch whose keys Redis refuses; the others get their locks and releases", async () => {
    const prefix = `lockhost-fault:${randomUUID().slice(0, 8)}:`;
    const backend = new RedisBackend(config({ keyPrefix: prefix }), captureLogger().logger);
    const admin = new Redis(server.url);
    try {
      const holder = { plugin: "p", node: "n" };
      // A fence counter someone overwrote with a hash: GET on it is refused (WRONGTYPE).
      await admin.hset(`${prefix}fence:{bad}`, "x", "1");
      const [bad, good] = await Promise.all(
        ["bad", "good"].map((key) =>
          backend.acquire({ name: key, owner: `o-${key}`, ttlMs: 5_000, holder }).then(
            (r) => r,
            (err: unknown) => err,
          ),
        ),
      );
      expect(bad).toMatchObject({ code: "BACKEND_UNAVAILABLE", message: expect.stringMatching(/refused the command: WRONGTYPE/) });
      expect(good).toMatchObject({ acquired: true });
      // A lock key someone overwrote with a string: HMGET on it is refused.
      await admin.set(`${prefix}lock:{bad}`, "x");
      const [badRelease, goodRelease] = await Promise.all(
        ["bad", "good"].map((key) =>
          backend.release(key, `o-${key}`).then(
            (r) => r,
            (err: unknown) => err,
          ),
        ),
      );
      expect(badRelease).toMatchObject({ code: "BACKEND_UNAVAILABLE", message: expect.stringMatching(/WRONGTYPE/) });
      expect(goodRelease).toBe("released");
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });
});

describe("redis backend: a refused password", () => {
  it("fails with BACKEND_UNAVAILABLE and never puts the password in errors or logs", async () => {
    const admin = new Redis(server.url);
    await admin.config("SET", "requirepass", "the-right-one");
    admin.disconnect();
    const capture = captureLogger();
    const urls = [
      server.url.replace("redis://", "redis://:s3cret-wrong@"),
      server.url.replace("redis://", "redis://someone:s3cret-wrong@"),
      `${server.url}?password=s3cret-wrong`,
    ];
    try {
      for (const url of urls) {
        const backend = new RedisBackend(config({ url }), capture.logger);
        try {
          const err = await failsPromptly(() => backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } }));
          expect(err.message).not.toContain("s3cret");
          expect(JSON.stringify(err)).not.toContain("s3cret");
          await sleep(300); // a few refused reconnects
          const again = await failsPromptly(() => backend.status("k"));
          expect(again.message).not.toContain("s3cret");
        } finally {
          await backend.close();
        }
      }
      const logged = JSON.stringify(capture.lines);
      expect(logged).toMatch(/WRONGPASS|NOAUTH|invalid password|AUTH/i);
      expect(logged).not.toContain("s3cret");
    } finally {
      const fix = new Redis(server.url, { password: "the-right-one" });
      await fix.config("SET", "requirepass", "");
      fix.disconnect();
    }
  });
});

describe("redis backend: a database the server does not have", () => {
  it("fails every call for good (permanent), naming [locking.redis] url and the database without the password, and writes nothing to database 0", async () => {
    const admin = new Redis(server.url);
    await admin.config("SET", "requirepass", "s3cret-db");
    admin.disconnect();
    const capture = captureLogger();
    const cfg = config({ url: `${server.url.replace("redis://", "redis://:s3cret-db@")}/99` });
    const backend = new RedisBackend(cfg, capture.logger);
    const fix = new Redis(server.url, { password: "s3cret-db" });
    try {
      const err = await backend.ping().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", retryable: false, details: { permanent: 1, database: 99 } });
      expect((err as Error).message).toMatch(
        /^\[locking\.redis\] url redis:\/\/\S+\/99 names database 99, which redis at \S+ does not have \(ERR DB index is out of range\)/,
      );
      expect((err as Error).message).not.toContain("s3cret");
      await expect(backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } })).rejects.toMatchObject({
        details: { permanent: 1 },
      });
      expect(await fix.keys(`${cfg.keyPrefix}*`)).toEqual([]);
      expect(JSON.stringify(capture.lines)).not.toContain("s3cret");
      expect(capture.lines.filter((l) => l.level >= 50).map((l) => l.msg)).toEqual([(err as Error).message]);
    } finally {
      await backend.close();
      await fix.config("SET", "requirepass", "");
      fix.disconnect();
    }
  });
});

describe("redis backend: startup against a server that never answers", () => {
  it("waits for the first connection at most commandTimeoutMs, then fails fast", async () => {
    // Accepts TCP connections and never says a word, as a hung server or a wrong port behind a proxy.
    const sockets = new Set<Socket>();
    const silent = createServer((s) => void sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const { port } = silent.address() as AddressInfo;
    const backend = new RedisBackend(config({ url: `redis://127.0.0.1:${port}` }), captureLogger().logger);
    try {
      const err = await failsPromptly(() => backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } }));
      expect(err.message).toContain(`127.0.0.1:${port}`);
      await sleep(100);
      const started = performance.now();
      await failsPromptly(() => backend.status("k"));
      expect(performance.now() - started).toBeLessThan(COMMAND_TIMEOUT_MS);
    } finally {
      const closing = performance.now();
      await backend.close();
      expect(performance.now() - closing).toBeLessThan(PROMPT_MS);
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});

describe("redis backend: eviction policy", () => {
  it("warns when the server may evict fence counters (allkeys-* policy)", async () => {
    const admin = new Redis(server.url);
    await admin.config("SET", "maxmemory-policy", "allkeys-lru");
    const capture = captureLogger();
    const backend = new RedisBackend(config(), capture.logger);
    try {
      expect((await backend.acquire({ name: "k", owner: "o", ttlMs: 1_000, holder: { plugin: "p", node: "n" } })).acquired).toBe(true);
      await eventually(async () => capture.lines.find((l) => l.maxmemoryPolicy === "allkeys-lru") ?? null, 5_000);
    } finally {
      await backend.close();
      await admin.config("SET", "maxmemory-policy", "noeviction");
      admin.disconnect();
    }
  });
});

describe("redis backend: release notifications across a restart", () => {
  /** Once Redis takes locks again, has another connection take and release `key`, which `seen` must hear. */
  async function releasedElsewhere(cfg: RedisConfig, key: string, seen: CallCounter): Promise<void> {
    const other = new RedisBackend(cfg, captureLogger().logger);
    try {
      const got = await eventually(async () => {
        const r = await other.acquire({ name: key, owner: "o", ttlMs: 10_000, holder: { plugin: "p", node: "n" } });
        return r.acquired ? r : null;
      }, 10_000);
      expect(got.acquired).toBe(true);
      expect(await seen.calledBy(() => other.release(key, "o"))).toBe("released");
    } finally {
      await other.close();
    }
  }

  it("uses one subscriber connection for every watched key", async () => {
    const admin = new Redis(server.url);
    const backend = new RedisBackend(config(), captureLogger().logger);
    try {
      const watches = ["a", "b", "c"].map((k) => backend.watch(k, () => undefined));
      await Promise.all(watches.map((w) => w.ready));
      const subscribers = String(await admin.client("LIST"))
        .split("\n")
        .filter((l) => / name=lockhost-watch /.test(l));
      expect(subscribers).toHaveLength(1);
      expect(subscribers[0]).toMatch(/ sub=3 /);
      for (const w of watches) w.close();
    } finally {
      await backend.close();
      admin.disconnect();
    }
  });

  it("subscribes again after the server restarts, calls the listener once it is back, and hears later releases", async () => {
    const cfg = config();
    const watcher = new RedisBackend(cfg, captureLogger().logger);
    try {
      const seen = await watchCounting(watcher, "job");
      await server.kill();
      // A release may have been missed while the subscriber was away: the listener is called.
      await seen.calledBy(() => server.start(), 15_000);
      expect(seen.count()).toBe(1);

      // And the subscription is live again: another connection's release reaches it.
      await releasedElsewhere(cfg, "job", seen);
      expect(seen.count()).toBe(2);
      seen.watch.close();
    } finally {
      await watcher.close();
    }
  });

  it("flags its watched names again after a restart without persistence, before it wakes their watchers", async () => {
    const cfg = config();
    const layout = new KeyLayout(cfg.keyPrefix);
    const admin = new Redis(server.url, { lazyConnect: true });
    const watcher = new RedisBackend(cfg, captureLogger().logger);
    try {
      const seen = await watchCounting(watcher, "flagged");
      await server.kill(); // no persistence: the flag is gone with every other key
      await seen.calledBy(() => server.start(), 15_000);
      // Woken only once the flag is back: the retry a waiter makes now cannot miss a release.
      expect(await admin.exists(layout.watched("flagged"))).toBe(1);
      expect(await admin.pttl(layout.watched("flagged"))).toBeGreaterThan(0);
      await releasedElsewhere(cfg, "flagged", seen);
      seen.watch.close();
    } finally {
      await watcher.close();
      admin.disconnect();
    }
  });

  it("a holder whose loss notice was sent while its subscriber was away is told once it is back (no keepalive)", async () => {
    const cfg = config();
    const admin = new Redis(server.url);
    const holder = new LockService(new RedisBackend(cfg, captureLogger().logger), { node: "holder" });
    const operator = new LockService(new RedisBackend(cfg, captureLogger().logger), { node: "operator" });
    try {
      const lease = (await holder.tryLock("missed", { ttlMs: 60_000 }))!;
      await eventually(async () => (/ name=lockhost-watch .* sub=1 /.test(String(await admin.client("LIST"))) ? true : null), 5_000);
      // The subscriber is cut off, and the force-release's notice goes out before it can reconnect
      // (its first attempt waits at least 25 ms): nobody hears it.
      await admin.call("CLIENT", "KILL", "TYPE", "pubsub");
      expect(await operator.forceRelease({ name: lease.name })).toBe(1);
      expect(lease.state).toBe("held");
      // Back and subscribed, the host asks about the locks it holds and finds this one gone.
      await eventually(async () => (lease.state === "lost" ? true : null), 5_000);
      expect(lease.signal.reason).toMatchObject({ code: "LOST", message: expect.stringContaining("notices were interrupted") });
    } finally {
      await holder.close();
      await operator.close();
      admin.disconnect();
    }
  });

  it("a watch made while Redis is down is ready within commandTimeoutMs, and subscribes once it is back", async () => {
    const cfg = config();
    const backend = new RedisBackend(cfg, captureLogger().logger);
    const seen = callCounter();
    await server.kill();
    let restarted = false;
    try {
      const started = performance.now();
      const watch = backend.watch("late", seen.listener);
      await watch.ready;
      expect(performance.now() - started).toBeLessThan(PROMPT_MS);
      // The missed subscription is made, and the listener told to look again.
      await seen.calledBy(async () => {
        await server.start();
        restarted = true;
      }, 15_000);
      await releasedElsewhere(cfg, "late", seen);
      watch.close();
    } finally {
      await backend.close();
      if (!restarted) await server.start();
    }
  });
});
