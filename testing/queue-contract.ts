// The contract of the kinds stored with holders and a queue (kit/steps.ts): read/write locks,
// semaphores and the fair mutex, and that every kind keeps its own names. Every
// backend that runs backendContract() runs these cases against its real server unless its
// target says it has no queue kinds (ContractTarget.queueKinds = false).
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "./vitest.js";
import type { LockBackend } from "../kit/backend.js";
import type { AcquireRequest, KindSteps } from "../kit/steps.js";
import type { LockMode } from "../kit/common.js";
import { ELECTION } from "../kit/kinds.js";
import type { ContractTarget } from "./target.js";

const holder = { plugin: "contract", node: "node-a" };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Registers the queue-kinds cases for one backend. */
export function queueContract(name: string, target: ContractTarget): void {
  describe(`queue kinds contract: ${name}`, () => {
    let backend: LockBackend;
    let rw: KindSteps;
    let sem: KindSteps;
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const key = (): string => `shared-${run}-${++n}`;
    const req = (k: string, mode: LockMode, over: Partial<AcquireRequest> = {}): AcquireRequest => ({
      name: k,
      owner: randomUUID(),
      ttlMs: 10_000,
      holder,
      mode,
      limit: 0,
      queueMs: 0,
      ...over,
    });
    const read = (k: string, over: Partial<AcquireRequest> = {}): AcquireRequest => req(k, "shared", over);
    const write = (k: string, over: Partial<AcquireRequest> = {}): AcquireRequest => req(k, "exclusive", over);
    const permit = (k: string, limit: number, over: Partial<AcquireRequest> = {}): AcquireRequest => req(k, "shared", { limit, ...over });
    const fenceOf = (r: Awaited<ReturnType<KindSteps["acquire"]>>): number => {
      if (!r.acquired) throw new Error("expected the acquisition to succeed");
      return r.fence;
    };

    beforeAll(async () => {
      backend = await target.create();
      for (const kind of ["rw", "semaphore", "fair"] as const) {
        if (!backend.kinds.includes(kind)) throw new Error(`backend ${name} does not serve ${kind}: set queueKinds: false in its contract target`);
      }
      rw = backend.steps("rw");
      sem = backend.steps("semaphore");
    });
    afterAll(async () => {
      await backend?.close();
      await target.dispose?.();
    });

    it("lets readers share a key and keeps a writer out while any reads, and readers while it writes", async () => {
      const k = key();
      const r1 = read(k);
      const r2 = read(k);
      expect((await rw.acquire(r1)).acquired).toBe(true);
      expect((await rw.acquire(r2)).acquired).toBe(true);
      const w = await rw.acquire(write(k));
      expect(w.acquired).toBe(false);
      if (!w.acquired) expect(w.limit).toBeUndefined();
      expect(await rw.release(k, r1.owner)).toBe("released");
      expect((await rw.acquire(write(k))).acquired).toBe(false);
      expect(await rw.release(k, r2.owner)).toBe("released");
      const w2 = write(k);
      expect((await rw.acquire(w2)).acquired).toBe(true);
      expect((await rw.acquire(read(k))).acquired).toBe(false);
      expect((await rw.acquire(write(k))).acquired).toBe(false);
      expect(await rw.release(k, w2.owner)).toBe("released");
    });

    it("lets exactly one of many concurrent writers win", async () => {
      const k = key();
      const results = await Promise.all(Array.from({ length: 20 }, () => rw.acquire(write(k))));
      expect(results.filter((r) => r.acquired)).toHaveLength(1);
    });

    it("never grants a semaphore above its permits, also to many at once", async () => {
      const k = key();
      const results = await Promise.all(Array.from({ length: 30 }, () => sem.acquire(permit(k, 3))));
      expect(results.filter((r) => r.acquired)).toHaveLength(3);
      const s = await sem.status(k);
      expect(s?.holders).toHaveLength(3);
      expect(s?.limit).toBe(3);
      expect(s?.kind).toBe("semaphore");
    });

    it("refuses permits named differently from the live holders', changing nothing, and takes a new N once they are gone", async () => {
      const k = key();
      const first = permit(k, 2);
      expect((await sem.acquire(first)).acquired).toBe(true);
      const other = await sem.acquire(permit(k, 5));
      expect(other).toMatchObject({ acquired: false, limit: 2 });
      expect((await sem.status(k))?.holders).toHaveLength(1);
      await sem.release(k, first.owner);
      expect((await sem.acquire(permit(k, 5))).acquired).toBe(true);
      expect((await sem.status(k))?.limit).toBe(5);
    });

    it("prefers a queued writer: new readers stand behind it, and it takes the key when the readers leave", async () => {
      const k = key();
      const r1 = read(k);
      expect((await rw.acquire(r1)).acquired).toBe(true);
      const w = write(k, { queueMs: 10_000 });
      expect((await rw.acquire(w)).acquired).toBe(false);
      expect((await rw.status(k))?.queued).toBe(1);
      expect((await rw.acquire(read(k))).acquired).toBe(false);
      // A writer's try takes no place, and is refused while anyone is queued.
      await rw.release(k, r1.owner);
      expect((await rw.acquire(write(k))).acquired).toBe(false);
      expect((await rw.acquire(w)).acquired).toBe(true);
      expect((await rw.status(k))?.queued).toBe(0);
    });

    it("serves queued writers first come, first served", async () => {
      const k = key();
      const r = read(k);
      await rw.acquire(r);
      const w1 = write(k, { queueMs: 10_000 });
      const w2 = write(k, { queueMs: 10_000 });
      expect((await rw.acquire(w1)).acquired).toBe(false);
      expect((await rw.acquire(w2)).acquired).toBe(false);
      await rw.release(k, r.owner);
      expect((await rw.acquire(w2)).acquired).toBe(false);
      expect((await rw.acquire(w1)).acquired).toBe(true);
      await rw.release(k, w1.owner);
      expect((await rw.acquire(w2)).acquired).toBe(true);
    });

    it("forgets a queue place that lapsed, and one its writer left (waking the watchers)", async () => {
      const k = key();
      const r = read(k);
      await rw.acquire(r);
      // The place must outlast the next call (a loaded machine may take hundreds of ms between).
      expect((await rw.acquire(write(k, { queueMs: 1_000 }))).acquired).toBe(false);
      expect((await rw.acquire(read(k))).acquired).toBe(false);
      await sleep(1_200);
      expect((await rw.acquire(read(k))).acquired).toBe(true);

      const k2 = key();
      await rw.acquire(read(k2));
      const w = write(k2, { queueMs: 10_000 });
      await rw.acquire(w);
      let woken = 0;
      const watch = rw.watch(k2, () => void woken++);
      await watch.ready;
      await rw.leaveQueue(k2, w.owner);
      await waitFor(() => woken > 0);
      watch.close();
      expect((await rw.acquire(read(k2))).acquired).toBe(true);
    });

    it("wakes watchers on release and force-release, and tells the removed holders' owners", async () => {
      const k = key();
      const lost: string[] = [];
      backend.onLost?.((owner) => void lost.push(owner));
      const a = read(k);
      const b = read(k);
      await rw.acquire(a);
      await rw.acquire(b);
      let woken = 0;
      const watch = rw.watch(k, () => void woken++);
      await watch.ready;
      expect(await rw.release(k, a.owner)).toBe("released");
      await waitFor(() => woken > 0);
      const before = woken;
      expect(await rw.forceRelease(k)).toBe(1);
      await waitFor(() => woken > before);
      if (backend.onLost) await waitFor(() => lost.includes(b.owner));
      expect(await rw.status(k)).toBeNull();
      expect(await rw.forceRelease(k)).toBe(0);
      watch.close();
    });

    it("is not reentrant: an owner that holds the key is refused a second hold", async () => {
      const k = key();
      const a = read(k);
      expect((await rw.acquire(a)).acquired).toBe(true);
      expect((await rw.acquire({ ...a })).acquired).toBe(false);
      const p = permit(key(), 3);
      expect((await sem.acquire(p)).acquired).toBe(true);
      expect((await sem.acquire({ ...p })).acquired).toBe(false);
    });

    it("releases once, renews a live hold and refuses an ended one", async () => {
      const k = key();
      const a = write(k, { ttlMs: 5_000 });
      await rw.acquire(a);
      const [renewed, stranger] = await rw.renewMany([
        { name: k, owner: a.owner, ttlMs: 20_000 },
        { name: k, owner: "nobody", ttlMs: 1_000 },
      ]);
      expect(renewed?.ok).toBe(true);
      if (renewed?.ok) expect(renewed.expiresAtMs - Date.now()).toBeGreaterThan(10_000);
      expect(stranger).toEqual({ ok: false, reason: "not_found" });
      expect(await rw.release(k, a.owner)).toBe("released");
      expect(await rw.release(k, a.owner)).toBe("not_found");
      expect(await rw.renewMany([{ name: k, owner: a.owner, ttlMs: 1_000 }])).toEqual([{ ok: false, reason: "not_found" }]);
    });

    it("frees the place of a holder that crashed once its lease ends, writer or permit", async () => {
      const k = key();
      // The leases must outlast the calls between (a loaded machine may take hundreds of ms).
      expect((await rw.acquire(write(k, { ttlMs: 1_000 }))).acquired).toBe(true);
      const s = await sem.acquire(permit(k, 1, { ttlMs: 1_000 }));
      expect(s.acquired).toBe(true);
      const blocked = await rw.acquire(read(k));
      expect(blocked.acquired).toBe(false);
      if (!blocked.acquired && blocked.retryAfterMs !== undefined) expect(blocked.retryAfterMs).toBeLessThanOrEqual(1_000);
      await sleep(1_200);
      expect((await rw.acquire(read(k))).acquired).toBe(true);
      expect((await sem.acquire(permit(k, 1))).acquired).toBe(true);
    });

    it("reports holders in fence order on the server's clock, with their limit and the queue", async () => {
      expect(await rw.status(key())).toBeNull();
      const k = key();
      const a = read(k, { ttlMs: 5_000 });
      const b = read(k, { ttlMs: 7_000 });
      const fa = fenceOf(await rw.acquire(a));
      const fb = fenceOf(await rw.acquire(b));
      await rw.acquire(write(k, { queueMs: 10_000 }));
      const s = await rw.status(k);
      expect(s).toMatchObject({ name: k, kind: "rw", limit: 0, queued: 1 });
      expect(s!.holders.map((h) => [h.owner, h.mode, h.fence])).toEqual([
        [a.owner, "shared", fa],
        [b.owner, "shared", fb],
      ]);
      const h = s!.holders[1]!;
      expect(h.holder).toMatchObject(holder);
      expect(h.ttlMs).toBe(7_000);
      expect(h.expiresAtMs - h.acquiredAtMs).toBe(7_000);
      expect(h.ttlRemainingMs).toBeGreaterThan(5_000);
      expect(Math.abs(h.acquiredAtMs - Date.now())).toBeLessThan(5_000);
    });

    it("hands every acquisition a fence above every earlier one on the key, across modes, expiry and force-release", async () => {
      const k = key();
      const fences: number[] = [];
      const r1 = read(k);
      fences.push(fenceOf(await rw.acquire(r1)));
      fences.push(fenceOf(await rw.acquire(read(k))));
      await rw.forceRelease(k);
      const w = write(k, { ttlMs: 200 });
      fences.push(fenceOf(await rw.acquire(w)));
      await sleep(300);
      fences.push(fenceOf(await rw.acquire(read(k))));
      for (let i = 1; i < fences.length; i++) expect(fences[i]!).toBeGreaterThan(fences[i - 1]!);
      expect(fences.every((f) => Number.isSafeInteger(f) && f > 0)).toBe(true);
    });

    it("keeps a read/write lock, a semaphore, a fair mutex, a mutex and a leader of the same name apart", async () => {
      const k = key();
      const others = [backend.steps("fair"), backend.steps("mutex"), ...(backend.kinds.includes(ELECTION) ? [backend.steps(ELECTION)] : [])];
      expect((await rw.acquire(write(k))).acquired).toBe(true);
      expect((await sem.acquire(permit(k, 1))).acquired).toBe(true);
      for (const steps of others) expect((await steps.acquire(write(k))).acquired, steps.kind).toBe(true);
      for (const steps of [rw, sem, ...others]) {
        const record = await steps.status(k);
        expect(record?.holders, steps.kind).toHaveLength(1);
        expect(record?.kind, steps.kind).toBe(steps.kind);
        // Each kind lists its own name once, under its own name.
        const listed = (await steps.list({ prefix: k, limit: 10 })).records;
        expect(
          listed.map((r) => [r.name, r.kind]),
          steps.kind,
        ).toEqual([[k, steps.kind]]);
      }
    });

    it("serves a fair mutex from its own namespace: waiters first come, first served, a try refused while one queues", async () => {
      const fair = backend.steps("fair");
      const k = key();
      // A read/write lock's writer of the same name is another lock.
      expect((await rw.acquire(write(k))).acquired).toBe(true);
      const first = write(k);
      const f1 = fenceOf(await fair.acquire(first));
      const w1 = write(k, { queueMs: 10_000 });
      const w2 = write(k, { queueMs: 10_000 });
      expect((await fair.acquire(w1)).acquired).toBe(false);
      expect((await fair.acquire(w2)).acquired).toBe(false);
      expect(await fair.status(k)).toMatchObject({ kind: "fair", queued: 2 });
      expect(await fair.release(k, first.owner)).toBe("released");
      // Free, but two wait: a try (no place) and the second in line are refused.
      expect((await fair.acquire(write(k))).acquired).toBe(false);
      expect((await fair.acquire(w2)).acquired).toBe(false);
      const f2 = fenceOf(await fair.acquire(w1));
      expect(f2).toBeGreaterThan(f1);
      expect(await fair.release(k, w1.owner)).toBe("released");
      expect(fenceOf(await fair.acquire(w2))).toBeGreaterThan(f2);
      expect((await rw.status(k))?.holders).toHaveLength(1);
    });

    it("lists the keys with live holders by prefix, a page at a time", async () => {
      const prefix = `${key()}/`;
      for (let i = 0; i < 5; i++) await rw.acquire(read(`${prefix}${i}`));
      await rw.acquire(read(`${prefix}gone`, { ttlMs: 100 }));
      await sleep(200);
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let pages = 0; pages < 50; pages++) {
        const page = await rw.list({ prefix, limit: 2, ...(cursor !== undefined && { cursor }) });
        for (const r of page.records) {
          expect(r.holders.length).toBeGreaterThan(0);
          seen.push(r.name);
        }
        cursor = page.cursor;
        if (cursor === undefined) break;
      }
      expect(seen.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `${prefix}${i}`));
      expect((await sem.list({ prefix, limit: 10 })).records).toEqual([]);
    });

    it("keeps a read/write lock's rules under random interleavings (model check)", async () => {
      // Loaded here, not at the top: a backend that runs this contract needs fast-check (an
      // optional peer dependency of lockhost) only for this case.
      const { default: fc } = await import("fast-check");
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.record({
              op: fc.constantFrom("read", "write", "queue", "release", "leave"),
              who: fc.integer({ min: 0, max: 3 }),
            }),
            { minLength: 1, maxLength: 30 },
          ),
          async (steps) => {
            const k = key();
            const owners = [0, 1, 2, 3].map(() => randomUUID());
            const held = new Map<number, LockMode>();
            const queue: number[] = [];
            for (const { op, who } of steps) {
              const owner = owners[who]!;
              if (op === "release") {
                expect(await rw.release(k, owner)).toBe(held.delete(who) ? "released" : "not_found");
                continue;
              }
              if (op === "leave") {
                await rw.leaveQueue(k, owner);
                const at = queue.indexOf(who);
                if (at >= 0) queue.splice(at, 1);
                continue;
              }
              const mode: LockMode = op === "read" ? "shared" : "exclusive";
              const queueMs = op === "queue" ? 60_000 : 0;
              const r = await rw.acquire({ name: k, owner, ttlMs: 60_000, holder, mode, limit: 0, queueMs });
              // The model: what the rules of kit/steps.ts allow.
              const anyExclusive = [...held.values()].includes("exclusive");
              const allowed = held.has(who)
                ? false
                : mode === "shared"
                  ? !anyExclusive && queue.length === 0
                  : held.size === 0 && (queue.length === 0 || queue[0] === who);
              expect(r.acquired).toBe(allowed);
              if (r.acquired) {
                held.set(who, mode);
                const at = queue.indexOf(who);
                if (at >= 0) queue.splice(at, 1);
              } else if (queueMs > 0 && !held.has(who) && !queue.includes(who)) {
                queue.push(who);
              }
              const exclusive = [...held.values()].filter((m) => m === "exclusive").length;
              expect(exclusive === 0 || held.size === 1).toBe(true);
            }
            await rw.forceRelease(k);
            for (const o of owners) await rw.leaveQueue(k, o);
          },
        ),
        { numRuns: 25 },
      );
    }, 60_000);
  });
}

async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) throw new Error("timed out waiting");
    await sleep(5);
  }
}
