// The guest-side shapes of issue 14 that live on the host: scoped plugin names (`@acme/cron`)
// wherever a plugin name is accepted, with lock names "<plugin>:<key>" split at the first ':'.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startAdminServer } from "../host/admin/server.js";
import { AdminClient } from "../host/cli/admin-client.js";
import { PLUGIN_NAME_PATTERN, qualify } from "../host/locking/scope.js";
import { captureLogger } from "./support/log.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";

let locks: LockService;
beforeEach(() => {
  locks = new LockService(new MemoryBackend(), { node: "node-a" });
});
afterEach(async () => {
  await locks.close();
});

describe("scoped plugin names", () => {
  it("match the plugin name pattern, and nothing with ':' or upper case does", () => {
    for (const ok of ["report", "@acme/cron", "@acme/cron.v2", "a.b_c-d", `@a/${"x".repeat(61)}`]) expect(PLUGIN_NAME_PATTERN.test(ok), ok).toBe(true);
    for (const bad of ["@acme", "@acme/", "@/cron", "acme/cron", "@acme/cron/x", "@Acme/cron", "@acme:x/cron", "@acme/cron:x", `@a/${"x".repeat(62)}`, ""]) {
      expect(PLUGIN_NAME_PATTERN.test(bad), bad).toBe(false);
    }
  });

  it("scope a plugin's keys: the lock name is '@acme/cron:<key>', apart from another plugin's and global keys", async () => {
    expect(qualify("nightly", { plugin: "@acme/cron" })).toBe("@acme/cron:nightly");
    const lease = (await locks.tryLock("nightly", { ttlMs: 5_000, scope: { plugin: "@acme/cron" } }))!;
    expect(lease.name).toBe("@acme/cron:nightly");
    expect(await locks.tryLock("nightly", { ttlMs: 5_000, scope: { plugin: "cron" } })).toBeDefined();
    expect(await locks.tryLock("nightly", { ttlMs: 5_000, scope: "global" })).toBeDefined();
    expect(await locks.status({ name: "@acme/cron:nightly" })).toMatchObject({ held: true, name: "@acme/cron:nightly", holders: [{ plugin: "@acme/cron" }] });
    const page = await locks.list({ plugin: "@acme/cron" });
    expect(page.locks.map((l) => l.name)).toEqual(["@acme/cron:nightly"]);
    await locks.forceRelease({ name: "@acme/cron:nightly" });
    expect(await locks.status({ name: "@acme/cron:nightly" })).toMatchObject({ held: false });
  });

  it("are refused as a scope when malformed, naming the argument", async () => {
    await expect(locks.tryLock("k", { ttlMs: 5_000, scope: { plugin: "@Acme/cron" } })).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringContaining("scope must be"),
    });
  });

  it("work through the admin listener and its client: status, list by plugin, force-release by full name", async () => {
    const server = await startAdminServer({
      service: locks,
      settings: { listen: { host: "127.0.0.1", port: 0 }, token: "t0k3n-scoped" },
      log: captureLogger().logger,
      node: "node-a",
    });
    try {
      await locks.tryLock("nightly", { ttlMs: 10_000, scope: { plugin: "@acme/cron" } });
      const list = (await (await fetch(`${server.url}/locks?plugin=${encodeURIComponent("@acme/cron")}`)).json()) as { locks: { name: string }[] };
      expect(list.locks.map((l) => l.name)).toEqual(["@acme/cron:nightly"]);
      const client = new AdminClient(server.url, "t0k3n-scoped");
      expect(await client.status({ name: "@acme/cron:nightly" })).toMatchObject({ held: true, holders: [{ plugin: "@acme/cron" }] });
      expect(await client.forceRelease({ name: "@acme/cron:nightly" })).toBe(1);
      expect((await locks.status({ name: "@acme/cron:nightly" })).held).toBe(false);
    } finally {
      await server.close();
    }
  });
});
