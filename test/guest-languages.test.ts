// Guests in Rust and C, in every runtime this Node has: the example plugins built from
// plugins/guests/rust and plugins/guests/c (a scheduled job under a lock, a fenced write,
// read/write locks and a semaphore), and WASI basics (`wasi = true`) for a C guest on
// wasi-libc and a Rust guest on wasm32-wasi std. The ABI's cases per language (bad input,
// outcomes, fences) run in guest-runtime.test.ts against each language's twin of one guest.
// The SDK guests (test/guests/rust/sdk, test/guests/c/sdk.c) take string arguments as UTF-8
// (ptr, len), declare their schedules as UTF-8, and use config, log, a host function and the
// capability query through the SDKs' wrappers.
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { parseConfig } from "../host/config/load.js";
import type { HostFunctions } from "../host/runtime/capabilities/functions.js";
import { expandScheduled } from "../host/scheduler/declared.js";
import { startGuest, GUEST_RUNTIMES, type TestGuestOptions } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";

const INFO = 30; // pino's level numbers
const WARN = 40;
const ERROR = 50;

/** The embedder's function the SDK guests call: bytes back as they came, or a throw for a leading "!". */
const functions: HostFunctions = {
  billing: { echo: (input) => (input.byteLength > 0 && input[0] === 0x21 ? Promise.reject(new Error("no bangs")) : Promise.resolve(input)) },
};

describe.each(GUEST_RUNTIMES)("%s runtime", (runtime) => {
  const f = guestFixture();

  describe.each(["rust", "c"])("the %s example plugin", (lang) => {
    const example = () => startGuest(`${lang}-fenced`, f.locks, f.log.logger, { runtime, kind: "example", globalKeys: ["ledger"] }).then(f.track);

    it("runs its scheduled job under a lock, and finds the lock held by another holder contended", async () => {
      const a = await example();
      expect(await a.call("run")).toBe(1);
      const other = await f.locks.tryLock("daily-report", { ttlMs: 10_000, scope: { plugin: "test" } });
      expect(other).toBeTruthy();
      expect(await a.call("run")).toBe(0);
      await f.locks.release(other!);
      expect(await a.call("run")).toBe(1);
      expect(await a.call("lostCount")).toBe(0);
    });

    it("writes with its lock's fence, and the resource refuses a stale fence", async () => {
      const a = await example();
      expect(await a.call("fencedWrite", [5])).toBe(5n);
      expect(await a.call("fencedWrite", [3])).toBe(8n);
      expect(await a.call("staleWrite", [1])).toBe(-1n); // fence 1 was used by the first write
      expect(await a.call("fencedWrite", [1])).toBe(9n);
    });

    it("shares a read lock between readers, refuses a writer meanwhile, and counts a semaphore's permits", async () => {
      const a = await example();
      expect(await a.call("shared")).toBe(1);
      expect(f.locks.heldCount).toBe(0); // every lock was dropped, so released
    });
  });

  describe.each([
    ["Rust", "rust-sdk", "the allocator grows"],
    ["C", "c-sdk", "a static arena of 4096 bytes"],
  ])("the %s SDK guest", (_lang, wasm, allocator) => {
    const sdkGuest = (options: TestGuestOptions = {}) =>
      startGuest(wasm, f.locks, f.log.logger, {
        runtime,
        plugin: "billing",
        functions: ["billing"],
        hostFunctions: functions,
        config: { ledger_url: "http://ledger.local" },
        logLevel: "info",
        ...options,
      }).then(f.track);
    const guestLines = () =>
      f.log
        .messages()
        .filter((m) => m.startsWith("guest: "))
        .map((m) => m.slice(7));

    it("receives string arguments as UTF-8 (ptr, len), two i32 parameters each, an empty one as (0, 0)", async () => {
      const g = await sdkGuest();
      expect(g.exportSignature("greet")?.params).toEqual(["i32", "i32", "i32"]);
      expect(await g.call("greet", ["wörld ✓", 3])).toBe(Buffer.byteLength("wörld ✓"));
      expect(await g.call("concat", ["", "b"])).toBe(1);
      expect(await g.call("concat", ["a\u0000z", "é".repeat(1000)])).toBe(3 + 2000);
      expect(guestLines().slice(0, 2)).toEqual(["hello wörld ✓ x3", "+b"]);
      // Every call's strings are freed after it: 20 calls of 1,000 bytes each pass through the C arena of 4 KiB.
      for (let i = 0; i < 20; i++) expect(await g.call("greet", ["y".repeat(1000), i])).toBe(1000);
    });

    it(`refuses arguments that do not make the export's parameters, naming them; a string over ${allocator} ${
      wasm === "c-sdk" ? "fails the call like a trap" : "arrives"
    }`, async () => {
      const g = await sdkGuest();
      await expect(g.call("greet", ["x"])).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message:
          "export greet(i32, i32, i32) of plugin billing takes 3 parameter(s), got 1 argument(s) that make 2 (a string is 2 of them, ptr and len: " +
          "this guest receives UTF-8 as (ptr, len))",
      });
      const long = g.call("greet", ["z".repeat(5000), 1]);
      if (wasm === "c-sdk") {
        await expect(long).rejects.toMatchObject({ code: "GUEST_TRAP", message: expect.stringContaining("lockhost_alloc_utf8(5000) returned 0") });
      } else {
        expect(await long).toBe(5000);
      }
      expect(await g.call("greet", ["after", 2])).toBe(5);
    });

    it("declares its schedules as UTF-8: a short [[scheduled]] entry runs each", async () => {
      const g = await sdkGuest();
      expect(g.exportSignature("lockhost_schedules_utf8")).toEqual({ params: [], results: ["i64"] });
      const config = parseConfig(`[[plugins]]\nname = "billing"\nwasm = "sdk.wasm"\n[[scheduled]]\nplugin = "billing"\nhint = "node_local"`, {
        source: "lockhost.toml",
        baseDir: "/srv",
        env: {},
      });
      const expanded = await expandScheduled(config, new Map([["billing", g]]));
      expect(expanded.map((s) => [s.id, s.export, s.schedule])).toEqual([
        ["billing.tick", "tick", { kind: "interval", everyMs: 5_000, text: "5s" }],
        ["billing.report", "report", { kind: "cron", expression: "0 3 * * *" }],
      ]);
      expect(await g.call("report")).toBe(2);
    });

    it("reads config, logs at each level, calls a host function (its reply read back whole) and asks for capabilities", async () => {
      const g = await sdkGuest();
      expect(await g.call("config", ["ledger_url"])).toBe("http://ledger.local".length);
      expect(await g.call("config", ["missing"])).toBe(-S.NOT_FOUND);
      expect(await g.call("echo", ["héllo"])).toBe(6);
      expect(await g.call("echo", ["!boom"])).toBe(-S.CALL_FAILED);
      expect(await g.call("capability", ["billing"])).toBe(1);
      expect(await g.call("capability", ["http"])).toBe(0);
      expect(await g.call("capability", ["config"])).toBe(1);
      expect(guestLines()).toEqual([
        "config ledger_url=http://ledger.local (length ok: true)",
        "config missing: NOT_FOUND (3)",
        "echo héllo (6)",
        "echo failed: CALL_FAILED (15): host function billing.echo failed: Error: no bangs",
        "capability billing: yes",
        "capability http: no",
        "capability config: yes",
      ]);
      await g.call("levels");
      // log_level = "info": the debug line costs nothing and is not logged.
      expect(f.log.lines.filter((l) => l.msg.startsWith("guest: level")).map((l) => [l.level, l.msg])).toEqual([
        [INFO, "guest: level info"],
        [WARN, "guest: level warn"],
        [ERROR, "guest: level error"],
      ]);
    });

    it("campaigns, proclaims, reads the leader's JSON, resigns, and takes a fair mutex through the SDK's wrappers", async () => {
      const g = await sdkGuest();
      const term = (await g.call("elect", ["main"])) as number;
      expect(term).toBeGreaterThan(0);
      const lines = guestLines();
      expect(lines.map((l) => (l.startsWith("leader ") ? "leader" : l))).toEqual([
        "campaign again: timed out",
        "proclaim: ok",
        "leader",
        "resign: ok",
        "leader",
        "fair: held",
      ]);
      const leaders = lines.filter((l) => l.startsWith("leader ")).map((l) => JSON.parse(l.slice(7)));
      expect(leaders[0]).toMatchObject({ key: "main", held: true, plugin: "billing", value: "v2", term });
      expect(leaders[1]).toEqual({ key: "main", held: false });
      // A new leadership's term is higher; every lock was resigned or released.
      expect(await g.call("elect", ["main"])).toBeGreaterThan(term);
      expect(f.locks.heldCount).toBe(0);
    });
  });

  describe("WASI basics (wasi = true)", () => {
    describe.each([
      ["C on wasi-libc", "c-printf", "took k1 with fence 1, 100.0% done", "a warning from C", "fopen failed as expected"],
      ["Rust on wasm32-wasi std", "rust-wasi-std", "took k1 with fence 1", 'status {"key":"test:k1","held":true', "open failed as expected"],
    ])("%s", (_name, wasm, stdout, stderr, opened) => {
      it("loads and runs: stdout at info and stderr at warn in the plugin's log, with clocks and random bytes", async () => {
        const a = await startGuest(wasm, f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
        expect(await a.call("report", [1])).toBe(1n);
        expect(f.log.messages()).toContain(`guest: ${stdout}`);
        const warn = f.log.lines.find((l) => l.msg.startsWith(`guest: ${stderr}`));
        expect(warn?.level).toBe(WARN);
        expect(await a.call("sources")).toBe(1);
      });

      it("answers ENOSYS to a WASI call outside the stubbed set (no file system), and the call goes on", async () => {
        const a = await startGuest(wasm, f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
        expect(await a.call("openFile")).toBe(0);
        expect(f.log.messages().some((m) => m.startsWith(`guest: ${opened}`))).toBe(true);
      });

      it("refuses to load without wasi = true, naming the import and the key that would allow it", async () => {
        await expect(startGuest(wasm, f.locks, f.log.logger, { runtime })).rejects.toMatchObject({
          code: "ABI_UNSUPPORTED",
          message: expect.stringMatching(/imports wasi_snapshot_preview1\.\w+ \(WASI\), .*set wasi = true in its \[\[plugins\]\] entry/),
        });
      });
    });

    it("ends a call that calls proc_exit as a trap, releasing its locks, and restarts the guest", async () => {
      const a = await startGuest("c-printf", f.locks, f.log.logger, { runtime, wasi: true }).then(f.track);
      await expect(a.call("quit")).rejects.toMatchObject({ code: "GUEST_TRAP", message: expect.stringContaining("proc_exit(3)") });
      expect(await a.call("report", [2])).toBe(1n);
    });
  });
});
