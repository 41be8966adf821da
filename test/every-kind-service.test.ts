// The operator's view across kinds, on every backend with the queue kinds: a
// listing of every kind by default (a page at a time across the kinds), and the status of a free
// name pointing at the locks of its key held in the other scope or of another kind.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LockBackend } from "../kit/backend.js";
import { permitSpec, READ, WRITE } from "../kit/kinds.js";
import { MutexSteps } from "../kit/mutex.js";
import { LockService } from "../host/locking/service.js";
import type { LockListing } from "../host/locking/list.js";
import type { LockEvent } from "../host/locking/events.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { PG_TABLE, REDIS_PREFIX, queueBackends } from "./support/queue-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

const row = (l: LockListing): [string, string, string, number] => [l.name, l.kind, l.mode, l.fence];

for (const target of queueBackends()) {
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
      const writer = (await s.try(k, { ttlMs: 10_000, ...WRITE }))!;
      const permit = (await s.try(k, { ttlMs: 10_000, ...permitSpec(2) }))!;
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
      await expect(s.list({ kind: "queue" as never })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: 'kind must be mutex, rw, semaphore, fair or leader, got "queue"',
      });
    });

    it("says where a lock of a free name's key is held: the other scope, another kind", async () => {
      const s = await service();
      const k = `every-${run}-status`;
      // A global mutex and a read/write lock of the plugin's name: "orders:<k>" as a mutex is free.
      const global = (await s.tryLock(`orders:${k}`, { ttlMs: 10_000 }))!;
      const reader = (await s.try(k, { ttlMs: 10_000, scope: { plugin: "orders" }, ...READ }))!;
      expect(await s.status({ name: `orders:${k}` })).toEqual({
        name: `orders:${k}`,
        kind: "mutex",
        held: false,
        holders: [],
        limit: 0,
        queued: 0,
        heldElsewhere: [
          { name: `global:orders:${k}`, kind: "mutex" },
          { name: `orders:${k}`, kind: "rw" },
        ],
      });
      // The same, asked by key and scope; and from the global name's side.
      expect(await s.status(k, { scope: { plugin: "orders" } })).toMatchObject({
        held: false,
        heldElsewhere: [
          { name: `global:orders:${k}`, kind: "mutex" },
          { name: `orders:${k}`, kind: "rw" },
        ],
      });
      expect(await s.heldElsewhere(`global:orders:${k}`)).toEqual([{ name: `orders:${k}`, kind: "rw" }]);
      expect(await s.heldElsewhere(`orders:${k}`, "rw")).toEqual([{ name: `global:orders:${k}`, kind: "mutex" }]);
      // A held lock has no hint, a free one with nothing elsewhere none either, and callers can skip the look.
      const free = (name: string): object => ({ name, kind: "mutex", held: false, holders: [], limit: 0, queued: 0 });
      const held = await s.status({ name: `global:orders:${k}` });
      expect(held).toMatchObject({ held: true, holders: [{ fence: global.fence }] });
      expect(held).not.toHaveProperty("heldElsewhere");
      expect(await s.status({ name: `global:${k}-none` })).toEqual(free(`global:${k}-none`));
      expect(await s.status({ name: `orders:${k}` }, { elsewhere: false })).toEqual(free(`orders:${k}`));
      await expect(s.status({ name: `orders:${k}` }, { elsewhere: 1 as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      await s.release(reader);
      await s.release(global);
      expect(await s.status({ name: `orders:${k}` })).toEqual(free(`orders:${k}`));
    });

    it("shows a leadership as a lock of kind leader on the election's own name, apart from a mutex of that name", async () => {
      const s = await service();
      const election = `every-${run}-election`;
      const name = `global:${election}`;
      const events: LockEvent[] = [];
      s.onEvent((e) => events.push(e));
      const leadership = await s.campaign(election, { ttlMs: 10_000, value: "v1", waitMs: 5_000 });
      expect(leadership.lease).toMatchObject({ name, kind: "leader", mode: "exclusive", fence: leadership.term });
      expect(await s.leader(election)).toMatchObject({ election, name, held: true, value: "v1", term: leadership.term });
      expect(await s.status({ name }, { kind: "leader" })).toMatchObject({
        name,
        kind: "leader",
        held: true,
        limit: 0,
        queued: 0,
        holders: [{ mode: "exclusive", fence: leadership.term, value: "v1", node: "node-every" }],
      });
      // The mutex of the election's name is another lock: free, pointing at the leadership.
      expect(await s.status({ name })).toMatchObject({ held: false, heldElsewhere: [{ name, kind: "leader" }] });
      const mutex = (await s.tryLock(election, { ttlMs: 10_000 }))!;
      expect((await s.list({ prefix: name })).locks.map(row)).toEqual([
        [name, "mutex", "exclusive", mutex.fence],
        [name, "leader", "exclusive", leadership.term],
      ]);
      expect((await s.list({ prefix: name, kind: "leader" })).locks).toMatchObject([{ name, kind: "leader", value: "v1" }]);
      // Forced out by kind and name: the leader hears of it at once, the mutex stays.
      expect(await s.forceRelease({ name }, { kind: "leader" })).toBe(1);
      expect(leadership.lease.state).toBe("lost");
      expect(leadership.signal.aborted).toBe(true);
      expect(mutex.state).toBe("held");
      expect(await s.leader(election)).toEqual({ election, name, held: false });
      expect(events.filter((e) => e.name === name && e.kind === "leader").map((e) => e.type)).toEqual(
        expect.arrayContaining(["acquired", "force-released", "lost"]),
      );
      await s.release(mutex);
    });
  });
}

describe("held elsewhere on a backend without read/write locks or semaphores", () => {
  it("looks only at the kinds the backend serves", async () => {
    const inner = new MemoryBackend();
    // A mutex-only backend: the memory backend's mutex methods served as its one kind's steps.
    const mutex = new MutexSteps(inner);
    const mutexOnly: LockBackend = {
      name: "acme",
      distributed: false,
      kinds: ["mutex"],
      steps: () => mutex,
      ping: () => inner.ping(),
      close: () => inner.close(),
    };
    const s = new LockService(mutexOnly, { node: "n" });
    try {
      const lease = (await s.tryLock("a:b", { ttlMs: 5_000 }))!;
      expect(await s.status({ name: "a:b" })).toEqual({
        name: "a:b",
        kind: "mutex",
        held: false,
        holders: [],
        limit: 0,
        queued: 0,
        heldElsewhere: [{ name: "global:a:b", kind: "mutex" }],
      });
      expect((await s.list()).locks.map(row)).toEqual([["global:a:b", "mutex", "exclusive", lease.fence]]);
    } finally {
      await s.close();
    }
  });
});
