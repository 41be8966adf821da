// `await using`: a Lease, a LockSet and a Leadership are AsyncDisposable, so a block that holds
// one gives it back when it ends, on every backend. Disposing of what already ended (released,
// lost, resigned, its service closed) is not a failure; a release the backend fails is thrown
// at the block's exit, inside a SuppressedError when the block threw too. The syntax is
// lowered by the test transform on a Node without it (20, 22) and runs as is from Node 24; the
// last suite runs TypeScript's own lowering (what an embedder compiling to ES2022 gets) and, on
// a Node that has the syntax, the syntax itself.
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import ts from "typescript";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { Lease } from "../host/locking/lease.js";
import type { LockSet } from "../host/locking/lock-set.js";
import type { Leadership } from "../host/locking/election.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { hostsOn, PG_TABLE, REDIS_PREFIX, queueBackends } from "./support/queue-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy.js";
import { silent } from "./support/log.js";
import { until } from "./support/until.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

const TTL = { ttlMs: 10_000 } as const;

/** Resolves once `signal` aborts. */
const aborted = (signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => (signal.aborted ? resolve() : signal.addEventListener("abort", () => resolve())));

for (const target of queueBackends()) {
  describe(`await using: ${target.name}`, () => {
    const fleet = hostsOn(target);
    const run = randomUUID().slice(0, 8);
    const k = (name: string): string => `dispose-${run}-${name}`;
    afterEach(() => fleet.close());

    it("releases a lease at the end of its block, and another holder takes the key at once", async () => {
      const [a, b] = await fleet.hosts();
      let kept: Lease | undefined;
      {
        await using lease = await a!.acquire(k("lease"), { ...TTL, waitMs: 5_000 });
        kept = lease;
        expect(await b!.tryLock(k("lease"), TTL)).toBeNull();
      }
      expect(kept.state).toBe("released");
      expect(a!.heldCount).toBe(0);
      const next = await b!.tryLock(k("lease"), TTL);
      expect(next).not.toBeNull();
      await b!.release(next!);
    });

    it("releases a lease when its block throws, and the block's error comes out as it was thrown", async () => {
      const [a] = await fleet.hosts();
      let kept: Lease | undefined;
      const thrown = new Error("the job failed");
      const body = async (): Promise<void> => {
        await using lease = (await a!.tryLock(k("throws"), TTL))!;
        kept = lease;
        throw thrown;
      };
      await expect(body()).rejects.toBe(thrown);
      expect(kept!.state).toBe("released");
    });

    it("leaves alone a lease released or lost before its block ends, without an error", async () => {
      const [a, b] = await fleet.hosts();
      {
        await using lease = (await a!.tryLock(k("released"), TTL))!;
        await a!.release(lease);
      }
      let lost: Lease | undefined;
      {
        await using lease = (await a!.tryLock(k("lost"), TTL))!;
        lost = lease;
        const ended = aborted(lease.signal);
        expect(await b!.forceRelease(k("lost"))).toBe(1);
        await ended;
        expect(lease.state).toBe("lost");
      }
      expect(lost.state).toBe("lost");
      expect(a!.heldCount).toBe(0);
    });

    it("releases every lock of a set at the end of its block, skipping one released inside it", async () => {
      const [a, b] = await fleet.hosts();
      const keys = [k("s3"), k("s1"), k("s2")];
      let kept: LockSet | undefined;
      {
        await using set = await a!.acquireMany(keys, { ...TTL, waitMs: 5_000 });
        kept = set;
        await a!.release(set.leases[1]!);
        expect(await b!.tryMany(keys, TTL)).toBeNull();
      }
      expect(kept.leases.map((l) => l.state)).toEqual(["released", "released", "released"]);
      const again = await b!.tryMany(keys, TTL);
      expect(again).not.toBeNull();
      await again![Symbol.asyncDispose]();
      expect(again!.leases.every((l) => l.state === "released")).toBe(true);
    });

    it("resigns a leadership at the end of its block: the next campaigner leads at once", async () => {
      const [a, b] = await fleet.hosts();
      const election = k("election");
      let kept: Leadership | undefined;
      {
        await using leader = await a!.campaign(election, { ...TTL, value: "a" });
        kept = leader;
        expect(leader.leading).toBe(true);
      }
      expect(kept.leading).toBe(false);
      expect(kept.signal.reason).toMatchObject({ code: "ALREADY_RELEASED" });
      {
        await using next = await b!.campaign(election, { ...TTL, value: "b", waitMs: 5_000 });
        expect(next.term).toBeGreaterThan(kept.term);
        // Resigned inside the block: its end has nothing left to do.
        await next.resign();
      }
      expect((await a!.leader(election)).held).toBe(false);
    });
  });
}

describe("await using: what has ended already", () => {
  it("does nothing for a lease, a set or a leadership whose service closed inside the block", async () => {
    const backend = new MemoryBackend();
    const locks = new LockService(backend, { node: "n" });
    const other = new LockService(backend, { node: "m" });
    try {
      {
        await using lease = (await locks.tryLock("a", TTL))!;
        await using set = (await locks.tryMany(["b", "c"], TTL))!;
        await using leader = await locks.campaign("e", TTL);
        expect(await locks.close({ closeBackend: false })).toEqual([]);
        expect([lease.state, ...set.leases.map((l) => l.state), leader.leading]).toEqual(["released", "released", "released", false]);
      }
      expect(await other.tryLock("a", TTL)).not.toBeNull();
    } finally {
      await other.close();
    }
  });

  it("does nothing when disposed twice", async () => {
    const locks = new LockService(new MemoryBackend(), { node: "n" });
    try {
      const lease = (await locks.tryLock("a", TTL))!;
      await lease[Symbol.asyncDispose]();
      await lease[Symbol.asyncDispose]();
      const leader = await locks.campaign("e", TTL);
      await leader[Symbol.asyncDispose]();
      await leader[Symbol.asyncDispose]();
      const set = (await locks.tryMany(["b", "c"], TTL))!;
      await set[Symbol.asyncDispose]();
      await set[Symbol.asyncDispose]();
      expect([lease.state, leader.lease.state, ...set.leases.map((l) => l.state)]).toEqual(["released", "released", "released", "released"]);
    } finally {
      await locks.close();
    }
  });
});

describe("await using: a release the backend fails (Redis behind a proxy that stops delivering)", () => {
  const COMMAND_TIMEOUT_MS = 500;
  const prefix = `lockhost-test-dispose:${randomUUID().slice(0, 8)}:`;
  let proxy: TcpProxy | undefined;
  const services: LockService[] = [];

  /** A service on Redis through a proxy, its connection made; and one straight to Redis. */
  async function setup(): Promise<{ locks: LockService; direct: LockService; proxy: TcpProxy }> {
    const port = Number(new URL(redisUrl()).port || 6379);
    proxy = await startTcpProxy(port);
    const redis = (url: string): RedisBackend =>
      new RedisBackend({ url, keyPrefix: prefix, commandTimeoutMs: COMMAND_TIMEOUT_MS, reclaimOwnLocks: false }, silent);
    const locks = new LockService(redis(`redis://127.0.0.1:${proxy.port}`), { node: "proxied" });
    const direct = new LockService(redis(redisUrl()), { node: "direct" });
    services.push(locks, direct);
    await locks.ping();
    return { locks, direct, proxy };
  }

  afterEach(async () => {
    proxy?.stall(false);
    await Promise.all(services.splice(0).map((s) => s.close({ releaseTimeoutMs: 5_000 })));
    await proxy?.close();
    proxy = undefined;
  });
  afterAll(() => dropRedisPrefix(redisUrl(), prefix));

  it("throws the release's error at the end of a block that completed, and stops keeping the lock alive", async () => {
    const { locks, direct, proxy } = await setup();
    let kept: Lease | undefined;
    const body = async (): Promise<string> => {
      await using lease = (await locks.tryLock("job", { ttlMs: 3_000, keepalive: true }))!;
      kept = lease;
      proxy.stall(true);
      return "done";
    };
    const err = await body().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(LockhostError);
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    // The lock is let go of: no longer renewed, it ends at its TTL (or with the retried release).
    expect(kept!.keepalive).toBe(false);
    proxy.stall(false);
    await until("the lock is free again", 20_000, async () => (await direct.tryLock("job", TTL)) !== null);
  });

  it("throws a SuppressedError with the release's error and the block's when both failed", async () => {
    const { locks, proxy } = await setup();
    const thrown = new Error("the job failed");
    const body = async (): Promise<void> => {
      await using set = (await locks.tryMany(["x", "y"], TTL))!;
      void set;
      proxy.stall(true);
      throw thrown;
    };
    const err = await body().then(
      () => undefined,
      (e: unknown) => e,
    );
    // SuppressedError: native from Node 24, the transform's own class before.
    expect(err).toMatchObject({ name: "SuppressedError", suppressed: thrown });
    expect((err as { error: unknown }).error).toBeInstanceOf(LockhostError);
    expect((err as { error: LockhostError }).error.code).toBe("BACKEND_UNAVAILABLE");
  });

  it("throws the resignation's error from a leadership's block", async () => {
    const { locks, proxy } = await setup();
    const body = async (): Promise<void> => {
      await using leader = await locks.campaign("leader", TTL);
      void leader;
      proxy.stall(true);
    };
    await expect(body()).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE" });
  });
});

describe("await using as compiled by TypeScript, and as Node runs it", () => {
  const SOURCE = `
export async function run(locks) {
  const log = [];
  {
    await using lease = await locks.acquire("compiled", { ttlMs: 10000, waitMs: 1000 });
    log.push(lease.state);
  }
  try {
    await using set = await locks.tryMany(["p", "q"], { ttlMs: 10000 });
    log.push(set.leases.length);
    throw new Error("body");
  } catch (e) {
    log.push(e.message);
  }
  const again = await locks.tryMany(["compiled", "p", "q"], { ttlMs: 10000 });
  log.push(again !== null);
  return log;
}
`;
  const dir = mkdtempSync(join(tmpdir(), "lockhost-dispose-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const runModule = async (name: string, code: string): Promise<unknown[]> => {
    const file = join(dir, name);
    writeFileSync(file, code);
    const { run } = (await import(pathToFileURL(file).href)) as { run: (locks: LockService) => Promise<unknown[]> };
    const locks = new LockService(new MemoryBackend(), { node: "n" });
    try {
      return await run(locks);
    } finally {
      await locks.close();
    }
  };

  it("releases at scope end in TypeScript's ES2022 output (its helpers, Node's Symbol.asyncDispose)", async () => {
    expect(typeof Symbol.asyncDispose).toBe("symbol");
    const { outputText } = ts.transpileModule(SOURCE, { compilerOptions: { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext } });
    expect(outputText).toContain("__disposeResources");
    expect(await runModule("compiled.mjs", outputText)).toEqual(["held", 2, "body", true]);
  });

  const native = Number(process.versions.node.split(".")[0]) >= 24;
  it.runIf(native)("releases at scope end as Node itself runs `await using` (Node 24 and later)", async () => {
    expect(await runModule("native.mjs", SOURCE)).toEqual(["held", 2, "body", true]);
  });
});
