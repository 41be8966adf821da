// The operator's view across kinds, on every backend with read/write locks and semaphores: a
// listing of every kind by default (a page at a time across the kinds), and the status of a free
// name pointing at the locks of its key held in the other scope or of another kind.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import type { LockListing } from "../host/locking/list.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { PG_TABLE, REDIS_PREFIX, sharedBackends } from "./support/shared-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

const row = (l: LockListing): [string, string, string, number] => [l.key, l.kind, l.mode, l.fence];

for (const target of sharedBackends()) {
  describe(`every kind through the lock service: ${target.name}`, () => {
    let backend: LockBackend | undefined;
    let locks: LockService | undefined;
    const run = randomUUID().slice(0, 8);
    const service = async (): Promise<LockService> => {
      backend = await target.create();
      return (locks = new LockService(backend, { node: "node-every" }));
    };
    afterEach(async () => {
      await locks?.close();
    });

    it("lists every kind by default, in table order, and pages across the kinds to a last page without a cursor", async () => {
      const s = await service();
      const k = `every-${run}-list`;
      const mutex = (await s.tryLock(k, { ttlMs: 10_000 }))!;
      const writer = (await s.tryWrite(k, { ttlMs: 10_000 }))!;
      const permit = (await s.tryPermit(k, { ttlMs: 10_000, permits: 2 }))!;
      const fair = (await s.tryLock(k, { ttlMs: 10_000, fair: true }))!;
      const expected = [
        [`global:${k}`, "mutex", "exclusive", mutex.fence],
        [`global:${k}`, "rw", "exclusive", writer.fence],
        [`global:${k}`, "semaphore", "shared", permit.fence],
        [`global:${k}`, "fair", "exclusive", fair.fence],
      ];
      const all = await s.list({ prefix: `global:${k}` });
      expect(all.locks.map(row)).toEqual(expected);
      expect(all.cursor).toBeUndefined();
      const paged: (string | number)[][] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const p = await s.list({ prefix: `global:${k}`, limit: 1, ...(cursor !== undefined && { cursor }) });
        paged.push(...p.locks.map(row));
        cursor = p.cursor;
        if (cursor === undefined) break;
      }
      expect(paged).toEqual(expected);
      expect((await s.list({ prefix: `global:${k}`, kind: "mutex" })).locks.map(row)).toEqual([expected[0]]);
      expect((await s.list({ prefix: `global:${k}`, plugin: "nobody" })).locks).toEqual([]);
      await expect(s.list({ cursor: "queue:1" })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await expect(s.list({ kind: "queue" as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: 'kind must be mutex, rw, semaphore or fair, got "queue"' });
    });

    it("says where a lock of a free name's key is held: the other scope, another kind", async () => {
      const s = await service();
      const k = `every-${run}-status`;
      // A global mutex and a read/write lock of the plugin's name: "orders:<k>" as a mutex is free.
      const global = (await s.tryLock(`orders:${k}`, { ttlMs: 10_000 }))!;
      const reader = (await s.tryRead(k, { ttlMs: 10_000, scope: { plugin: "orders" } }))!;
      expect(await s.statusByName(`orders:${k}`)).toEqual({
        key: `orders:${k}`,
        held: false,
        heldElsewhere: [
          { name: `global:orders:${k}`, kind: "mutex" },
          { name: `orders:${k}`, kind: "rw" },
        ],
      });
      // The same, asked by key and scope; and from the global name's side.
      expect(await s.status(k, { scope: { plugin: "orders" } })).toMatchObject({ held: false, heldElsewhere: [{ name: `global:orders:${k}`, kind: "mutex" }, { name: `orders:${k}`, kind: "rw" }] });
      expect(await s.heldElsewhere(`global:orders:${k}`)).toEqual([{ name: `orders:${k}`, kind: "rw" }]);
      expect(await s.heldElsewhere(`orders:${k}`, "rw")).toEqual([{ name: `global:orders:${k}`, kind: "mutex" }]);
      // A held lock has no hint, a free one with nothing elsewhere none either, and callers can skip the look.
      expect(await s.statusByName(`global:orders:${k}`)).toMatchObject({ held: true, fence: global.fence });
      expect(await s.statusByName(`global:${k}-none`)).toEqual({ key: `global:${k}-none`, held: false });
      expect(await s.statusByName(`orders:${k}`, { elsewhere: false })).toEqual({ key: `orders:${k}`, held: false });
      await expect(s.statusByName(`orders:${k}`, { elsewhere: 1 as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await s.release(reader);
      await s.release(global);
      expect(await s.statusByName(`orders:${k}`)).toEqual({ key: `orders:${k}`, held: false });
    });
  });
}

describe("held elsewhere on a backend without read/write locks or semaphores", () => {
  it("looks only at the kinds the backend serves", async () => {
    const inner = new MemoryBackend();
    // A mutex-only backend: the memory backend's steps, without LockBackend.shared.
    const mutexOnly: LockBackend = {
      kind: "acme", distributed: false,
      acquire: (r) => inner.acquire(r), renew: (k, o, t) => inner.renew(k, o, t), renewMany: (r) => inner.renewMany(r),
      release: (k, o) => inner.release(k, o), status: (k) => inner.status(k), forceRelease: (k) => inner.forceRelease(k),
      list: (r) => inner.list(r), watch: (k, l) => inner.watch(k, l), ping: () => inner.ping(), close: () => inner.close(),
    };
    const s = new LockService(mutexOnly, { node: "n" });
    try {
      const lease = (await s.tryLock("a:b", { ttlMs: 5_000 }))!;
      expect(await s.statusByName("a:b")).toEqual({ key: "a:b", held: false, heldElsewhere: [{ name: "global:a:b", kind: "mutex" }] });
      expect((await s.list()).locks.map(row)).toEqual([["global:a:b", "mutex", "exclusive", lease.fence]]);
    } finally {
      await s.close();
    }
  });
});
