// The contract every LockBackend must meet. Each backend's test file calls
// backendContract() with a factory; the Redis and PostgreSQL backends run these same cases
// against real servers. Keys are unique per test, so a shared server needs no cleanup
// between tests beyond what each test releases.
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "./vitest.js";
import type { LockBackend, MutexAcquireRequest } from "../kit/backend.js";
import { singleView, type SingleView } from "./mutex-view.js";
import { ELECTION, LOCK_KINDS, QUEUE_KINDS } from "../kit/kinds.js";
import { handoffContract } from "./handoff-contract.js";
import { lifecycleContract } from "./lifecycle-contract.js";
import { queueContract } from "./queue-contract.js";
import { electionContract } from "./election-contract.js";
import { lockSetContract } from "./lock-set-contract.js";
import type { ContractTarget } from "./target.js";

export type { ContractTarget };

const holder = { plugin: "contract", node: "node-a" };
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Registers the contract cases for one backend: its atomic steps, then the lease lifecycle
 * that the LockService builds on them (testing/lifecycle-contract.ts).
 */
export function backendContract(name: string, target: ContractTarget): void {
  lifecycleContract(name, target);
  handoffContract(name, target);
  lockSetContract(name, target);
  if (target.queueKinds !== false) queueContract(name, target);
  if (target.election !== false) electionContract(name, target);
  describe(`LockBackend contract: ${name}`, () => {
    let backend: LockBackend;
    /** The mutex's steps (LockBackend.steps("mutex")), read one record per key. */
    let m: SingleView;
    const run = randomUUID().slice(0, 8);
    let n = 0;
    const key = (): string => `contract-${run}-${++n}`;
    const req = (k: string, over: Partial<MutexAcquireRequest> = {}): MutexAcquireRequest => ({
      name: k,
      owner: randomUUID(),
      ttlMs: 10_000,
      holder,
      ...over,
    });

    beforeAll(async () => {
      backend = await target.create();
      m = singleView(backend.steps("mutex"));
    });
    afterAll(async () => {
      await backend?.close();
      await target.dispose?.();
    });

    it("declares the kinds it serves, in table order, with steps for each; the target runs the contract of every one", () => {
      expect(backend.kinds.length).toBeGreaterThan(0);
      expect(backend.kinds).toContain("mutex");
      expect([...backend.kinds]).toEqual(LOCK_KINDS.filter((kind) => backend.kinds.includes(kind)));
      for (const kind of backend.kinds) {
        const steps = backend.steps(kind);
        expect(steps.kind, kind).toBe(kind);
        // Asked again, the same steps: the host asks once per kind, a backend may cache or not.
        expect(typeof steps.acquire, kind).toBe("function");
      }
      // A kind served but left out of the contract would go unchecked; one run but not served fails there.
      expect(target.queueKinds !== false, "queueKinds").toBe(QUEUE_KINDS.some((kind) => backend.kinds.includes(kind)));
      expect(target.election !== false, "election").toBe(backend.kinds.includes(ELECTION));
      if (backend.kinds.includes(ELECTION)) expect(typeof backend.steps(ELECTION).proclaim, "leader steps' proclaim").toBe("function");
    });

    it("acquires a free key with a fence and a lease on the server's clock", async () => {
      const r = await m.acquire(req(key(), { ttlMs: 5_000 }));
      expect(r.acquired).toBe(true);
      if (!r.acquired) return;
      expect(r.fence).toBeGreaterThan(0);
      expect(Number.isInteger(r.acquiredAtMs)).toBe(true);
      expect(Number.isInteger(r.expiresAtMs)).toBe(true);
      expect(r.expiresAtMs - r.acquiredAtMs).toBe(5_000);
      expect(Math.abs(r.acquiredAtMs - Date.now())).toBeLessThan(5_000);
    });

    it("reports a held key as not acquired (contention is not an error)", async () => {
      const k = key();
      expect((await m.acquire(req(k))).acquired).toBe(true);
      const contended = await m.acquire(req(k));
      expect(contended.acquired).toBe(false);
      // A backend may say when the holder's lease ends; if it does, that is within the TTL.
      if (!contended.acquired && contended.retryAfterMs !== undefined) {
        expect(contended.retryAfterMs).toBeGreaterThan(0);
        expect(contended.retryAfterMs).toBeLessThanOrEqual(req(k).ttlMs);
      }
      expect(Object.keys(contended).every((f) => f === "acquired" || f === "retryAfterMs")).toBe(true);
    });

    it("lets exactly one of many concurrent acquirers win", async () => {
      const k = key();
      const results = await Promise.all(Array.from({ length: 20 }, () => m.acquire(req(k))));
      expect(results.filter((r) => r.acquired)).toHaveLength(1);
    });

    it("refuses a key to a second acquisition under its holder's own owner: one lock, not two holders", async () => {
      // Locks are not reentrant on any backend: the host's custom owners (TryLockOptions.owner)
      // rely on this, so an owner reused by mistake is contended instead of a silent second holder.
      const k = key();
      const first = req(k);
      const taken = await m.acquire(first);
      expect(taken.acquired).toBe(true);
      const again = await m.acquire(req(k, { owner: first.owner }));
      expect(again.acquired).toBe(false);
      const s = await m.status(k);
      expect(s?.owner).toBe(first.owner);
      expect(taken.acquired && s?.fence).toBe(taken.acquired && taken.fence);
      expect(await m.release(k, first.owner)).toBe("released");
      expect(await m.status(k)).toBeNull();
      expect(await m.release(k, first.owner)).toBe("not_found");
    });

    it("releases only for the owner, and tells not-held from not-yours", async () => {
      const k = key();
      const a = req(k);
      await m.acquire(a);
      expect(await m.release(k, randomUUID())).toBe("mismatch");
      expect((await m.status(k))?.owner).toBe(a.owner);
      expect(await m.release(k, a.owner)).toBe("released");
      expect(await m.status(k)).toBeNull();
      expect(await m.release(k, a.owner)).toBe("not_found");
    });

    it("renews only for the owner and moves the expiry", async () => {
      const k = key();
      const a = req(k, { ttlMs: 1_000 });
      const got = await m.acquire(a);
      if (!got.acquired) throw new Error("not acquired");
      const renewed = await m.renew(k, a.owner, 20_000);
      expect(renewed.ok).toBe(true);
      if (renewed.ok) expect(renewed.expiresAtMs).toBeGreaterThan(got.expiresAtMs);
      expect(await m.renew(k, randomUUID(), 20_000)).toEqual({ ok: false, reason: "mismatch" });
      expect(await m.renew(key(), a.owner, 20_000)).toEqual({ ok: false, reason: "not_found" });
    });

    it("expires a lease at its TTL; the next holder gets a higher fence and the old owner can neither renew nor release", async () => {
      const k = key();
      const a = req(k, { ttlMs: 60 });
      const first = await m.acquire(a);
      await sleep(150);
      const b = req(k);
      const second = await m.acquire(b);
      expect(second.acquired).toBe(true);
      if (!first.acquired || !second.acquired) return;
      expect(second.fence).toBeGreaterThan(first.fence);
      expect((await m.renew(k, a.owner, 10_000)).ok).toBe(false);
      expect(await m.release(k, a.owner)).toBe("mismatch");
      expect((await m.status(k))?.owner).toBe(b.owner);
    });

    it("keeps fences strictly increasing per key across holders, releases and force-releases", async () => {
      const k = key();
      const fences: number[] = [];
      for (let i = 0; i < 10; i++) {
        const a = req(k);
        const r = await m.acquire(a);
        if (!r.acquired) throw new Error("not acquired");
        fences.push(r.fence);
        if (i % 2 === 0) await m.release(k, a.owner);
        else await m.forceRelease(k);
      }
      for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
    });

    it(
      target.fences === "clock"
        ? "gives a later acquisition of any key a higher fence (fences follow the server's clock)"
        : "keeps fence counters of different keys independent",
      async () => {
        const k1 = key();
        const k2 = key();
        const a = await m.acquire(req(k1));
        await m.acquire(req(k1 + "-other"));
        const b = await m.acquire(req(k2));
        if (!a.acquired || !b.acquired) throw new Error("not acquired");
        if (target.fences === "clock") expect(b.fence).toBeGreaterThan(a.fence);
        else expect(b.fence).toBe(a.fence);
      },
    );

    it("reports holder, owner, fence and times in status", async () => {
      const k = key();
      const a = req(k, { ttlMs: 8_000, holder: { plugin: "billing", node: "node-b" } });
      const r = await m.acquire(a);
      if (!r.acquired) throw new Error("not acquired");
      const s = await m.status(k);
      expect(s).toMatchObject({
        name: k,
        owner: a.owner,
        fence: r.fence,
        holder: { plugin: "billing", node: "node-b" },
        acquiredAtMs: r.acquiredAtMs,
        expiresAtMs: r.expiresAtMs,
        ttlMs: 8_000,
      });
      expect(s!.ttlRemainingMs).toBeGreaterThan(0);
      expect(s!.ttlRemainingMs).toBeLessThanOrEqual(8_000);
      expect(await m.status(key())).toBeNull();
    });

    it("force-releases whoever holds a key, and says whether there was one", async () => {
      const k = key();
      await m.acquire(req(k));
      expect(await m.forceRelease(k)).toBe(true);
      expect(await m.status(k)).toBeNull();
      expect(await m.forceRelease(k)).toBe(false);
      expect((await m.acquire(req(k))).acquired).toBe(true);
    });

    it("lists held locks page by page, filtered by a name prefix, live ones only", async () => {
      const base = `${key()}/list/`;
      const names = [`${base}a`, `${base}b{x}`, `${base}c%`, `${base}d_`, `${base}e\\`, `${base}f`];
      const owners = new Map<string, string>();
      for (const k of names) {
        const r = req(k);
        owners.set(k, r.owner);
        expect((await m.acquire(r)).acquired).toBe(true);
      }
      // Released, expired and unrelated locks are not listed.
      expect(await m.release(names[5]!, owners.get(names[5]!)!)).toBe("released");
      expect((await m.acquire(req(`${base}short`, { ttlMs: 30 }))).acquired).toBe(true);
      expect((await m.acquire(req(`${key()}/other`))).acquired).toBe(true);
      await sleep(80);
      const seen: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await m.list({ prefix: base, limit: 2, ...(cursor !== undefined && { cursor }) });
        expect(page.locks.length).toBeLessThanOrEqual(2);
        for (const lock of page.locks) {
          expect(lock.owner).toBe(owners.get(lock.name));
          expect(lock.holder).toMatchObject(holder);
          expect(lock.fence).toBeGreaterThan(0);
          expect(lock.ttlRemainingMs).toBeGreaterThan(0);
          seen.push(lock.name);
        }
        cursor = page.cursor;
        expect(++pages).toBeLessThan(1_000);
      } while (cursor !== undefined);
      expect([...new Set(seen)].sort()).toEqual(names.slice(0, 5).sort());
      // A prefix of special characters is matched literally, not as a pattern.
      expect((await m.list({ prefix: `${base}c%`, limit: 100 })).locks.map((l) => l.name)).toEqual([`${base}c%`]);
      expect((await m.list({ prefix: `${base}_`, limit: 100 })).locks).toEqual([]);
      for (const k of names.slice(0, 5)) await m.release(k, owners.get(k)!);
    });

    it("keeps names apart that differ only in braces, percent signs and separators", async () => {
      const base = key();
      const names = ["}", "{", "%", "%7D", "{}", "}{", "a{b}c", "a{b}d", ":", "%25", ""].map((s) => `${base}${s}`);
      const owners = names.map(() => randomUUID());
      for (const [i, k] of names.entries()) expect((await m.acquire(req(k, { owner: owners[i]! }))).acquired, k).toBe(true);
      for (const [i, k] of names.entries()) expect((await m.status(k))?.owner, k).toBe(owners[i]);
      for (const [i, k] of names.entries()) expect(await m.release(k, owners[i]!), k).toBe("released");
    });

    it("shows a renewed lease in status, with the TTL of the latest renewal", async () => {
      const k = key();
      const a = req(k, { ttlMs: 2_000 });
      const acquired = await m.acquire(a);
      if (!acquired.acquired) throw new Error("not acquired");
      expect((await m.status(k))?.ttlMs).toBe(2_000);
      await sleep(20); // so that expiresAt - acquiredAt after the renewal exceeds its TTL
      const renewed = await m.renew(k, a.owner, 30_000);
      if (!renewed.ok) throw new Error("not renewed");
      const s = await m.status(k);
      expect(s?.expiresAtMs).toBe(renewed.expiresAtMs);
      expect(s!.ttlRemainingMs).toBeGreaterThan(2_000);
      // Not expiresAt - acquiredAt, which also counts the time between acquire and renew.
      expect(s?.ttlMs).toBe(30_000);
      expect(s?.acquiredAtMs).toBe(acquired.acquiredAtMs);
      // A shorter TTL in a batch renewal is recorded as well.
      const [batch] = await m.renewMany([{ name: k, owner: a.owner, ttlMs: 5_000 }]);
      expect(batch?.ok).toBe(true);
      const after = await m.status(k);
      expect(after?.ttlMs).toBe(5_000);
      expect(after!.ttlRemainingMs).toBeLessThanOrEqual(5_000);
      await m.release(k, a.owner);
    });

    it("treats keys as opaque UTF-8 strings", async () => {
      const k = `${key()}:ключ/🔒 *?[x]`;
      const a = req(k);
      expect((await m.acquire(a)).acquired).toBe(true);
      expect((await m.status(k))?.owner).toBe(a.owner);
      expect(await m.release(k, a.owner)).toBe("released");
    });
  });
}
