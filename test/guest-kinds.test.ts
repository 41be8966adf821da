// Read/write locks and semaphores through the guest ABI (issue 14), with real AssemblyScript
// guests (test/guests/kinds.ts) on the memory backend, in every runtime this Node has: two
// guest instances share a plugin's keys as two callers would.
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { guestFixture } from "./support/guest-fixture.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { sleep } from "./support/until.js";
import { guestTraces } from "./support/log.js";

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime) => {
  const fx = guestFixture();
  const guest = async (): Promise<GuestInstance> => fx.track(await startGuest("kinds", fx.locks, fx.log.logger, { runtime }));
  const call = async (g: GuestInstance, name: string, args: number[] = []): Promise<number> => Number(await g.call(name, args));
  const traces = (): string[] => guestTraces(fx.log);

  it("lets two guests read at once and keeps a writer out until both let go", async () => {
    const [a, b] = [await guest(), await guest()];
    expect(await call(a, "readLock", [0, 10_000])).toBeGreaterThan(0);
    expect(await call(b, "readLock", [0, 10_000])).toBeGreaterThan(0);
    expect(await call(a, "writeLock", [1, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(a, "state", [0])).toBe(S.STATE_HELD);
    const readFence = await call(b, "fence", [0]);
    expect(await call(a, "release", [0])).toBe(0);
    expect(await call(a, "state", [0])).toBe(-1000);
    expect(await call(b, "release", [0])).toBe(0);
    expect(await call(a, "writeLock", [1, 10_000])).toBeGreaterThan(0);
    expect(await call(a, "fence", [1])).toBeGreaterThan(readFence);
    expect(await call(b, "readLock", [0, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(a, "release", [1])).toBe(0);
  });

  it("wakes a waiting writer when the reader releases, and prefers it over later readers", async () => {
    const [a, b, c] = [await guest(), await guest(), await guest()];
    expect(await call(a, "readLock", [0, 30_000])).toBeGreaterThan(0);
    const writing = call(b, "writeWait", [0, 10_000, 20_000]);
    await sleep(200);
    // A writer waits: a new reader is refused (writer preference).
    expect(await call(c, "readLock", [0, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(a, "release", [0])).toBe(0);
    expect(await writing).toBeGreaterThan(0);
    expect(await call(c, "readWait", [0, 10_000, 100])).toBe(-S.TIMEOUT);
    expect(await call(b, "release", [0])).toBe(0);
    expect(await call(c, "readWait", [0, 10_000, 5_000])).toBeGreaterThan(0);
  });

  it("admits N permits of a semaphore, refuses the next, and answers another N with PERMITS_MISMATCH", async () => {
    const [a, b] = [await guest(), await guest()];
    expect(await call(a, "permit", [0, 2, 10_000])).toBeGreaterThan(0);
    expect(await call(b, "permit", [0, 2, 10_000])).toBeGreaterThan(0);
    expect(await call(a, "permit", [1, 2, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(a, "permit", [1, 3, 10_000])).toBe(-S.PERMITS_MISMATCH);
    expect(traces().some((t) => t.startsWith(`error ${S.PERMITS_MISMATCH}: semaphore test:doc is held with 2 permits`))).toBe(true);
    const waiting = call(a, "permitWait", [1, 2, 10_000, 20_000]);
    await sleep(100);
    expect(await call(b, "release", [0])).toBe(0);
    expect(await waiting).toBeGreaterThan(0);
  });

  it("queues FLAG_FAIR waiters in arrival order, refuses a fair try while one waits, and keeps the mutex apart", async () => {
    const [a, b, c] = [await guest(), await guest(), await guest()];
    expect(await call(a, "fairLock", [0, 30_000])).toBeGreaterThan(0);
    const firstFence = await call(a, "fence", [0]);
    const second = call(b, "fairWait", [0, 10_000, 20_000]);
    await sleep(100);
    const third = call(c, "fairWait", [0, 10_000, 20_000]);
    await sleep(100);
    expect(await call(a, "fairStatusTrace")).toBeGreaterThan(0);
    const status = JSON.parse(
      traces()
        .find((t) => t.startsWith("fair "))!
        .slice(5),
    );
    expect(status).toMatchObject({ key: "test:doc", kind: "fair", held: true, queued: 2 });
    // The plain mutex of the key is another lock.
    expect(await call(a, "mutexLock", [1, 10_000])).toBeGreaterThan(0);
    expect(await call(a, "release", [0])).toBe(0);
    expect(await second).toBeGreaterThan(0);
    const secondFence = await call(b, "fence", [0]);
    expect(secondFence).toBeGreaterThan(firstFence);
    // c still waits: a try is refused (held, and someone queues).
    expect(await call(a, "fairLock", [2, 10_000])).toBe(S.TRY_CONTENDED);
    expect(await call(b, "release", [0])).toBe(0);
    expect(await third).toBeGreaterThan(0);
    expect(await call(c, "fence", [0])).toBeGreaterThan(secondFence);
    expect(await call(c, "release", [0])).toBe(0);
    expect(await call(a, "release", [1])).toBe(0);
  });

  it("refuses bad permits with INVALID_ARGUMENT naming them", async () => {
    const g = await guest();
    for (const permits of [0, -3, 2_000_000]) expect(await call(g, "permit", [0, permits, 1_000])).toBe(-S.INVALID_ARGUMENT);
    expect(traces().filter((t) => t.includes("permits must be an integer from 1 to 1000000")).length).toBe(3);
  });

  it("releases a read lock taken without KEEP when the call returns, and runs the with* helpers", async () => {
    const g = await guest();
    expect(await call(g, "readForThisCall", [10_000])).toBeGreaterThan(0);
    expect(fx.locks.heldCount).toBe(0);
    expect(await call(g, "writeLock", [0, 10_000])).toBeGreaterThan(0);
    expect(await call(g, "release", [0])).toBe(0);
    expect(await call(g, "helpers")).toBeGreaterThan(0);
    expect(fx.locks.heldCount).toBe(0);
  });

  it("describes read/write locks and semaphores in their status JSON", async () => {
    const [a, b] = [await guest(), await guest()];
    await call(a, "readLock", [0, 10_000]);
    const queued = call(b, "writeWait", [0, 10_000, 20_000]);
    await sleep(100);
    await call(a, "permit", [1, 4, 10_000]);
    expect(await call(a, "statuses")).toBeGreaterThan(0);
    const rw = JSON.parse(
      traces()
        .find((t) => t.startsWith("rw "))!
        .slice(3),
    );
    expect(rw).toMatchObject({ key: "test:doc", kind: "rw", held: true, limit: 0, queued: 1 });
    expect(rw.holders).toHaveLength(1);
    expect(rw.holders[0]).toMatchObject({ mode: "shared", holder: { plugin: "test", node: "node-a" }, ttl_ms: 10_000 });
    const sem = JSON.parse(
      traces()
        .find((t) => t.startsWith("semaphore "))!
        .slice(10),
    );
    expect(sem).toMatchObject({ key: "test:doc", kind: "semaphore", held: true, limit: 4 });
    expect(await call(a, "release", [0])).toBe(0);
    expect(await queued).toBeGreaterThan(0);
    expect(await call(a, "release", [1])).toBe(0);
    expect(await call(b, "release", [0])).toBe(0);
  });

  it("loses a guest's read lock that an operator force-releases (state LOST, release -LOST)", async () => {
    const g = await guest();
    expect(await call(g, "readLock", [0, 10_000])).toBeGreaterThan(0);
    expect(await fx.locks.forceRelease({ name: "test:doc" }, { kind: "rw" })).toBe(1);
    expect(await call(g, "state", [0])).toBe(S.STATE_LOST);
    expect(await call(g, "release", [0])).toBe(-S.LOST);
  });
});
