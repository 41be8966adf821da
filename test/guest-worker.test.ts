// What only the worker runtime does: a time limit per call and per start (a guest is stopped
// mid-call and restarted), a wait cut short to leave its call time to return, and surviving a
// guest thread that dies. The behaviour both runtimes share is in guest-runtime.test.ts.
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { LockService } from "../host/locking/service.js";
import { currentWorker, type WorkerGuest } from "../host/runtime/worker/worker-instance.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { startWorkerGuest } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";
import { guestTraces } from "./support/log.js";

const fx = guestFixture();

const held = async (name: string): Promise<boolean> => (await fx.locks.status({ name })).held;
/** The guest's traced lines, without the "guest: " prefix. */
const traces = (): string[] => guestTraces(fx.log);

/** A worker guest closed after the test. */
async function guest(wasm: string, callTimeoutMs: number): Promise<WorkerGuest> {
  return fx.track(await startWorkerGuest(wasm, fx.locks, fx.log.logger, { callTimeoutMs }));
}

describe("time limits", () => {
  it("stops a call at its time limit, releases its locks and restarts the guest", async () => {
    const a = await guest("locker", 300);
    await a.call("hold", [15, 60_000, S.FLAG_KEEP]);
    const started = performance.now();
    await expect(a.call("holdSpin", [16, 60_000])).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(await held("test:k15")).toBe(false);
    expect(await held("test:k16")).toBe(false);
    expect(await a.call("add", [1, 1])).toBe(2);
  });

  it("releases locks when the guest's worker dies, and restarts it", async () => {
    const a = await guest("locker", 20_000);
    const spinning = a.call("holdSpin", [17, 60_000]);
    while (!(await held("test:k17"))) await new Promise((r) => setTimeout(r, 5));
    await a[currentWorker]().terminate(); // dies as an out-of-memory or native crash would
    await expect(spinning).rejects.toMatchObject({ code: "GUEST_CRASHED" });
    expect(await held("test:k17")).toBe(false);
    expect(await a.call("add", [2, 2])).toBe(4);
  });

  it("gives up on a guest whose start function never returns, within its time limit", async () => {
    const started = performance.now();
    await expect(startWorkerGuest("startloop", fx.locks, fx.log.logger, { callTimeoutMs: 300 })).rejects.toMatchObject({
      code: "GUEST_TIMEOUT",
      message: expect.stringContaining("did not finish instantiating within 300 ms"),
    });
    expect(performance.now() - started).toBeLessThan(3_000);
  });

  it("fails close() cleanly for calls queued behind a restart", async () => {
    for (let i = 0; i < 10; i++) {
      const a = await startWorkerGuest("locker", fx.locks, fx.log.logger, { callTimeoutMs: 100 });
      const spin = a.call("holdSpin", [32, 60_000]);
      const queued = a.call("add", [1, 2]);
      await expect(spin).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
      await a.close();
      await expect(queued).rejects.toMatchObject({ code: "CLOSED" });
    }
  });

  it("logs no error when close() cuts short the restart after a time limit (a shutdown, not a failure)", async () => {
    for (let i = 0; i < 5; i++) {
      const a = await startWorkerGuest("locker", fx.locks, fx.log.logger, { callTimeoutMs: 100 });
      await expect(a.call("holdSpin", [33, 60_000])).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
      // The restart is under way now (its worker is still loading): close ends it.
      await a.close();
    }
    // Let the cut-short starts settle, so a late line would be seen.
    await new Promise((r) => setTimeout(r, 100));
    expect(fx.log.lines.filter((l) => l.level >= 50 && l.msg.startsWith("guest restart"))).toEqual([]);
    expect(fx.log.messages().filter((m) => m === "guest restart cut short: the plugin was closed").length).toBeGreaterThan(0);
  });

  it("releases a lock whose acquisition completes after its call timed out", async () => {
    const { backend, inner, faults } = faultyBackend();
    const service = new LockService(backend, { node: "n" });
    const a = await startWorkerGuest("locker", service, fx.log.logger, { callTimeoutMs: 100 });
    faults.acquireDelayMs = 300; // the worker is blocked in Atomics.wait when the time limit hits
    await expect(a.call("hold", [41, 60_000, S.FLAG_KEEP])).rejects.toMatchObject({ code: "GUEST_TIMEOUT" });
    await new Promise((r) => setTimeout(r, 400));
    expect(inner.size).toBe(0);
    expect(service.heldCount).toBe(0);
    faults.acquireDelayMs = 0;
    expect(await a.call("hold", [41, 60_000, 0])).toBeGreaterThan(0);
    await a.close();
    await service.close();
  });

  it("cuts a wait longer than the call's time limit, so the guest gets -TIMEOUT instead of a restart", async () => {
    const holder = await guest("lifecycle", 5_000);
    const waiter = await guest("lifecycle", 1_000);
    const kept = (await waiter.call("hold", [14, 60_000, S.FLAG_KEEP])) as number;
    const h = (await holder.call("hold", [13, 60_000, S.FLAG_KEEP])) as number;
    const started = performance.now();
    expect(await waiter.call("acquireKey", [13, 10_000, 60_000, 0])).toBe(-S.TIMEOUT);
    // Cut, not waited for (60 s); the kept lock below shows it was no restart either.
    expect(performance.now() - started).toBeLessThan(10_000);
    expect(traces().some((m) => m.includes("waitMs 60000 was cut to") && m.includes("time limit of 1000 ms"))).toBe(true);
    expect(await held("test:k14")).toBe(true); // no restart: its kept lock survived
    expect(await waiter.call("release", [kept])).toBe(S.OK);
    expect(await holder.call("release", [h])).toBe(S.OK);
  });
});
