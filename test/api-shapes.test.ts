// The host API's shapes (issue 14): a caller's owner, unlimited waits, release by key and owner
// and as a value, the signal of a released lease, one keepalive default, retryable errors with
// TIMEOUT details, one key convention across the calls, and coded errors for bad arguments.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { isRetryable, LockhostError, type ErrorCode } from "../kit/errors.js";
import { DEFAULT_KEEPALIVE } from "../host/locking/options.js";
import { LockService } from "../host/locking/service.js";
import { MAX_OWNER_LENGTH } from "../host/locking/validate.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { sleep } from "./support/until.js";

let backend: MemoryBackend;
let locks: LockService;
beforeEach(() => {
  backend = new MemoryBackend();
  locks = new LockService(backend, { node: "node-a", keepalive: { renewAtRatio: 0.5 } });
});
afterEach(async () => {
  await locks.close();
});

/** The LockhostError a call throws or rejects with. */
async function failure(call: () => unknown): Promise<LockhostError> {
  try {
    await call();
  } catch (err) {
    expect(err).toBeInstanceOf(LockhostError);
    return err as LockhostError;
  }
  throw new Error("expected the call to fail");
}

describe("a caller's owner", () => {
  it("holds the lock under that owner, which restore and release by key accept", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000, owner: "worker-7" }))!;
    expect(lease.owner).toBe("worker-7");
    expect(await locks.status("a", { owners: true })).toMatchObject({ held: true, holders: [{ owner: "worker-7" }] });
    const other = new LockService(backend, { node: "node-b" });
    try {
      const restored = await other.restore("a", "worker-7");
      expect(restored.fence).toBe(lease.fence);
      await other.release("a", "worker-7");
      expect((await locks.status("a")).held).toBe(false);
    } finally {
      await other.close({ closeBackend: false });
    }
  });

  it("is contended when its own holder has the key (no second holder), in tryLock, acquire and withLock", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000, owner: "same" }))!;
    expect(await locks.tryLock("a", { ttlMs: 5_000, owner: "same" })).toBeNull();
    expect((await failure(() => locks.acquire("a", { ttlMs: 5_000, waitMs: 50, owner: "same" }))).code).toBe("TIMEOUT");
    expect((await failure(() => locks.withLock("a", () => 1, { ttlMs: 5_000, owner: "same" }))).code).toBe("CONTENDED");
    expect(locks.heldCount).toBe(1);
    await locks.release(lease);
    expect(await locks.withLock("a", (_signal, l) => l.owner, { ttlMs: 5_000, owner: "same" })).toBe("same");
    expect(await locks.acquire("a", { ttlMs: 5_000, waitMs: 0, owner: "same" })).toMatchObject({ owner: "same" });
  });

  it("names one live lock per service: a second key under it is refused with INVALID_ARGUMENT", async () => {
    await locks.tryLock("a", { ttlMs: 5_000, owner: "one" });
    const e = await failure(() => locks.tryLock("b", { ttlMs: 5_000, owner: "one" }));
    expect(e).toMatchObject({ code: "INVALID_ARGUMENT", retryable: false });
    expect(e.message).toMatch(/owner "one" already holds lock global:a/);
  });

  it("is validated: printable ASCII without spaces, 1 to MAX_OWNER_LENGTH characters", async () => {
    for (const owner of ["", "a b", "é", "x".repeat(MAX_OWNER_LENGTH + 1), 42, null]) {
      const e = await failure(() => locks.tryLock("a", { ttlMs: 1_000, owner: owner as string }));
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toMatch(/^owner must be 1 to 128 printable ASCII characters/);
    }
    expect(await locks.tryLock("a", { ttlMs: 1_000, owner: "x".repeat(MAX_OWNER_LENGTH) })).not.toBeNull();
  });
});

describe("unlimited waits", () => {
  it("waitMs Infinity waits until the key is released (and is still refused for NaN or over 24 h)", async () => {
    const held = (await locks.tryLock("a", { ttlMs: 5_000 }))!;
    const waiting = locks.acquire("a", { ttlMs: 5_000, waitMs: Infinity });
    await sleep(100);
    await locks.release(held);
    expect((await waiting).fence).toBe(held.fence + 1);
    for (const waitMs of [NaN, -Infinity, S.MAX_WAIT_MS + 1, -1]) {
      const e = await failure(() => locks.acquire("b", { ttlMs: 1_000, waitMs }));
      expect(e.message).toMatch(/^waitMs must be an integer number of milliseconds from 0 to 86400000 \(24 h\), or Infinity/);
    }
  });

  it("an unlimited wait ends with its signal, or with close()", async () => {
    await locks.tryLock("a", { ttlMs: 5_000 });
    const controller = new AbortController();
    const waiting = locks.acquire("a", { ttlMs: 5_000, waitMs: Infinity, signal: controller.signal });
    await sleep(50);
    controller.abort(new Error("stop"));
    await expect(waiting).rejects.toThrow("stop");
    const forever = locks.withLock("a", () => 1, { ttlMs: 5_000, waitMs: Infinity });
    await sleep(50);
    void locks.close();
    await expect(forever).rejects.toMatchObject({ code: "CLOSED" });
  });
});

describe("release by key and owner, and release results as values", () => {
  it("tryRelease tells released, already_released, lost and not_found, for a lease and by key and owner", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000 }))!;
    expect(await locks.tryRelease(lease)).toBe("released");
    expect(await locks.tryRelease(lease)).toBe("already_released");
    expect(await locks.tryRelease("a", lease.owner)).toBe("already_released");
    expect(await locks.tryRelease("a", "nobody")).toBe("not_found");

    const gone = (await locks.tryLock("b", { ttlMs: 5_000 }))!;
    await locks.forceRelease("b");
    expect(await locks.tryRelease(gone)).toBe("lost");
    const taken = (await locks.tryLock("b", { ttlMs: 5_000 }))!;
    expect(await locks.tryRelease("b", gone.owner)).toBe("lost");
    expect((await locks.status("b")).held).toBe(true);

    // A lease this service holds, named by key and owner, is released as a lease: its books and signal follow.
    const signal = taken.signal;
    expect(await locks.tryRelease("b", taken.owner)).toBe("released");
    expect(taken.state).toBe("released");
    expect(signal.reason).toMatchObject({ code: "ALREADY_RELEASED" });
    expect(locks.heldCount).toBe(0);
  });

  it("release(key, owner) throws what tryRelease returns, with a code", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000, scope: { plugin: "billing" }, owner: "o-1" }))!;
    await expect(locks.release("a", "o-1")).rejects.toMatchObject({ code: "NOT_FOUND" });
    await locks.release("a", "o-1", { scope: { plugin: "billing" } });
    expect(lease.state).toBe("released");
    await expect(locks.release("a", "o-1", { scope: { plugin: "billing" } })).rejects.toMatchObject({ code: "ALREADY_RELEASED" });
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "ALREADY_RELEASED" });
  });

  it("a release by key and owner wakes this host's waiters on the key", async () => {
    const other = new LockService(backend, { node: "node-b", waiting: { pollIntervalMs: 60_000 } });
    try {
      await other.tryLock("a", { ttlMs: 30_000, owner: "shared" });
      const waiting = locks.acquire("a", { ttlMs: 5_000, waitMs: 5_000 });
      await sleep(50);
      const t0 = performance.now();
      await locks.release("a", "shared");
      await waiting;
      // Woken by the release, not by the next poll (60 s): 10 s is margin a loaded machine keeps.
      expect(performance.now() - t0).toBeLessThan(10_000);
    } finally {
      await other.close({ closeBackend: false });
    }
  });
});

describe("a released lease's signal", () => {
  it("aborts with ALREADY_RELEASED (reason 'released') on release, withLock's end and close, distinct from LOST", async () => {
    let inside: AbortSignal | undefined;
    await locks.withLock("a", (signal) => void (inside = signal), { ttlMs: 5_000 });
    expect(inside!.aborted).toBe(true);
    expect(inside!.reason).toMatchObject({ code: "ALREADY_RELEASED", details: { reason: "released" } });

    const closing = (await locks.tryLock("b", { ttlMs: 5_000 }))!;
    const lost = (await locks.tryLock("c", { ttlMs: 5_000 }))!;
    await locks.forceRelease("c");
    expect(lost.signal.reason).toMatchObject({ code: "LOST" });
    await locks.close();
    expect(closing.signal.reason).toMatchObject({ code: "ALREADY_RELEASED" });
  });

  it("does not abort when the release failed: the lease is still held", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000 }))!;
    const signal = lease.signal;
    const release = backend.release.bind(backend);
    backend.release = () => Promise.reject(new Error("cut"));
    await expect(locks.release(lease)).rejects.toMatchObject({ code: "BACKEND_UNAVAILABLE", retryable: true });
    expect(signal.aborted).toBe(false);
    backend.release = release;
    await locks.release(lease);
    expect(signal.aborted).toBe(true);
  });
});

describe("one keepalive default", () => {
  it("is on for tryLock, acquire, withLock and restore, and keepalive: false turns it off", async () => {
    expect(DEFAULT_KEEPALIVE).toBe(true);
    const tried = (await locks.tryLock("a", { ttlMs: 200 }))!;
    const waited = await locks.acquire("b", { ttlMs: 200, waitMs: 0 });
    let inWith = false;
    const withLock = locks.withLock(
      "c",
      async (_s, l) => {
        inWith = l.keepalive;
        await sleep(500);
      },
      { ttlMs: 200 },
    );
    const off = (await locks.tryLock("d", { ttlMs: 200, keepalive: false }))!;
    // Watched, so its end is noticed when it comes (an unwatched lease is found lost on its next use).
    const offSignal = off.signal;
    const other = new LockService(backend, { node: "node-b" });
    try {
      const restored = await other.restore("a", tried.owner);
      for (const lease of [tried, waited, restored]) expect(lease.keepalive).toBe(true);
      expect(off.keepalive).toBe(false);
      await sleep(500);
      await withLock;
      expect(inWith).toBe(true);
      expect([tried.state, waited.state, off.state]).toEqual(["held", "held", "lost"]);
      expect(offSignal.reason).toMatchObject({ code: "LOST" });
    } finally {
      await other.close({ closeBackend: false });
    }
  });
});

describe("errors", () => {
  it("carry retryable, from the code", async () => {
    const retryable: ErrorCode[] = ["CONTENDED", "TIMEOUT", "BACKEND_UNAVAILABLE"];
    const not: ErrorCode[] = ["INVALID_ARGUMENT", "CONFIG_INVALID", "OWNERSHIP_MISMATCH", "LOST", "ALREADY_RELEASED", "NOT_FOUND", "CLOSED"];
    for (const code of retryable) expect([code, new LockhostError(code, "m").retryable, isRetryable(code)]).toEqual([code, true, true]);
    for (const code of not) expect([code, new LockhostError(code, "m").retryable, isRetryable(code)]).toEqual([code, false, false]);
    expect(new LockhostError("BACKEND_UNAVAILABLE", "wrong password", { details: { permanent: 1 } }).retryable).toBe(false);
    expect((await failure(() => locks.tryLock("", { ttlMs: 1 }))).retryable).toBe(false);
  });

  it("a TIMEOUT names the key, its scope and the full lock name", async () => {
    await locks.tryLock("a", { ttlMs: 5_000, scope: { plugin: "billing" } });
    const e = await failure(() => locks.acquire("a", { ttlMs: 1_000, waitMs: 30, scope: { plugin: "billing" } }));
    expect(e).toMatchObject({ code: "TIMEOUT", retryable: true, details: { key: "a", scope: "billing", name: "billing:a" } });
    expect(e.details!.waitedMs).toBeGreaterThanOrEqual(25);
    await locks.tryLock("g", { ttlMs: 5_000 });
    const now = await failure(() => locks.acquire("g", { ttlMs: 1_000, waitMs: 0 }));
    expect(now.details).toEqual({ waitedMs: 0, key: "g", scope: "global", name: "global:g" });
  });
});

describe("one key convention", () => {
  it("status and forceRelease take a key and scope like tryLock; full names go in { name }", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000 }))!;
    expect(await locks.status("a")).toMatchObject({ held: true, name: "global:a", holders: [{ fence: lease.fence }] });
    expect(await locks.status({ name: "global:a" })).toMatchObject({ held: true, name: "global:a", holders: [{ fence: lease.fence }] });
    await locks.tryLock("a", { ttlMs: 5_000, scope: { plugin: "billing" } });
    expect(await locks.status("a", { scope: { plugin: "billing" } })).toMatchObject({ held: true, name: "billing:a" });
    expect(await locks.forceRelease("a")).toBe(1);
    expect(lease.state).toBe("lost");
    expect(await locks.forceRelease("a")).toBe(0);
    expect(await locks.forceRelease({ name: "billing:a" })).toBe(1);
    expect((await locks.status("a", { scope: { plugin: "billing" } })).held).toBe(false);
  });

  it("a full name passed as a key is refused, not read as global:global:…", async () => {
    await locks.tryLock("a", { ttlMs: 5_000 });
    for (const call of [() => locks.status("global:a"), () => locks.forceRelease("global:a")]) {
      const e = await failure(call);
      expect(e.code).toBe("INVALID_ARGUMENT");
      expect(e.message).toMatch(/looks like a full lock name: pass \{ name: "global:a" \} for a full name/);
    }
    expect((await locks.status("a")).held).toBe(true);
    // A key that really starts with "global:" is reached by naming its scope.
    await locks.tryLock("global:x", { ttlMs: 5_000 });
    expect((await locks.status("global:x", { scope: "global" })).held).toBe(true);
    expect((await locks.status({ name: "global:global:x" })).held).toBe(true);
  });
});

describe("coded errors for bad arguments", () => {
  const cases: [string, () => unknown, RegExp][] = [
    ["tryLock without options", () => locks.tryLock("a", undefined as never), /^options must be an object, got undefined/],
    ["tryLock with null options", () => locks.tryLock("a", null as never), /^options must be an object, got null/],
    ["tryLock with a key that is not a string", () => locks.tryLock(5 as never, { ttlMs: 1 }), /^key must be a string/],
    ["tryLock with keepalive 'yes'", () => locks.tryLock("a", { ttlMs: 1, keepalive: "yes" as never }), /^keepalive must be true or false/],
    ["tryLock with a bad scope", () => locks.tryLock("a", { ttlMs: 1, scope: "billing" as never }), /^scope must be "global" or \{ plugin \}/],
    ["acquire without options", () => locks.acquire("a", undefined as never), /^options must be an object/],
    ["acquire without waitMs", () => locks.acquire("a", { ttlMs: 1 } as never), /^waitMs must be/],
    ["acquire with a signal that is not one", () => locks.acquire("a", { ttlMs: 1, waitMs: 0, signal: {} as never }), /^signal must be an AbortSignal/],
    ["withLock without a function", () => locks.withLock("a", undefined as never, { ttlMs: 1 }), /^fn must be a function/],
    ["withLock without options", () => locks.withLock("a", () => 1, undefined as never), /^options must be an object/],
    ["release without anything", () => locks.release(undefined as never), /^lease must be a Lease, or a key/],
    ["release by key without owner", () => locks.release("a" as never), /^owner must be a string/],
    ["tryRelease with a bad scope", () => locks.tryRelease("a", "o", { scope: { plugin: "Bad Name" } }), /^scope must be/],
    ["renew without a lease", () => locks.renew({} as never), /^lease must be a Lease/],
    ["setKeepalive without a lease", () => locks.setKeepalive(null as never, true), /^lease must be a Lease, got null/],
    ["releaseIfHeld without a lease", () => locks.releaseIfHeld("a" as never), /^lease must be a Lease/],
    ["restore with null options", () => locks.restore("a", "o", null as never), /^options must be an object/],
    ["restore with a bad scope", () => locks.restore("a", "o", { scope: { plugin: "global" } }), /^scope must be/],
    ["restore with keepalive 1", () => locks.restore("a", "o", { keepalive: 1 as never }), /^keepalive must be true or false/],
    ["status without a key", () => locks.status(undefined as never), /^key must be a string/],
    ["status with options that are not an object", () => locks.status("a", "global" as never), /^options must be an object when given/],
    ["status with an empty name", () => locks.status({ name: "" }), /^name must not be empty/],
    ["status with a name and a scope", () => locks.status({ name: "global:a" }, { scope: "global" }), /^scope must not be given with \{ name \}/],
    ["status with a name starting with a control character", () => locks.status({ name: "\u0001leader:global:a" }), /^name must start with its scope/],
    ["status with an unknown kind", () => locks.status("a", { kind: "lock" as never }), /^kind must be mutex, rw, semaphore, fair or leader, got "lock"/],
    ["forceRelease with a bad scope", () => locks.forceRelease("a", { scope: { plugin: "" } }), /^scope must be/],
    ["forceRelease with a name that is a number", () => locks.forceRelease({ name: 1 as never }), /^name must be a string/],
    ["leaseOf with a number", () => locks.leaseOf(1 as never), /^owner must be a string/],
    ["onEvent without a listener", () => locks.onEvent(undefined as never), /^listener must be a function/],
    ["onEvent with an unknown type", () => locks.onEvent(() => undefined, ["nope" as never]), /^types must be an array of/],
    ["close with closeBackend 'no'", () => locks.close({ closeBackend: "no" as never }), /^closeBackend must be true or false/],
    ["a service without a backend", () => new LockService(undefined as never, { node: "n" }), /^backend must be a LockBackend/],
    ["a service without options", () => new LockService(new MemoryBackend(), undefined as never), /^options must be an object/],
    ["a service without a node", () => new LockService(new MemoryBackend(), {} as never), /^node must be a non-empty string/],
  ];
  it.each(cases)("%s: INVALID_ARGUMENT naming the argument", async (_what, call, message) => {
    const e = await failure(call);
    expect(e.code).toBe("INVALID_ARGUMENT");
    expect(e.message).toMatch(message);
  });
});
