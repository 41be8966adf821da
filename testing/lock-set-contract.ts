// Lock sets (LockService.tryMany / acquireMany: several keys all or nothing, in one canonical
// order), checked on every backend: all or nothing, no deadlock between hosts naming the keys in
// other orders, the rollback of a wait that times out, one signal for the loss of any key, and,
// on a backend with queue kinds, sets of read/write locks and semaphores. The exclusive cases
// run with the mutex, and there also with the fair mutex, the write lock and a semaphore of one
// permit. As in lifecycle-contract.ts, "two hosts" are two LockServices over two backend
// instances (one shared instance for a backend that is not distributed).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "./vitest.js";
import { LockhostError } from "../kit/errors.js";
import type { LockBackend } from "../kit/backend.js";
import { FAIR, MUTEX, permitSpec, READ, WRITE, type LockSpec } from "../kit/kinds.js";
import { LockService, type LockSet, type TryLockOptions } from "../host/locking/service.js";
import { closeBackends, hostBackends, type ContractTarget } from "./target.js";
import { rejection } from "./rejection.js";

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
/** Every set of this suite lives in a plugin's scope, so status and force-release go by key and scope. */
const scope = { plugin: "lockset-contract" };

type SetOptions = Omit<TryLockOptions, "scope"> & { readonly waitMs?: number };

/**
 * The one place a set's spec meets LockService's signature: tryMany, or acquireMany when
 * `options` has a `waitMs`, of `keys` taken as `spec`.
 */
function takeMany(service: LockService, keys: readonly string[], options: SetOptions, spec: LockSpec): Promise<LockSet | null> {
  const { waitMs, ...rest } = options;
  return waitMs === undefined ? service.tryMany(keys, { ...rest, scope, ...spec }) : service.acquireMany(keys, { ...rest, scope, waitMs, ...spec });
}

/** How many hold `key` as `spec`'s kind (0 or 1 for a mutex). */
async function holders(service: LockService, key: string, spec: LockSpec): Promise<number> {
  return (await service.status(key, { scope, kind: spec.kind, elsewhere: false })).holders.length;
}

/** Force-releases `key` of `spec`'s kind, by key and scope (an operator's action). */
async function forceRelease(service: LockService, key: string, spec: LockSpec): Promise<void> {
  expect(await service.forceRelease(key, { scope, kind: spec.kind })).toBe(1);
}

/** Registers the lock-set cases for one backend. */
export function lockSetContract(name: string, target: ContractTarget): void {
  // One kind of exclusive hold per row: the mutex everywhere, the queue kinds' exclusive holds where served.
  const exclusive: readonly (readonly [string, LockSpec])[] = [
    ["mutex", MUTEX],
    ...(target.queueKinds === false
      ? []
      : ([
          ["fair mutex", FAIR],
          ["write lock", WRITE],
          ["semaphore of 1 permit", permitSpec(1)],
        ] as const)),
  ];

  describe(`lock set contract: ${name}`, () => {
    let a: LockService;
    let b: LockService;
    const backends: LockBackend[] = [];
    const run = randomUUID().slice(0, 8);
    let n = 0;
    /** Keys of one test, in canonical order (they differ only in their last character). */
    const keys = (count: number): string[] => {
      const base = `set-${run}-${++n}-`;
      return Array.from({ length: count }, (_, i) => `${base}${String.fromCharCode(97 + i)}`);
    };

    beforeAll(async () => {
      backends.push(...(await hostBackends(target, 2)));
      const [first, second] = backends as [LockBackend, LockBackend];
      a = new LockService(first, { node: "host-a" });
      b = new LockService(second, { node: "host-b" });
    });
    afterAll(async () => {
      await a?.close({ closeBackend: false });
      await b?.close({ closeBackend: false });
      await closeBackends(backends);
    });

    describe.each(exclusive)("%s", (_, spec) => {
      it("takes all or nothing: a held key refuses the set, the keys before it are let go; then one fence per key, one release", async () => {
        const [k1, k2, k3] = keys(3) as [string, string, string];
        const held = (await takeMany(b, [k2], { ttlMs: 10_000 }, spec))!;
        expect(held).not.toBeNull();
        const acquired: string[] = [];
        const released: string[] = [];
        const off = a.onEvent((e) => (e.type === "acquired" ? acquired : released).push(e.name), ["acquired", "released"]);
        try {
          expect(await takeMany(a, [k3, k1, k2], { ttlMs: 10_000 }, spec)).toBeNull();
        } finally {
          off();
        }
        // k1 comes first in canonical order: it was taken, and let go when k2 was found held; k3 was never tried.
        expect(acquired).toEqual([`${scope.plugin}:${k1}`]);
        expect(released).toEqual(acquired);
        expect(a.heldCount).toBe(0);
        for (const k of [k1, k3]) expect(await holders(b, k, spec), k).toBe(0);
        expect(await holders(b, k2, spec)).toBe(1);
        const probe = (await takeMany(b, [k1, k3], { ttlMs: 10_000 }, spec))!;
        expect(probe).not.toBeNull();
        await probe.release();

        await held.release();
        const set = (await takeMany(a, [k3, k1, k2], { ttlMs: 10_000 }, spec))!;
        expect(set).not.toBeNull();
        const names = [k1, k2, k3].map((k) => `${scope.plugin}:${k}`);
        expect(set.names).toEqual(names);
        expect(new Set(set.leases).size).toBe(3);
        expect(new Set(set.leases.map((l) => l.owner)).size).toBe(3);
        expect(Object.keys(set.fences).sort()).toEqual(names);
        for (const lease of set.leases) {
          expect(lease.state).toBe("held");
          expect(lease.kind).toBe(spec.kind);
          expect(lease.fence).toBeGreaterThan(0);
          expect(set.fences[lease.name]).toBe(lease.fence);
        }
        for (const k of [k1, k2, k3]) expect(await holders(b, k, spec), k).toBe(1);
        expect(await takeMany(b, [k1], { ttlMs: 10_000 }, spec)).toBeNull();
        await set.release();
        expect(set.leases.every((l) => l.state === "released")).toBe(true);
        expect(set.signal.aborted).toBe(false);
        expect(a.heldCount).toBe(0);
        for (const k of [k1, k2, k3]) expect(await holders(b, k, spec), k).toBe(0);
      });

      it("never deadlocks two hosts waiting for the same keys named in other orders, nor lets their sets overlap", async () => {
        const ks = keys(4);
        const rounds = 20;
        const holding = new Map<string, string>();
        const overlaps: string[] = [];
        const loop = async (service: LockService, order: readonly string[]): Promise<number> => {
          let done = 0;
          for (let i = 0; i < rounds; i++) {
            const set = (await takeMany(service, order, { ttlMs: 10_000, waitMs: 10_000 }, spec))!;
            for (const k of ks) {
              const other = holding.get(k);
              if (other !== undefined) overlaps.push(`${service.node} took ${k} held by ${other}`);
              holding.set(k, service.node);
            }
            await sleep(1);
            for (const k of ks) holding.delete(k);
            await set.release();
            done++;
          }
          return done;
        };
        const t0 = performance.now();
        let timer: NodeJS.Timeout | undefined;
        const bound = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error("the two hosts' sets did not all complete within 15 s: a deadlock?")), 15_000);
        });
        try {
          const done = await Promise.race([Promise.all([loop(a, ks), loop(b, [ks[2]!, ks[0]!, ks[3]!, ks[1]!].reverse())]), bound]);
          expect(done).toEqual([rounds, rounds]);
        } finally {
          clearTimeout(timer);
        }
        expect(overlaps).toEqual([]);
        expect(performance.now() - t0).toBeLessThan(15_000);
        expect(a.heldCount + b.heldCount).toBe(0);
        expect(a.stats().waiters + b.stats().waiters).toBe(0);
      });

      it("times out naming the key that stayed held, with the keys taken before it let go at once", async () => {
        const [k1, k2, k3] = keys(3) as [string, string, string];
        const held = (await takeMany(b, [k2], { ttlMs: 10_000 }, spec))!;
        const acquired: string[] = [];
        const off = a.onEvent((e) => void acquired.push(e.name), ["acquired"]);
        const t0 = performance.now();
        let e: LockhostError;
        try {
          e = await rejection(takeMany(a, [k3, k2, k1], { ttlMs: 10_000, waitMs: 200 }, spec));
        } finally {
          off();
        }
        expect(e.code).toBe("TIMEOUT");
        expect(e.details).toMatchObject({ key: k2, name: `${scope.plugin}:${k2}` });
        expect(performance.now() - t0).toBeLessThan(3_000);
        expect(acquired).toEqual([`${scope.plugin}:${k1}`]);
        expect(a.heldCount).toBe(0);
        expect(a.stats().waiters).toBe(0);
        // The other host takes the rest at once: nothing of the set is held, nor waits.
        const rest = (await takeMany(b, [k1, k3], { ttlMs: 10_000 }, spec))!;
        expect(rest).not.toBeNull();
        await rest.release();
        // And the key it waited for is free once its holder lets go (no place of the wait left behind).
        await held.release();
        const again = (await takeMany(b, [k2], { ttlMs: 10_000 }, spec))!;
        expect(again).not.toBeNull();
        await again.release();
      });

      it("aborts the set's signal when one of its locks is force-released; release() frees the rest and rejects with LOST", async () => {
        const [k1, k2, k3] = keys(3) as [string, string, string];
        const set = (await takeMany(a, [k1, k2, k3], { ttlMs: 1_000 }, spec))!;
        expect(set).not.toBeNull();
        expect(set.signal.aborted).toBe(false);
        await forceRelease(b, k2, spec);
        // Told at once (LockBackend.onLost) or at the next renewal, half a TTL later.
        await expect.poll(() => set.signal.aborted, { timeout: 3_000, interval: 20 }).toBe(true);
        const lost = set.leases[1]!;
        expect(lost.name).toBe(`${scope.plugin}:${k2}`);
        expect(lost.state).toBe("lost");
        expect(set.signal.reason).toBeInstanceOf(LockhostError);
        expect((set.signal.reason as LockhostError).code).toBe("LOST");
        expect(set.signal.reason).toBe(lost.lostReason);
        expect([set.leases[0]!.state, set.leases[2]!.state]).toEqual(["held", "held"]);
        // LockSet.release(): every lock is released whatever became of the others, then it
        // rejects with the first failure: the lost lock's LOST.
        expect((await rejection(set.release())).code).toBe("LOST");
        expect(set.leases.map((l) => l.state)).toEqual(["released", "lost", "released"]);
        expect(a.heldCount).toBe(0);
        for (const k of [k1, k2, k3]) expect(await holders(b, k, spec), k).toBe(0);
        const next = (await takeMany(b, [k1, k2, k3], { ttlMs: 10_000 }, spec))!;
        expect(next).not.toBeNull();
        await next.release();
      });
    });

    if (target.queueKinds === false) return;

    it("read/write sets: two hosts hold READ sets of the same keys at once; a WRITE set takes none of them, then waits for them", async () => {
      const ks = keys(3);
      const r1 = (await takeMany(a, ks, { ttlMs: 10_000 }, READ))!;
      const r2 = (await takeMany(b, [...ks].reverse(), { ttlMs: 10_000 }, READ))!;
      expect(r1).not.toBeNull();
      expect(r2).not.toBeNull();
      expect([...r1.leases, ...r2.leases].every((l) => l.kind === "rw" && l.mode === "shared")).toBe(true);
      for (const k of ks) expect(await holders(a, k, READ), k).toBe(2);
      expect(await takeMany(a, ks, { ttlMs: 10_000 }, WRITE)).toBeNull();
      expect(await takeMany(b, [ks[0]!], { ttlMs: 10_000 }, WRITE)).toBeNull();
      for (const k of ks) expect(await holders(a, k, READ), k).toBe(2);

      // A reader of the last key alone: the WRITE set takes the first two, and lets them go.
      await r1.release();
      await r2.release();
      const last = (await takeMany(b, [ks[2]!], { ttlMs: 10_000 }, READ))!;
      expect(await takeMany(a, ks, { ttlMs: 10_000 }, WRITE)).toBeNull();
      for (const [i, k] of ks.entries()) expect(await holders(b, k, READ), k).toBe(i === 2 ? 1 : 0);

      // A waiting WRITE set comes in when the reader leaves, and keeps readers out.
      const writing = takeMany(a, [...ks].reverse(), { ttlMs: 10_000, waitMs: 5_000 }, WRITE);
      await sleep(50);
      await last.release();
      const w = (await writing)!;
      expect(w.leases.map((l) => l.mode)).toEqual(["exclusive", "exclusive", "exclusive"]);
      expect(await takeMany(b, ks, { ttlMs: 10_000 }, READ)).toBeNull();
      expect(await takeMany(b, [ks[1]!], { ttlMs: 10_000 }, READ)).toBeNull();
      await w.release();
      for (const k of ks) expect(await holders(b, k, READ), k).toBe(0);
      expect(a.heldCount + b.heldCount).toBe(0);
    });

    it("semaphore sets: permits 2 admit two sets of the same keys and refuse a third, which takes none", async () => {
      const ks = keys(3);
      const spec = permitSpec(2);
      const s1 = (await takeMany(a, ks, { ttlMs: 10_000 }, spec))!;
      const s2 = (await takeMany(b, [...ks].reverse(), { ttlMs: 10_000 }, spec))!;
      expect(s1).not.toBeNull();
      expect(s2).not.toBeNull();
      expect([...s1.leases, ...s2.leases].every((l) => l.kind === "semaphore")).toBe(true);
      for (const k of ks) expect(await holders(a, k, spec), k).toBe(2);
      expect(await takeMany(a, ks, { ttlMs: 10_000 }, spec)).toBeNull();
      expect(await takeMany(b, [ks[2]!, ks[0]!], { ttlMs: 10_000 }, spec)).toBeNull();
      for (const k of ks) expect(await holders(a, k, spec), k).toBe(2);
      expect(a.heldCount).toBe(3);
      expect(b.heldCount).toBe(3);
      await s1.release();
      const s3 = (await takeMany(a, ks, { ttlMs: 10_000 }, spec))!;
      expect(s3).not.toBeNull();
      for (const k of ks) expect(await holders(b, k, spec), k).toBe(2);
      await s2.release();
      await s3.release();
      for (const k of ks) expect(await holders(b, k, spec), k).toBe(0);
      expect(a.heldCount + b.heldCount).toBe(0);
    });
  });
}
