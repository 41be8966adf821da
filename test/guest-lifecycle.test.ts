// End-to-end tests of the lease lifecycle through the guest ABI, with real AssemblyScript
// guests on the memory backend, in every runtime this Node has (GUEST_RUNTIMES): keepalive, waiting acquire (and the host
// staying responsive meanwhile), lock.state, lockhost_on_lost, restore by owner token, and
// the schedule's lock as handle 0.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import type { Lease } from "../host/locking/lease.js";
import { LockService } from "../host/locking/service.js";
import type { Runtime } from "../abi/ops.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest, type TestGuestOptions } from "./support/guest.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { captureLogger, guestTraces } from "./support/log.js";
import { sleep } from "./support/until.js";

let backend: MemoryBackend;
let locks: LockService;
let log: ReturnType<typeof captureLogger>;
const guests: GuestInstance[] = [];
/** The runtime of the suite running now. */
let runtime: Runtime;
const services: LockService[] = [];

async function guest(options: TestGuestOptions = {}): Promise<GuestInstance> {
  const g = await startGuest("lifecycle", locks, log.logger, { runtime, ...options });
  guests.push(g);
  return g;
}

const held = async (name: string): Promise<boolean> => (await locks.status({ name })).held;

/** Polls `check` until it holds (generous: the machine is shared). */
async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!(await check())) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** The guest's traced lines, without the "guest: " prefix. */
const traces = (): string[] => guestTraces(log);

/** Feeds an owner token to the guest, one character per call. */
async function feedOwner(g: GuestInstance, owner: string): Promise<void> {
  await g.call("ownerClear");
  for (const c of owner) await g.call("ownerPush", [c.charCodeAt(0)]);
}

beforeEach(() => {
  log = captureLogger();
  backend = new MemoryBackend();
  locks = new LockService(backend, { node: "node-a" });
});

afterEach(async () => {
  await Promise.all(guests.splice(0).map((g) => g.close()));
  expect(locks.heldCount).toBe(0);
  for (const s of services.splice(0)) await s.close({ closeBackend: false });
  await locks.close();
});

describe.each(GUEST_RUNTIMES)("%s runtime", (r) => {
  beforeEach(() => {
    runtime = r;
  });

  describe("keepalive", () => {
    it("keeps a KEEP | KEEPALIVE lock held across calls well past its TTL, and lets a plain kept one expire", async () => {
      const a = await guest();
      const alive = (await a.call("hold", [1, 400, S.FLAG_KEEP | S.FLAG_KEEPALIVE])) as number;
      const plain = (await a.call("hold", [2, 400, S.FLAG_KEEP])) as number;
      expect(alive).toBeGreaterThan(0);
      expect(plain).toBeGreaterThan(0);
      for (let i = 0; i < 4; i++) {
        await sleep(300);
        expect(await a.call("add", [i, 1])).toBe(i + 1); // calls come and go; the lock stays
      }
      // 1.2 s = 3 TTLs later:
      expect(await a.call("state", [alive])).toBe(S.STATE_HELD);
      expect(await held("test:k1")).toBe(true);
      expect(await a.call("state", [plain])).toBe(S.STATE_LOST);
      expect(await held("test:k2")).toBe(false);
      expect(await a.call("release", [alive])).toBe(S.OK);
      expect(await a.call("state", [alive])).toBe(S.STATE_RELEASED);
      expect(await a.call("release", [plain])).toBe(-S.LOST);
      expect(await a.call("state", [plain])).toBe(S.STATE_LOST);
    });
  });

  describe("waiting acquire", () => {
    it("wakes a guest blocked in lock.acquire as soon as another guest releases, while the host serves others", async () => {
      const holder = await guest();
      const waiter = await guest({ callTimeoutMs: 60_000 });
      const other = await guest();
      const h = (await holder.call("hold", [10, 60_000, S.FLAG_KEEP])) as number;
      expect(h).toBeGreaterThan(0);
      const started = performance.now();
      const waiting = waiter.call("acquireKey", [10, 10_000, 30_000, S.FLAG_KEEP]);
      let settled = false;
      void waiting.finally(() => void (settled = true));
      await until(() => locks.stats().waiters === 1, "the waiter to queue");
      // The main thread stays free: other guests' calls and timers run while the waiter blocks.
      for (let i = 0; i < 20; i++) expect(await other.call("add", [i, i])).toBe(2 * i);
      const t0 = performance.now();
      await sleep(10);
      // A blocked main thread would hold this timer until the wait ends (30 s): 5 s is margin.
      expect(performance.now() - t0).toBeLessThan(5_000);
      expect(settled).toBe(false);
      expect(await holder.call("release", [h])).toBe(S.OK);
      const got = (await waiting) as number;
      expect(got).toBeGreaterThan(0);
      expect(performance.now() - started).toBeLessThan(10_000); // far less than wait_ms (30 s)
      expect(await waiter.call("state", [got])).toBe(S.STATE_HELD);
      expect(await waiter.call("release", [got])).toBe(S.OK);
    });

    it("wakes it when the host releases, through the SDK's acquire", async () => {
      const waiter = await guest({ callTimeoutMs: 60_000 });
      const lease = (await locks.tryLock("k11", { ttlMs: 60_000, scope: { plugin: "test" } }))!;
      const waiting = waiter.call("acquireSdk", [11, 10_000, 30_000, 0]);
      await until(() => locks.stats().waiters === 1, "the waiter to queue");
      const released = performance.now();
      await locks.release(lease);
      expect(await waiting).toBeGreaterThan(0); // acquired, and isHeld() said so
      expect(performance.now() - released).toBeLessThan(5_000);
      expect(await held("test:k11")).toBe(false); // not kept: auto-released when the call returned
    });

    it("returns -TIMEOUT when the key stays held, and last_error says how long it waited", async () => {
      const holder = await guest();
      const waiter = await guest();
      const h = (await holder.call("hold", [12, 60_000, S.FLAG_KEEP])) as number;
      const started = performance.now();
      expect(await waiter.call("acquireKey", [12, 10_000, 300, 0])).toBe(-S.TIMEOUT);
      expect(performance.now() - started).toBeGreaterThanOrEqual(290);
      const line = traces().find((m) => m.startsWith(`error ${S.TIMEOUT}: `))!;
      expect(line).toMatch(/lock test:k12 is still held by someone else after waiting \d+ ms \(waitMs 300\)/);
      expect(Number(/after waiting (\d+) ms/.exec(line)![1])).toBeGreaterThanOrEqual(290);
      // wait_ms 0: one attempt, -TIMEOUT at once (never 0, unlike try).
      expect(await waiter.call("acquireKey", [12, 10_000, 0, 0])).toBe(-S.TIMEOUT);
      // The SDK reports it as contended and timed out, not as an error.
      expect(await waiter.call("acquireSdk", [12, 10_000, 50, 0])).toBe(-1000);
      expect(traces().some((m) => m.startsWith("timeout lock test:k12 is still held"))).toBe(true);
      expect(await holder.call("release", [h])).toBe(S.OK);
    });

    it("stops waiting when the waiting guest is closed, and takes nothing for it", async () => {
      const holder = await guest();
      const waiter = await startGuest("lifecycle", locks, log.logger, { runtime, callTimeoutMs: 60_000 });
      const h = (await holder.call("hold", [15, 60_000, S.FLAG_KEEP])) as number;
      const waiting = waiter.call("acquireKey", [15, 10_000, 30_000, S.FLAG_KEEP]);
      await until(() => locks.stats().waiters === 1, "the waiter to queue");
      await waiter.close();
      await expect(waiting).rejects.toMatchObject({ code: "CLOSED" });
      await until(() => locks.stats().waiters === 0, "the wait to end");
      expect(await holder.call("release", [h])).toBe(S.OK);
      await sleep(50);
      expect(await held("test:k15")).toBe(false);
    });
  });

  describe("lock.state and lost locks", () => {
    it("reports LOST after a force-release, calls lockhost_on_lost with the handle, and release is -LOST without deleting the new holder's lock", async () => {
      const a = await guest();
      const h = (await a.call("hold", [20, 300, S.FLAG_KEEP | S.FLAG_KEEPALIVE])) as number;
      expect(await a.call("state", [h])).toBe(S.STATE_HELD);
      expect(await locks.forceRelease({ name: "test:k20" })).toBe(1);
      // Someone else takes the key at once; the guest's next renewal finds it changed hands.
      const other = (await locks.tryLock("k20", { ttlMs: 60_000, scope: { plugin: "other-host" } }))!;
      const theirs = (await locks.tryLock("k20", { ttlMs: 60_000, scope: { plugin: "test" } }))!;
      expect(other).not.toBeNull();
      expect(theirs).not.toBeNull();
      await until(async () => (await a.call("lostCount")) === 1, "lockhost_on_lost");
      expect(await a.call("lostAt", [0])).toBe(h);
      expect(traces()).toContain(`lost ${h} state ${S.STATE_LOST}`);
      expect(await a.call("state", [h])).toBe(S.STATE_LOST);
      expect(await a.call("renew", [h, 0])).toBe(-S.LOST);
      expect(await a.call("release", [h])).toBe(-S.LOST);
      expect(await a.call("state", [h])).toBe(S.STATE_LOST); // still answers after the failed release
      expect(await held("test:k20")).toBe(true); // the new holder's lock was not touched
      expect(await locks.status({ name: "test:k20" }, { owners: true })).toMatchObject({ holders: [{ owner: theirs.owner }] });
      await locks.release(theirs);
      await locks.release(other);
      expect(await a.call("lostCount")).toBe(1); // its own release did not count as news
    });

    it("delivers a loss that happens during a call after that call returns, before the next queued call", async () => {
      const a = await guest({ callTimeoutMs: 20_000 });
      const h = (await a.call("hold", [21, 300, S.FLAG_KEEP | S.FLAG_KEEPALIVE])) as number;
      const busy = a.call("busy", [h, 1_500]);
      const next = a.call("mark", [1]);
      await sleep(100);
      await locks.forceRelease({ name: "test:k21" });
      expect(await busy).toBe(S.STATE_LOST); // the guest could see it by polling
      await next;
      const order = traces().filter((m) => m.startsWith("lost ") || m.startsWith("mark "));
      expect(order).toEqual([`lost ${h} state ${S.STATE_LOST}`, "mark 1"]);
      expect(await a.call("release", [h])).toBe(-S.LOST);
    });

    it("tells the guest of a lock lost during the call that did not keep it; its handle then reads LOST", async () => {
      const a = await guest({ callTimeoutMs: 20_000 });
      const normal = (await a.call("hold", [22, 300, S.FLAG_KEEPALIVE])) as number; // auto-released on return
      expect(await a.call("state", [normal])).toBe(S.STATE_RELEASED);
      expect(await a.call("lostCount")).toBe(0); // a normal auto-release is not a loss
      const running = a.call("holdBusy", [22, 300, S.FLAG_KEEPALIVE, 1_500]);
      await until(() => held("test:k22"), "the lock");
      await locks.forceRelease({ name: "test:k22" });
      const h = (await running) as number;
      expect(h).toBeGreaterThan(0);
      await until(async () => (await a.call("lostCount")) === 1, "lockhost_on_lost");
      expect(await a.call("lostAt", [0])).toBe(h);
      expect(await a.call("state", [h])).toBe(S.STATE_LOST);
    });

    it("answers RELEASED for a released handle, and INVALID_HANDLE for one never issued", async () => {
      const a = await guest();
      const h = (await a.call("hold", [23, 10_000, S.FLAG_KEEP])) as number;
      expect(await a.call("release", [h])).toBe(S.OK);
      expect(await a.call("state", [h])).toBe(S.STATE_RELEASED);
      expect(await a.call("release", [h])).toBe(-S.ALREADY_RELEASED);
      expect(await a.call("state", [h])).toBe(S.STATE_RELEASED);
      expect(await a.call("state", [0x12345])).toBe(-S.INVALID_HANDLE);
      expect(await a.call("state", [-3])).toBe(-S.INVALID_HANDLE);
      expect(await a.call("state", [0])).toBe(-S.INVALID_HANDLE); // handle 0 only in a scheduled call
      expect(traces()).toContain(`error ${S.INVALID_HANDLE}: handle 0 names the schedule's lock, and only during a scheduled call`);
    });

    it("survives a lockhost_on_lost that traps: the guest restarts and its locks are released", async () => {
      const a = await guest();
      const kept = (await a.call("hold", [24, 60_000, S.FLAG_KEEP])) as number;
      const h = (await a.call("hold", [25, 300, S.FLAG_KEEP | S.FLAG_KEEPALIVE])) as number;
      expect(kept).toBeGreaterThan(0);
      await a.call("trapNextLost");
      await locks.forceRelease({ name: "test:k25" });
      await until(() => log.messages().some((m) => m.startsWith("guest trapped:")), "the callback's trap");
      await until(async () => !(await held("test:k24")), "the restart to release every lock");
      expect(await a.call("add", [2, 3])).toBe(5); // a fresh instance
      expect(await a.call("lostCount")).toBe(0);
      // The old instance's handles are never reissued; they answer how their locks ended.
      expect(await a.call("state", [h])).toBe(S.STATE_LOST);
      expect(await a.call("state", [kept])).toBe(S.STATE_RELEASED);
      expect(await a.call("release", [kept])).toBe(-S.ALREADY_RELEASED);
    });
  });

  describe("restore by owner token", () => {
    /** Another host process sharing the backend. */
    function otherHost(): LockService {
      const s = new LockService(backend, { node: "node-b" });
      services.push(s);
      return s;
    }

    it("gives a handle for a lock taken elsewhere, given its owner token, and the guest can release it", async () => {
      const b = otherHost();
      const theirs = (await b.tryLock("k30", { ttlMs: 60_000, scope: { plugin: "test" } }))!;
      const a = await guest();
      await feedOwner(a, theirs.owner);
      const h = (await a.call("restoreKey", [30, 0, S.FLAG_KEEP])) as number;
      expect(h).toBeGreaterThan(0);
      expect(await a.call("state", [h])).toBe(S.STATE_HELD);
      expect(await a.call("renew", [h, 0])).toBe(S.OK); // ttl 0: the lock's own lease length
      const status = await locks.status({ name: "test:k30" });
      expect(status.held && status.holders[0]!.ttlRemainingMs).toBeGreaterThan(50_000);
      expect(await a.call("release", [h])).toBe(S.OK);
      expect(await held("test:k30")).toBe(false);
      // This host released that owner's lock: restoring it again says so.
      expect(await a.call("restoreKey", [30, 0, 0])).toBe(-S.ALREADY_RELEASED);
    });

    it("refuses a wrong owner token and a free key, and changes nothing", async () => {
      const b = otherHost();
      const theirs = (await b.tryLock("k31", { ttlMs: 60_000, scope: { plugin: "test" } }))!;
      const a = await guest();
      await feedOwner(a, "00000000-0000-4000-8000-000000000000");
      expect(await a.call("restoreKey", [31, 0, 0])).toBe(-S.OWNERSHIP_MISMATCH);
      expect(await a.call("restoreKey", [32, 0, 0])).toBe(-S.NOT_FOUND);
      expect(traces().some((m) => m.startsWith(`error ${S.NOT_FOUND}: no lock is held under test:k32`))).toBe(true);
      expect(await locks.status({ name: "test:k31" }, { owners: true })).toMatchObject({ holders: [{ owner: theirs.owner }] });
      await b.release(theirs);
    });

    it("restores with KEEPALIVE, so the lock outlives its TTL under this host's renewals", async () => {
      const b = otherHost();
      // The guest first: starting a worker can take longer than the lock's short TTL on a busy machine.
      const a = await guest();
      const theirs = (await b.tryLock("k33", { ttlMs: 400, scope: { plugin: "test" } }))!;
      await feedOwner(a, theirs.owner);
      const h = (await a.call("restoreKey", [33, 0, S.FLAG_KEEP | S.FLAG_KEEPALIVE])) as number;
      expect(h).toBeGreaterThan(0);
      await sleep(1_200);
      expect(await a.call("state", [h])).toBe(S.STATE_HELD);
      expect(await held("test:k33")).toBe(true);
      expect(await a.call("release", [h])).toBe(S.OK);
    });

    it("gives the same handle back for a lock the guest already holds", async () => {
      const a = await guest();
      const h = (await a.call("hold", [34, 60_000, S.FLAG_KEEP])) as number;
      const status = await locks.status({ name: "test:k34" }, { owners: true });
      expect(status.held).toBe(true);
      await feedOwner(a, status.holders[0]?.owner ?? "");
      expect(await a.call("restoreKey", [34, 0, 0])).toBe(h);
      expect(await held("test:k34")).toBe(true); // the restore without KEEP did not make it auto-release
      expect(await a.call("release", [h])).toBe(S.OK);
    });
  });

  describe("bad input", () => {
    const cases: [string, number[], number, string][] = [
      ["acquireKey", [40, 1_000, -1, 0], S.INVALID_ARGUMENT, `waitMs must be an integer number of milliseconds from 0 to ${S.MAX_WAIT_MS}`],
      ["acquireKey", [40, 1_000, S.MAX_WAIT_MS + 1, 0], S.INVALID_ARGUMENT, `got ${S.MAX_WAIT_MS + 1}`],
      ["acquireKey", [40, 0, 100, 0], S.INVALID_ARGUMENT, "ttlMs must be > 0, got 0"],
      ["acquireKey", [40, 1_000, 100, 0x100], S.INVALID_ARGUMENT, "flags 0x100 of acquire has unknown bits (allowed: 0x47)"],
      ["acquireBadPointer", [], S.INVALID_MEMORY, "key (ptr 2147483632, len 8) lies outside guest memory"],
      ["hold", [40, 1_000, 0x8], S.INVALID_ARGUMENT, "flags 0x8 of try has unknown bits (allowed: 0x47)"],
      ["restoreBadOwnerPtr", [40], S.INVALID_MEMORY, "owner (ptr 2147483632, len 36) lies outside guest memory"],
      ["restoreEmptyOwner", [40], S.INVALID_ARGUMENT, "owner must not be empty"],
      ["restoreLongOwner", [40], S.INVALID_ARGUMENT, `owner is ${S.MAX_KEY_BYTES + 1} bytes of UTF-8; the maximum is ${S.MAX_KEY_BYTES}`],
      ["state", [0x54321], S.INVALID_HANDLE, "was not issued to this guest, or is stale"],
    ];

    it.each(cases)("%s(%j) returns -%i with a message naming the fault", async (name, args, code, message) => {
      const a = await guest();
      expect(await a.call(name, args)).toBe(-code);
      expect(
        traces()
          .filter((m) => m.startsWith(`error ${code}: `))
          .at(-1),
      ).toContain(message);
      expect(locks.heldCount).toBe(0);
      expect(await a.call("add", [1, 1])).toBe(2);
    });

    it("refuses restore with a bad TTL or unknown flags", async () => {
      const a = await guest();
      await feedOwner(a, "00000000-0000-4000-8000-000000000000");
      expect(await a.call("restoreKey", [41, -1, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(await a.call("restoreKey", [41, S.MAX_TTL_MS + 1, 0])).toBe(-S.INVALID_ARGUMENT);
      expect(await a.call("restoreKey", [41, 0, 0x10])).toBe(-S.INVALID_ARGUMENT);
      expect(traces().at(-1)).toContain("flags 0x10 of restore has unknown bits");
    });
  });

  describe("the schedule's lock as handle 0", () => {
    async function scheduleLease(ttlMs: number): Promise<Lease> {
      return (await locks.tryLock("sched", { ttlMs, scope: { plugin: "lockhost" }, plugin: "test", keepalive: true }))!;
    }

    it("answers lock.state(0) during a scheduled call, and calls lockhost_on_lost(0) when it is lost", async () => {
      const a = await guest({ callTimeoutMs: 20_000 });
      const lease = await scheduleLease(300);
      const ran = a.call("job", [1_200], { scheduleLease: lease });
      await until(() => traces().includes(`job start state ${S.STATE_HELD}`), "the job to start");
      await locks.forceRelease({ name: "lockhost:sched" });
      expect(await ran).toBe(S.STATE_LOST);
      await until(async () => (await a.call("lostCount")) === 1, "lockhost_on_lost(0)");
      expect(await a.call("lostAt", [0])).toBe(0);
      expect(traces()).toContain(`lost 0 state ${S.STATE_LOST}`);
      expect(await a.call("state", [0])).toBe(-S.INVALID_HANDLE); // outside the scheduled call
    });

    it("says nothing when the schedule's lock stays held", async () => {
      const a = await guest();
      const lease = await scheduleLease(60_000);
      expect(await a.call("job", [10], { scheduleLease: lease })).toBe(S.STATE_HELD);
      await locks.release(lease);
      await sleep(50);
      expect(await a.call("lostCount")).toBe(0);
    });
  });

  describe("auto-release that fails (review finding)", () => {
    it("does not keep renewing a keepalive lock the guest let go of: it ends at its TTL", async () => {
      const { backend: faulty, faults } = faultyBackend(backend);
      const service = new LockService(faulty, { node: "node-f" });
      services.push(service);
      const g = await startGuest("lifecycle", service, log.logger, { runtime });
      guests.push(g);
      faults.failReleases = 1; // the auto-release when the call returns
      const h = (await g.call("hold", [1, 200, S.FLAG_KEEPALIVE])) as number;
      expect(h).toBeGreaterThan(0);
      expect(log.messages()).toContain("auto-release failed; the lock will expire at its TTL");
      await until(async () => !(await service.status({ name: "test:k1" })).held, "the lock to end at its TTL", 3_000);
      await sleep(300);
      expect((await service.status({ name: "test:k1" })).held).toBe(false);
      expect(service.stats().keepalive).toBe(0);
      expect(g.heldLocks).toBe(0);
    });
  });
});
