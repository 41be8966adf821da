// Issue 14's guest-side shapes, in every runtime this Node has: withLockCtx with a context
// value, keyStatusOf as a typed value, lastError describing the last call (cleared by a
// success, naming the lock on contention), and strings handed to guest exports through the
// guest's allocator (lockhost_alloc / lockhost_free), with coded errors for what cannot go.
import { beforeEach, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import * as S from "../abi/status.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { allocatorProblem, MAX_STRING_ARG_UNITS } from "../host/runtime/guest-strings.js";
import type { FuncSignature, ValType } from "../host/runtime/wasm-binary.js";
import { GUEST_RUNTIMES, startGuest, type TestGuestOptions } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";
import { guestTraces } from "./support/log.js";

const fx = guestFixture();
let runtime: Runtime;

async function guest(wasm = "shapes", options: TestGuestOptions = {}): Promise<GuestInstance> {
  return fx.track(await startGuest(wasm, fx.locks, fx.log.logger, { runtime, plugin: "@acme/cron", globalKeys: ["ledger"], ...options }));
}
/** The guest's traced lines, without the "guest: " prefix. */
const traces = (): string[] => guestTraces(fx.log);

describe.each(GUEST_RUNTIMES)("%s runtime", (r) => {
  beforeEach(() => {
    runtime = r;
  });

  describe("lock sets", () => {
    it("takes keys all or nothing in the host's canonical order, releasing what it took when one is held", async () => {
      const g = await guest();
      const scope = { plugin: "@acme/cron" };
      const held = (await fx.locks.tryLock("b", { ttlMs: 10_000, scope }))!;
      expect(await g.call("takeSet", ["c", "b", "a", -1])).toBe(0);
      expect(traces().at(-1)).toBe("set not taken: contended at b");
      // a came first in canonical order, and was let go again.
      expect(fx.locks.heldCount).toBe(1);
      await fx.locks.release(held);
      expect(await g.call("takeSet", ["c", "b", "a", -1])).toBe(3);
      expect(traces().at(-1)).toMatch(/^set a=\d+ b=\d+ c=\d+$/);
      // The host's order is the same: a host-side set and a guest's never wait on each other in a cycle.
      const set = (await fx.locks.tryMany(["c", "a", "b"], { ttlMs: 10_000, scope }))!;
      expect(set.names).toEqual(["@acme/cron:a", "@acme/cron:b", "@acme/cron:c"]);
      await set.release();
    });

    it("waits for a held key within the set's wait, and says which key timed out", async () => {
      const g = await guest();
      const held = (await fx.locks.tryLock("q", { ttlMs: 10_000, scope: { plugin: "@acme/cron" } }))!;
      expect(await g.call("takeSet", ["p", "q", "r", 100])).toBe(0);
      expect(traces().at(-1)).toBe("set not taken: contended at q");
      setTimeout(() => void fx.locks.release(held), 50);
      expect(await g.call("takeSet", ["p", "q", "r", 2_000])).toBe(3);
    });
  });

  describe("strings into guest exports", () => {
    it("passes strings and numbers in order, any characters, and frees them after the call", async () => {
      const g = await guest();
      expect(await g.call("echo", ["héllo 🔒", 7, ""])).toBe("héllo 🔒".length);
      expect(traces()).toContain("echo [héllo 🔒] 7 []");
      // Many calls with strings: the pinned objects are let go (the guest's memory stays capped).
      const long = "x".repeat(100_000);
      for (let i = 0; i < 40; i++) expect(await g.call("echo", [long, i, "b"])).toBe(100_001);
    });

    it("lets a guest restore a lock by an owner token handed in as a string", async () => {
      const lease = (await fx.locks.tryLock("job", { ttlMs: 10_000, scope: { plugin: "@acme/cron" } }))!;
      const g = await guest();
      expect(await g.call("restoreAndRelease", ["job", lease.owner])).toBe(1);
      expect((await fx.locks.status({ name: "@acme/cron:job" })).held).toBe(false);
      expect(await g.call("restoreAndRelease", ["job", "nobody"])).toBe(0);
      expect(traces().at(-1)).toContain("restore failed: NOT_FOUND");
    });

    it("refuses a string too long, for a non-i32 parameter, or to a guest without an allocator, with INVALID_ARGUMENT", async () => {
      const g = await guest();
      await expect(g.call("echo", ["x".repeat(MAX_STRING_ARG_UNITS + 1), 1, "b"])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining(
          `export echo(i32, i32, i32) of plugin @acme/cron: argument 1 is a string of ${MAX_STRING_ARG_UNITS + 1} UTF-16 units, over the limit`,
        ),
      });
      const locker = await guest("locker");
      await expect(locker.call("add", ["1", 2])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining(
          "argument 1 is a string: a string argument needs the guest to export lockhost_alloc(i32) -> i32 and lockhost_free(i32)",
        ),
      });
      // Nothing reached the guests: both still answer.
      expect(await locker.call("add", [1, 2])).toBe(3);
      expect(await g.call("echo", ["a", 1, "b"])).toBe(2);
    });

    it("gives a guest exporting lockhost_alloc_utf8 each string as UTF-8 (ptr, len), frees each, fails the call like a trap when it answers 0", async () => {
      const g = await guest("utf8args");
      expect(await g.call("take", ["é", 1])).toBe(0xc3 + 1); // UTF-8's first byte, not UTF-16's
      expect(await g.call("take", ["", 5])).toBe(5); // (0, 0): nothing allocated, nothing freed
      expect(await g.call("frees")).toBe(1);
      await expect(g.call("take", [1, 2])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringContaining("export take(i32, i32, i32) of plugin @acme/cron takes 3 argument(s), got 2"),
      });
      await expect(g.call("take", ["x".repeat(101), 1])).rejects.toMatchObject({
        code: "GUEST_TRAP",
        message: expect.stringContaining("lockhost_alloc_utf8(101) returned 0, where a string of 101 bytes does not fit"),
      });
      expect(await g.call("take", ["a", 0])).toBe(0x61);
    });

    it("reads an i64 string result as UTF-8 len << 32 | ptr, refusing one outside memory (INVALID_MEMORY) while the guest runs on", async () => {
      const g = await guest("utf8args");
      await expect(g.callString("lockhost_schedules_utf8")).rejects.toMatchObject({
        code: "INVALID_MEMORY",
        message: expect.stringContaining("export lockhost_schedules_utf8 returned a string (ptr 65534, len 5) that lies outside guest memory (65536 bytes)"),
      });
      await expect(g.callString("frees")).rejects.toMatchObject({ code: "INVALID_MEMORY" });
      expect(await g.call("take", ["b", 0])).toBe(0x62);
    });
  });

  describe("the string form a guest's exports choose", () => {
    const sig = (params: ValType[], results: ValType[] = []): FuncSignature => ({ params, results });
    it("names what a UTF-8 guest lacks, with the signatures it has and how each SDK provides them", () => {
      expect(
        allocatorProblem(
          new Map([
            ["lockhost_alloc_utf8", sig(["i32"], ["i32"])],
            ["lockhost_free_utf8", sig(["i32"])],
          ]),
        ),
      ).toBe(
        "a string argument needs the guest to export lockhost_alloc_utf8(i32) -> i32 and lockhost_free_utf8(i32, i32) (Rust: " +
          "lockhost::export_string_args!(); C: LOCKHOST_STRING_ARGS_ARENA(bytes) or LOCKHOST_STRING_ARGS_MALLOC()); it exports " +
          "lockhost_alloc_utf8(i32) -> i32 and lockhost_free_utf8(i32) -> nothing",
      );
      expect(
        allocatorProblem(
          new Map([
            ["lockhost_alloc_utf8", sig(["i32"], ["i32"])],
            ["lockhost_free_utf8", sig(["i32", "i32"])],
          ]),
        ),
      ).toBeUndefined();
      expect(
        allocatorProblem(
          new Map([
            ["lockhost_alloc", sig(["i32"], ["i32"])],
            ["lockhost_free", sig(["i32"])],
          ]),
        ),
      ).toBeUndefined();
    });
  });

  describe("withLockCtx", () => {
    it("runs the callback with the context value, releasing the lock after each run", async () => {
      const g = await guest();
      expect(await g.call("ctxRun", ["ctx-a", 3])).toBe(3);
      expect(traces().filter((t) => t === "ctx ctx-a in ctx-a")).toHaveLength(3);
      expect((await fx.locks.status({ name: "@acme/cron:ctx-a" })).held).toBe(false);
    });

    it("does not call it when the key is held elsewhere, and lastError names the lock", async () => {
      const g = await guest();
      await fx.locks.tryLock("ctx-b", { ttlMs: 10_000, scope: { plugin: "@acme/cron" } });
      expect(await g.call("ctxRun", ["ctx-b", 1])).toBe(0);
      expect(traces()).toContain("ctx not acquired: contended=1 CONTENDED: lock @acme/cron:ctx-b is held by another owner");
      await fx.locks.releaseAll();
    });
  });

  describe("keyStatusOf", () => {
    it("gives a held key's status as a typed value, and a free key's as not held", async () => {
      const g = await guest();
      expect(await g.call("take", ["st-a", 0])).toBe(1);
      expect(await g.call("status", ["st-a", 0])).toBe(1);
      expect(traces().at(-1)).toMatch(/^status key=@acme\/cron:st-a held=1 plugin=@acme\/cron node=node-a fence=\d+ ttl=10000 left>0=1 expires>acquired=1$/);
      expect(await g.call("status", ["st-free", 0])).toBe(0);
      expect(traces().at(-1)).toBe("status key=@acme/cron:st-free held=0 plugin= node= fence=0 ttl=0 left>0=0 expires>acquired=0");
      expect(await g.call("take", ["ledger", S.FLAG_GLOBAL])).toBe(1);
      expect(await g.call("status", ["ledger", 1])).toBe(1);
      expect(traces().at(-1)).toContain("status key=global:ledger held=1 plugin=@acme/cron");
    });

    it("reports an error as a LockError, not a status", async () => {
      const g = await guest();
      expect(await g.call("status", ["secret", 1])).toBe(-1);
      expect(traces().at(-1)).toContain("status error PERMISSION_DENIED");
    });

    it("reads escapes and unknown fields, and refuses text that is not the status", async () => {
      const g = await guest();
      // biome-ignore-start lint/correctness/noPrecisionLoss: a fence past 2^53, read back as the double it rounds to
      const json = JSON.stringify({
        key: 'a"b\\c\u00e9\n',
        held: true,
        extra: { x: [1, { y: null }] },
        holder: { plugin: "p", node: "n\u{1F512}" },
        fence: 9007199254740993,
      });
      // biome-ignore-end lint/correctness/noPrecisionLoss: only that fence
      expect(await g.call("parse", [json])).toBe(1);
      expect(traces().at(-1)).toBe(`parsed key=a"b\\cé\n held=1 plugin=p node=n🔒 fence=9007199254740992`);
      for (const bad of ["", "{", '{"key":}', '{"held":tru}', "[]", '{"key":"x"} trailing']) expect(await g.call("parse", [bad]), bad).toBe(-1);
    });
  });

  describe("lastError", () => {
    it("describes the last call: a failure's message, then empty after a success", async () => {
      const g = await guest();
      await g.call("lastErrorCleared", ["le-a"]);
      expect(traces()).toContain("after failure: ttlMs must be > 0, got 0");
      expect(traces()).toContain("after success: [] acquired=1");
    });

    it("says whose lock it was after a contended try, and nothing after an acquired one", async () => {
      const g = await guest();
      expect(await g.call("contendedNote", ["le-b"])).toBe(0);
      expect(traces().at(-1)).toBe("after try: []");
      await fx.locks.tryLock("le-c", { ttlMs: 10_000, scope: { plugin: "@acme/cron" } });
      expect(await g.call("contendedNote", ["le-c"])).toBe(1);
      expect(traces().at(-1)).toBe("after try: [CONTENDED: lock @acme/cron:le-c is held by another owner]");
      await fx.locks.releaseAll();
    });
  });
});
