// End-to-end tests of the guest runtimes with real guests on the memory backend: exclusion,
// outcomes, fences, auto-release, bad input, memory cap. One suite, run against every runtime
// this Node has (GUEST_RUNTIMES), and its cases on the ABI's surface against the test guest
// built in every guest language (GUEST_LANGUAGES: AssemblyScript, Rust, C); what only one
// runtime does is in guest-worker.test.ts and guest-inline.test.ts.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { LockService } from "../host/locking/service.js";
import type { Runtime } from "../abi/ops.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { captureLogger } from "./support/log.js";
import { faultyBackend } from "./support/faulty-backend.js";
import { GUEST_RUNTIMES, startGuest, type TestGuestOptions } from "./support/guest.js";
import { GUEST_LANGUAGES, type GuestLanguage } from "./support/guests.js";

let locks: LockService;
let log: ReturnType<typeof captureLogger>;
const guests: GuestInstance[] = [];
/** The runtime of the suite running now. */
let runtime: Runtime;
/** The language of the test guest: AssemblyScript unless a per-language block says otherwise. */
let language: GuestLanguage = GUEST_LANGUAGES[0]!;

async function guest(options: TestGuestOptions = {}): Promise<GuestInstance> {
  const g = await startGuest(language.locker, locks, log.logger, { runtime, wasi: language.wasi, ...options });
  guests.push(g);
  return g;
}

const held = async (name: string): Promise<boolean> => (await locks.status({ name })).held;

beforeEach(() => {
  log = captureLogger();
  locks = new LockService(new MemoryBackend(), { node: "node-a" });
});

afterEach(async () => {
  await Promise.all(guests.splice(0).map((g) => g.close()));
  // No test may leak a lock: every guest's locks are released by close().
  expect(locks.heldCount).toBe(0);
  await locks.close();
});

describe.each(GUEST_RUNTIMES)("%s runtime", (r) => {
  beforeEach(() => {
    runtime = r;
    language = GUEST_LANGUAGES[0]!;
  });

  describe.each(GUEST_LANGUAGES)("$language guest", (lang) => {
    beforeEach(() => {
      language = lang;
    });

    describe("exclusion and outcomes", () => {
      it("gives a key to exactly one of two guests, and to the other once released", async () => {
        const a = await guest();
        const b = await guest();
        for (let round = 0; round < 25; round++) {
          const [ha, hb] = await Promise.all([a.call("hold", [1, 10_000, S.FLAG_KEEP]), b.call("hold", [1, 10_000, S.FLAG_KEEP])]);
          const results = [ha, hb] as number[];
          expect(results.filter((h) => h > 0)).toHaveLength(1);
          expect(results.filter((h) => h === S.TRY_CONTENDED)).toHaveLength(1);
          const [winner, handle] = ha! > 0 ? [a, ha as number] : [b, hb as number];
          expect(await winner.call("release", [handle])).toBe(S.OK);
        }
      });

      it("lets the guest tell acquired, contended and error apart", async () => {
        const a = await guest();
        const b = await guest();
        expect(await a.call("outcome", [2, 10_000, 0])).toBe(1);
        const h = (await a.call("hold", [2, 10_000, S.FLAG_KEEP])) as number;
        expect(h).toBeGreaterThan(0);
        expect(await b.call("outcome", [2, 10_000, 0])).toBe(2);
        expect(await b.call("outcome", [2, 0, 0])).toBe(100 + S.INVALID_ARGUMENT);
        expect(log.messages()).toContain("guest: error INVALID_ARGUMENT: ttlMs must be > 0, got 0");
        expect(await a.call("release", [h])).toBe(S.OK);
      });

      it("hands out fences that strictly increase across holders", async () => {
        const a = await guest();
        const b = await guest();
        const fences: bigint[] = [];
        for (let i = 0; i < 6; i++) fences.push((await (i % 2 ? a : b).call("fenceOf", [3, 10_000])) as bigint);
        for (let i = 1; i < fences.length; i++) expect(fences[i]! > fences[i - 1]!).toBe(true);
        expect(fences[0]).toBe(1n);
      });

      it("runs one call at a time per instance, releasing between calls", async () => {
        const a = await guest();
        const handles = await Promise.all(Array.from({ length: 10 }, () => a.call("hold", [4, 10_000, 0])));
        for (const h of handles) expect(h).toBeGreaterThan(0);
        expect(await held("test:k4")).toBe(false);
      });

      it("namespaces keys per plugin, and shares global keys only where granted", async () => {
        const a = await guest({ plugin: "alpha", globalKeys: ["k5*"] });
        const b = await guest({ plugin: "beta", globalKeys: ["k5"] });
        const c = await guest({ plugin: "gamma" });
        const ha = (await a.call("hold", [5, 10_000, S.FLAG_KEEP | S.FLAG_GLOBAL])) as number;
        expect(ha).toBeGreaterThan(0);
        expect(await held("global:k5")).toBe(true);
        expect(await b.call("hold", [5, 10_000, S.FLAG_GLOBAL])).toBe(S.TRY_CONTENDED);
        expect(await b.call("hold", [5, 10_000, 0])).toBeGreaterThan(0); // beta:k5, its own
        expect(await c.call("hold", [5, 10_000, S.FLAG_GLOBAL])).toBe(-S.PERMISSION_DENIED);
        expect(await c.call("outcome", [5, 10_000, S.FLAG_GLOBAL])).toBe(100 + S.PERMISSION_DENIED);
        expect(log.messages().some((m) => m.includes('plugin gamma may not use global key "k5"'))).toBe(true);
        expect(await a.call("release", [ha])).toBe(S.OK);
      });

      it("reports a key's status as JSON without the owner token, and the owner to its holder", async () => {
        const a = await guest({ plugin: "alpha" });
        const h = (await a.call("hold", [6, 10_000, S.FLAG_KEEP])) as number;
        const len = (await a.call("statusLen", [6, 0])) as number;
        const line = log.messages().find((m) => m.startsWith("guest: status "))!;
        const json = JSON.parse(line.slice("guest: status ".length)) as Record<string, unknown>;
        expect(len).toBe(Buffer.byteLength(line.slice("guest: status ".length)));
        expect(json).toMatchObject({ key: "alpha:k6", held: true, holder: { plugin: "alpha", node: "node-a" }, fence: 1 });
        expect(json.ttl_remaining_ms).toBeGreaterThan(0);
        expect(json.ttl_ms).toBe(10_000);
        expect(json).not.toHaveProperty("owner");
        expect(await a.call("ownerLen", [h])).toBe(36);
        expect(await a.call("release", [h])).toBe(S.OK);
        await a.call("statusLen", [6, 0]);
        expect(log.messages()).toContain('guest: status {"key":"alpha:k6","held":false}');
      });
    });

    describe("auto-release", () => {
      it("releases a call's locks when its export returns, but keeps FLAG_KEEP ones", async () => {
        const a = await guest();
        expect(await a.call("hold", [10, 60_000, 0])).toBeGreaterThan(0);
        expect(await held("test:k10")).toBe(false);
        const kept = (await a.call("hold", [11, 60_000, S.FLAG_KEEP])) as number;
        expect(await held("test:k11")).toBe(true);
        expect(await a.call("renew", [kept, 0])).toBe(S.OK);
        expect(await a.call("release", [kept])).toBe(S.OK);
        expect(await a.call("release", [kept])).toBe(-S.ALREADY_RELEASED);
      });
    });

    describe("bad input", () => {
      const cases: [string, number[], number, string][] = [
        ["tryEmptyKey", [], S.INVALID_ARGUMENT, "key must not be empty"],
        ["tryLongKey", [S.MAX_KEY_BYTES + 1], S.INVALID_ARGUMENT, `key is ${S.MAX_KEY_BYTES + 1} bytes of UTF-8; the maximum is ${S.MAX_KEY_BYTES}`],
        ["tryInvalidUtf8", [], S.INVALID_ARGUMENT, "key is not valid UTF-8"],
        ["tryTtl", [0], S.INVALID_ARGUMENT, "ttlMs must be > 0, got 0"],
        ["tryTtl", [-5], S.INVALID_ARGUMENT, "ttlMs must be > 0, got -5"],
        ["tryTtl", [S.MAX_TTL_MS + 1], S.INVALID_ARGUMENT, `ttlMs must be at most ${S.MAX_TTL_MS} (24 h), got ${S.MAX_TTL_MS + 1}`],
        ["tryBadPointer", [], S.INVALID_MEMORY, "key (ptr 2147483632, len 16) lies outside guest memory"],
        ["tryBadFlags", [], S.INVALID_ARGUMENT, "has unknown bits"],
        ["statusBadBuffer", [], S.INVALID_MEMORY, "buffer (ptr"],
        ["lastErrorBadBuffer", [], S.INVALID_MEMORY, "buffer (ptr"],
        ["releaseForged", [], S.INVALID_HANDLE, "was not issued to this guest, or is stale"],
        ["releaseZero", [], S.INVALID_HANDLE, "handle 0 is not a handle"],
        ["releaseNegative", [], S.INVALID_HANDLE, "handle -5 is not a handle"],
      ];

      it.each(cases)("%s(%j) returns -%i and the guest reads a message naming the fault", async (name, args, code, message) => {
        const a = await guest();
        expect(await a.call(name, args)).toBe(-code);
        const traced = log.messages().filter((m) => m.startsWith(`guest: error ${code}: `));
        expect(traced.length).toBeGreaterThan(0);
        if (name !== "lastErrorBadBuffer") expect(traced.at(-1)).toContain(message);
        expect(locks.heldCount).toBe(0);
        expect(await a.call("add", [1, 1])).toBe(2); // the guest carries on
      });

      it("accepts a key of exactly the maximum size", async () => {
        const a = await guest();
        expect(await a.call("tryLongKey", [S.MAX_KEY_BYTES])).toBeGreaterThan(0);
      });

      it("rejects an owner buffer outside memory, and a released handle after many new locks", async () => {
        const a = await guest();
        const h = (await a.call("hold", [20, 10_000, S.FLAG_KEEP])) as number;
        expect(await a.call("ownerBadBuffer", [h])).toBe(-S.INVALID_MEMORY);
        expect(await a.call("release", [h])).toBe(S.OK);
        // Slots are not reused for ~65k acquisitions: the old handle still reads as released,
        // and never reaches any of the new locks.
        const kept: number[] = [];
        for (let i = 0; i < 70; i++) kept.push((await a.call("hold", [100 + i, 10_000, S.FLAG_KEEP])) as number);
        expect(kept).not.toContain(h);
        expect(await a.call("release", [h])).toBe(-S.ALREADY_RELEASED);
        for (const k of kept) expect(await a.call("release", [k])).toBe(S.OK);
      });

      it("rejects an unknown export and non-i32 arguments without disturbing the guest", async () => {
        const a = await guest();
        await expect(a.call("nope")).rejects.toMatchObject({ code: "UNKNOWN_EXPORT" });
        await expect(a.call("add", [1.5, 2])).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
        expect(await a.call("add", [1, 2])).toBe(3);
      });
    });
  });

  describe("auto-release, AssemblyScript guest", () => {
    it("releases every lock, kept ones too, when a call traps, and logs the abort with file and line", async () => {
      const a = await guest();
      await a.call("hold", [12, 60_000, S.FLAG_KEEP]);
      await expect(a.call("holdTrap", [13, 60_000])).rejects.toMatchObject({ code: "GUEST_TRAP" });
      expect(await held("test:k12")).toBe(false);
      expect(await held("test:k13")).toBe(false);
      const abort = log.lines.find((l) => l.msg.startsWith("guest abort:"))!;
      expect(abort.msg).toContain("boom in holdTrap");
      expect(abort).toMatchObject({ file: "test/guests/locker.ts", plugin: "test", export: "holdTrap" });
      expect(abort.line).toBeGreaterThan(0);
      expect(await a.call("add", [2, 3])).toBe(5); // restarted with fresh memory
    });

    it("says the place of an abort is unknown when the guest passes none (a release build), never null:0:0", async () => {
      const a = await guest();
      const err = await a.call("holdAbort", [19, 60_000]).catch((e: unknown) => e as Error);
      expect(err).toMatchObject({ code: "GUEST_TRAP" });
      expect((err as Error).message).toContain("boom in holdAbort at an unknown place");
      expect((err as Error).message).not.toContain("null:0:0");
      const line = log.lines.find((l) => l.msg.startsWith("guest abort: boom in holdAbort"))!;
      expect(line.msg).toContain("at an unknown place (the guest was built without file and line info");
      expect(line).not.toHaveProperty("file");
      expect(await held("test:k19")).toBe(false);
    });

    it("names memory_limit_mib when a guest runs out of memory", async () => {
      const a = await guest({ memoryLimitMib: 1 });
      const err = await a.call("exhaustMemory").catch((e: unknown) => e as Error);
      expect(err).toMatchObject({
        code: "GUEST_TRAP",
        message: expect.stringContaining("it had used all of its memory, memory_limit_mib = 1 for plugin test"),
      });
      expect(log.messages().some((m) => m.startsWith("guest trapped: ") && m.includes("memory_limit_mib = 1"))).toBe(true);
      expect(await a.call("add", [2, 3])).toBe(5); // restarted with fresh memory
    });

    it("releases locks when a call hits unreachable", async () => {
      const a = await guest();
      await expect(a.call("holdUnreachable", [14, 60_000])).rejects.toMatchObject({ code: "GUEST_TRAP" });
      expect(await held("test:k14")).toBe(false);
    });

    it("releases kept locks when the guest is closed", async () => {
      const a = await startGuest("locker", locks, log.logger, { runtime });
      await a.call("hold", [18, 60_000, S.FLAG_KEEP]);
      await a.close();
      expect(await held("test:k18")).toBe(false);
      await expect(a.call("add", [1, 2])).rejects.toMatchObject({ code: "CLOSED" });
    });
  });

  describe("bad input, AssemblyScript guest", () => {
    it("takes no lock it cannot give a handle for: the 65,536th is refused before it is taken", async () => {
      // 65,536 lock calls in one guest call: at a loaded machine's pace (~0.2 ms a call in the
      // worker runtime) that is over the suite's 5 s call limit, which is not what this tests.
      const a = await guest({ callTimeoutMs: 240_000 });
      // 65,535 handles (16 bits, 0 excluded) are the most a guest can hold at once.
      expect(await a.call("holdMany", [65_536, 300_000])).toBe(-(65_535 * 100 + S.INVALID_ARGUMENT));
      expect(a.heldLocks).toBe(65_535);
      expect(locks.heldCount).toBe(65_535);
      expect(await held("test:m65535")).toBe(false);
      await a.close();
      expect(locks.heldCount).toBe(0);
    }, 300_000);

    it("caps guest memory at the plugin's limit", async () => {
      const a = await guest({ memoryLimitMib: 1 });
      const before = (await a.call("growMemory", [0])) as number;
      expect(await a.call("growMemory", [16])).toBe(-1); // 16 more pages would pass 1 MiB
      expect(await a.call("growMemory", [16 - before])).toBe(before);
      expect(await a.call("growMemory", [1])).toBe(-1);
    });
  });

  describe("a host that guests cannot break", () => {
    it("caps what one call may trace, and says how much it dropped", async () => {
      const a = await guest();
      await a.call("traceFlood", [10_000]);
      await a.call("noop");
      const lines = log.messages().filter((m) => m.startsWith("guest: "));
      expect(lines.filter((m) => m.startsWith("guest: flood "))).toHaveLength(100);
      expect(lines).toContain("guest: (9900 more trace lines dropped: at most 100 per call)");
    });

    it("refuses a call its export cannot take, without trapping or restarting the guest", async () => {
      const a = await guest();
      const h = (await a.call("hold", [30, 60_000, S.FLAG_KEEP])) as number;
      await expect(a.call("wide", [5])).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("the host cannot pass i64") });
      await expect(a.call("add", [1])).rejects.toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringContaining("takes 2 argument(s), got 1") });
      expect(await held("test:k30")).toBe(true); // no restart: the kept lock survived
      expect(await a.call("release", [h])).toBe(S.OK);
    });

    it("reports LOST for fence and owner once a lease has ended", async () => {
      const a = await guest();
      const h = (await a.call("hold", [31, 50, S.FLAG_KEEP])) as number;
      expect(await a.call("fence", [h])).toBe(1n);
      await new Promise((r) => setTimeout(r, 80));
      expect(await a.call("fence", [h])).toBe(BigInt(-S.LOST));
      expect(await a.call("ownerLen", [h])).toBe(-S.LOST);
      expect(await a.call("release", [h])).toBe(-S.LOST);
    });
  });

  describe("races with the backend", () => {
    it("keeps the handle when a release fails, so the guest can retry", async () => {
      const { backend, inner, faults } = faultyBackend();
      const service = new LockService(backend, { node: "n" });
      const a = await startGuest("locker", service, log.logger, { runtime });
      const h = (await a.call("hold", [40, 60_000, S.FLAG_KEEP])) as number;
      faults.failReleases = 1;
      expect(await a.call("release", [h])).toBe(-S.BACKEND_UNAVAILABLE);
      expect(inner.size).toBe(1);
      expect(await a.call("release", [h])).toBe(S.OK);
      expect(inner.size).toBe(0);
      await a.close();
      await service.close();
    });
  });
});
