// lockhost/extism: an app that runs @extism/extism itself gives its plugin lockhost's lock
// functions, backed by a LockService (memory, and Redis). The plugin is the same @extism/as-pdk
// build lockhost runs (test/guests/extism/locks.ts), so it reads the same replies under both.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import createPlugin, { type Plugin } from "@extism/extism";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { extismLockFunctions, type ExtismLockFunctions } from "../host/runtime/extism/index.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { dropRedisPrefix } from "./support/cleanup.js";
import { guestWasm } from "./support/guests.js";
import { silent } from "./support/log.js";
import { redisUrl } from "./support/servers.js";

const WASM = readFileSync(guestWasm("extism-locks"));
const REDIS_PREFIX = `lockhost-test-extism:${Math.random().toString(36).slice(2, 10)}:`;

const BACKENDS = {
  memory: () => new MemoryBackend(),
  redis: () => new RedisBackend({ url: redisUrl(), keyPrefix: REDIS_PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent),
};

afterAll(async () => {
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

describe.each(Object.keys(BACKENDS) as (keyof typeof BACKENDS)[])("lockhost/extism under @extism/extism (%s)", (backend) => {
  const open: { plugin: Plugin; locks: ExtismLockFunctions }[] = [];
  const services: LockService[] = [];
  afterEach(async () => {
    for (const { plugin, locks } of open.splice(0)) {
      await plugin.close();
      await locks.close();
    }
    for (const s of services.splice(0)) {
      expect(s.heldCount).toBe(0);
      await s.close();
    }
  });

  async function start(service: LockService, plugin = "app"): Promise<{ plugin: Plugin; locks: ExtismLockFunctions }> {
    const locks = extismLockFunctions(service, { plugin, globalKeys: ["shared"] });
    const p = await createPlugin({ wasm: [{ data: WASM }] }, { runInWorker: true, functions: locks.functions, logger: console });
    const started = { plugin: p, locks };
    open.push(started);
    return started;
  }

  const service = (): LockService => {
    const s = new LockService(BACKENDS[backend](), { node: "node-a" });
    services.push(s);
    return s;
  };

  /** One plugin call of call_<op>, its locks released afterwards as lockhost does. */
  async function lock(
    p: { plugin: Plugin; locks: ExtismLockFunctions },
    op: string,
    args: unknown,
  ): Promise<{ result: number; code?: string; value?: unknown }> {
    const out = await p.locks.call(() => p.plugin.call(`call_${op}`, JSON.stringify(args)));
    return out!.json() as { result: number; code?: string; value?: unknown };
  }

  it("takes, fences, shows and releases a lock, and releases what a call forgets when it returns", async () => {
    const s = service();
    const a = await start(s);
    const taken = await lock(a, "try", { key: "k", ttl_ms: 10_000, flags: S.FLAG_KEEP });
    expect(taken.result).toBeGreaterThan(0);
    expect((await lock(a, "fence", { handle: taken.result })).result).toBeGreaterThan(0);
    expect(await lock(a, "state", { handle: taken.result })).toEqual({ result: S.STATE_HELD });
    expect(await lock(a, "status", { key: "k" })).toMatchObject({ value: { held: true, key: expect.stringMatching(/app:k$/) } });
    expect(a.locks.heldLocks).toBe(1);
    // Another plugin of the app contends for the same key in its own namespace only.
    const b = await start(s, "other");
    expect((await lock(b, "try", { key: "k", ttl_ms: 10_000 })).result).toBeGreaterThan(0);
    const b2 = await start(s, "app");
    expect((await lock(b2, "try", { key: "k", ttl_ms: 10_000 })).result).toBe(S.TRY_CONTENDED);
    expect(await lock(a, "release", { handle: taken.result })).toEqual({ result: 0 });
    // Forgotten: released when the call returned.
    expect((await lock(a, "try", { key: "forgotten", ttl_ms: 60_000 })).result).toBeGreaterThan(0);
    expect(a.locks.heldLocks).toBe(0);
    expect((await lock(b2, "try", { key: "forgotten", ttl_ms: 10_000 })).result).toBeGreaterThan(0);
  });

  it("gives the native status codes, global keys only as granted, and the other lock kinds", async () => {
    const s = service();
    const a = await start(s);
    expect(await lock(a, "release", { handle: 12345 })).toMatchObject({ result: -S.INVALID_HANDLE, code: "INVALID_HANDLE" });
    expect(await lock(a, "try", { key: "k" })).toMatchObject({ result: -S.INVALID_ARGUMENT });
    expect(await lock(a, "try", { key: "nope", ttl_ms: 5_000, flags: S.FLAG_GLOBAL })).toMatchObject({ result: -S.PERMISSION_DENIED });
    expect((await lock(a, "try", { key: "shared", ttl_ms: 5_000, flags: S.FLAG_GLOBAL })).result).toBeGreaterThan(0);
    expect((await lock(a, "try_read", { key: "rw", ttl_ms: 5_000 })).result).toBeGreaterThan(0);
    expect((await lock(a, "try_permit", { key: "sem", permits: 3, ttl_ms: 5_000 })).result).toBeGreaterThan(0);
    const led = await lock(a, "try_campaign", { key: "lead", value: "me", ttl_ms: 5_000, flags: S.FLAG_KEEP });
    expect(led.result).toBeGreaterThan(0);
    expect(await lock(a, "leader", { key: "lead" })).toMatchObject({ value: { held: true, value: "me" } });
    expect(await lock(a, "resign", { handle: led.result })).toEqual({ result: 0 });
  });

  it("waits in acquire until another holder lets go", async () => {
    const s = service();
    const a = await start(s);
    const b = await start(s);
    const held = await lock(a, "try", { key: "w", ttl_ms: 10_000, flags: S.FLAG_KEEP });
    const waiting = lock(b, "acquire", { key: "w", ttl_ms: 10_000, wait_ms: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await lock(a, "release", { handle: held.result })).toEqual({ result: 0 });
    expect((await waiting).result).toBeGreaterThan(0);
  });
});

describe("the lockhost/extism entry", () => {
  it("loads the lock service's guest side, not the host: no config, scheduler, admin, runtimes or backends", () => {
    const root = join(import.meta.dirname, "..");
    const seen = new Set<string>();
    const visit = (file: string): void => {
      if (seen.has(file)) return;
      seen.add(file);
      for (const [, spec] of readFileSync(file, "utf8").matchAll(/^(?:import|export)\s(?!type\b)[^;]*?from\s+"(\.[^"]+)"/gm)) {
        const target = resolve(dirname(file), spec!.replace(/\.js$/, ".ts"));
        if (existsSync(target)) visit(target);
      }
    };
    visit(join(root, "host/runtime/extism/index.ts"));
    const loaded = [...seen].map((f) => relative(root, f));
    expect(loaded).toContain("host/runtime/guest-locks.ts");
    // The config's field rules (shared names of log levels) are all it takes of host/config.
    const host =
      /^host\/(index|host|reload)\.ts$|^host\/config\/(?!field-rules\.ts)|^host\/(scheduler|admin|cli|registry)\/|^host\/runtime\/(worker|inline)\/|^plugins\//;
    expect(loaded.filter((f) => host.test(f))).toEqual([]);
  });
});
