// Guests in Rust and C, in every runtime this Node has: the example plugins built from
// plugins/guests/rust and plugins/guests/c (a scheduled job under a lock, a fenced write,
// read/write locks and a semaphore), and WASI basics (`wasi = true`) for a C guest on
// wasi-libc and a Rust guest on wasm32-wasi std. The ABI's cases per language (bad input,
// outcomes, fences) run in guest-runtime.test.ts against each language's twin of one guest.
import { describe, expect, it } from "vitest";
import { startGuest, GUEST_RUNTIMES } from "./support/guest.js";
import { guestFixture } from "./support/guest-fixture.js";

const WARN = 40; // pino's level number

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
