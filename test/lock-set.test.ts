// Several keys taken all or nothing through the LockService (tryMany / acquireMany), on every
// backend: one canonical order so callers naming the same keys in other orders never deadlock,
// a rollback of the keys taken when one is held, a fence per key, one signal and one release.
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { LockService } from "../host/locking/service.js";
import { READ, WRITE } from "../kit/kinds.js";
import { hostsOn, PG_TABLE, REDIS_PREFIX, queueBackends } from "./support/queue-backends.js";
import { dropPgTable, dropRedisPrefix } from "./support/cleanup.js";
import { databaseUrl, redisUrl } from "./support/servers.js";

afterAll(async () => {
  await dropPgTable(databaseUrl(), PG_TABLE);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

for (const target of queueBackends()) {
  describe(`lock sets: ${target.name}`, () => {
    const fleet = hostsOn(target);
    const hosts = (): Promise<LockService[]> => fleet.hosts();
    const run = randomUUID().slice(0, 8);
    const k = (name: string): string => `set-${run}-${name}`;
    afterEach(() => fleet.close());

    it("takes every key in canonical order with a fence each, and releases them all at once", async () => {
      const [a, b] = await hosts();
      const set = (await a!.tryMany([k("c"), k("a"), k("b")], { ttlMs: 10_000 }))!;
      expect(set.names).toEqual([`global:${k("a")}`, `global:${k("b")}`, `global:${k("c")}`]);
      for (const lease of set.leases) expect(set.fences[lease.name]).toBe(lease.fence);
      expect(await b!.tryLock(k("b"), { ttlMs: 10_000 })).toBeNull();
      await set.release();
      expect(set.leases.every((l) => l.state === "released")).toBe(true);
      const again = await b!.tryMany([k("a"), k("b"), k("c")], { ttlMs: 10_000 });
      expect(again).not.toBeNull();
      await again!.release();
    });

    it("takes none when one key is held: the keys taken before it are released again", async () => {
      const [a, b] = await hosts();
      const held = (await b!.tryLock(k("y"), { ttlMs: 10_000 }))!;
      expect(await a!.tryMany([k("x"), k("y"), k("z")], { ttlMs: 10_000 })).toBeNull();
      // x was taken first (canonical order) and let go when y was found held; z was never tried.
      const x = await b!.tryLock(k("x"), { ttlMs: 10_000 });
      expect(x).not.toBeNull();
      expect(a!.heldCount).toBe(0);
      await b!.release(held);
      await b!.release(x!);
    });

    it("never deadlocks two callers naming the same keys in opposite orders", async () => {
      const [a, b] = await hosts();
      const rounds = 10;
      const run = async (s: LockService, keys: string[]): Promise<number> => {
        let done = 0;
        for (let i = 0; i < rounds; i++) {
          const set = await s.acquireMany(keys, { ttlMs: 10_000, waitMs: 10_000 });
          await new Promise((r) => setTimeout(r, 2));
          await set.release();
          done++;
        }
        return done;
      };
      const [da, db] = await Promise.all([run(a!, [k("p"), k("q"), k("r")]), run(b!, [k("r"), k("q"), k("p")])]);
      expect([da, db]).toEqual([rounds, rounds]);
    });

    it("times out naming the key that stayed held, with nothing kept", async () => {
      const [a, b] = await hosts();
      const held = (await b!.tryLock(k("t2"), { ttlMs: 10_000 }))!;
      await expect(a!.acquireMany([k("t1"), k("t2")], { ttlMs: 10_000, waitMs: 150 })).rejects.toMatchObject({
        code: "TIMEOUT",
        details: expect.objectContaining({ key: k("t2") }),
      });
      expect(a!.heldCount).toBe(0);
      await b!.release(held);
    });

    it("keeps none when a key taken early lapsed while a later one was waited for", async () => {
      const [a, b] = await hosts();
      const held = (await b!.tryLock(k("w2"), { ttlMs: 10_000 }))!;
      setTimeout(() => void b!.release(held), 400);
      await expect(a!.acquireMany([k("w1"), k("w2")], { ttlMs: 150, keepalive: false, waitMs: 5_000 })).rejects.toMatchObject({ code: "LOST" });
      expect(a!.heldCount).toBe(0);
      // With keepalive (the default) the early key lives through the wait.
      const held2 = (await b!.tryLock(k("w2"), { ttlMs: 10_000 }))!;
      setTimeout(() => void b!.release(held2), 400);
      const set = await a!.acquireMany([k("w1"), k("w2")], { ttlMs: 150, waitMs: 5_000 });
      expect(set.leases.every((l) => l.state === "held")).toBe(true);
      await set.release();
    });

    it("aborts the set's signal when one of its locks is lost", async () => {
      const [a, b] = await hosts();
      const set = (await a!.tryMany([k("l1"), k("l2")], { ttlMs: 10_000 }))!;
      expect(set.signal.aborted).toBe(false);
      expect(await b!.forceRelease({ name: `global:${k("l2")}` })).toBe(1);
      await expect.poll(() => set.signal.aborted, { timeout: 2_000 }).toBe(true);
      expect((set.signal.reason as { code: string }).code).toBe("LOST");
      await set.release().catch(() => undefined);
    });

    it("takes sets of read/write locks: two reader sets share, a writer set waits", async () => {
      const [a, b] = await hosts();
      const r1 = (await a!.tryMany([k("m"), k("n")], { ttlMs: 10_000, ...READ }))!;
      const r2 = (await b!.tryMany([k("n"), k("m")], { ttlMs: 10_000, ...READ }))!;
      expect(await b!.tryMany([k("m")], { ttlMs: 10_000, ...WRITE })).toBeNull();
      await Promise.all([r1.release(), r2.release()]);
      const w = (await b!.tryMany([k("m"), k("n")], { ttlMs: 10_000, ...WRITE }))!;
      expect(w.leases.map((l) => l.mode)).toEqual(["exclusive", "exclusive"]);
      await w.release();
    });

    it("refuses an empty list, a key named twice, and an owner token, taking nothing", async () => {
      const [a] = await hosts();
      await expect(a!.tryMany([], { ttlMs: 10_000 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("non-empty") });
      await expect(a!.tryMany([k("d"), k("d")], { ttlMs: 10_000 })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("twice"),
      });
      await expect(a!.tryMany([k("e")], { ttlMs: 10_000, owner: "mine-1" })).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("owner"),
      });
      await expect(a!.tryMany([k("f"), ""], { ttlMs: 10_000 })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
      expect(a!.heldCount).toBe(0);
    });
  });
}
