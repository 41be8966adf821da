// lockhost/testing's loadGuest, in every runtime this Node has: a guest loaded as the host loads
// its plugin (the entry checked by the config schema), its exports called, contention made by a
// key the test holds (in the guest's scope or global), leases ended by the backend's clock, its
// log read as data, and everything closed after. The example plugins' own tests, written with it
// as a plugin author would, are examples-guests.test.ts (vitest) and node/examples.test.mjs (node:test).
import { describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { loadGuest, OTHER_NODE, type LoadGuestOptions, type TestGuest } from "../testing/index.js";
import { GUEST_RUNTIMES } from "./support/guest.js";
import { guestWasm } from "./support/guests.js";
import { sleep } from "./support/until.js";

describe.each(GUEST_RUNTIMES)("%s runtime", (isolation) => {
  const load = async (wasm: string, options: LoadGuestOptions = {}): Promise<TestGuest> => loadGuest(wasm, { isolation, ...options });
  const example = (name: string) => guestWasm(name, "example");

  it("loads a plugin, calls its exports and reads its log lines, the guest's own apart from the host's", async () => {
    await using guest = await load(example("report"));
    expect(guest).toMatchObject({ plugin: "report", runtime: isolation });
    expect(await guest.call("run")).toBeUndefined();
    expect(guest.logs.filter((l) => l.guest)).toEqual([
      { level: "info", msg: "report: generated with fence 1 (total 500500)", guest: true, fields: { plugin: "report" } },
    ]);
    expect(guest.heldLocks).toBe(0);
  });

  it("passes strings both ways, and gives the guest the host functions its entry grants", async () => {
    const hostFunctions = { billing: { echo: (input: Uint8Array) => input } };
    await using guest = await load(guestWasm("rust-sdk"), { name: "billing", functions: ["billing"], hostFunctions });
    expect(await guest.callString("lockhost_schedules_utf8")).toBe("# the SDK guest's jobs\ntick 5s\nreport 0 3 * * *\n");
    expect(await guest.call("greet", ["wörld", 2])).toBe(6);
    expect(await guest.call("echo", ["héllo"])).toBe(6);
    expect(guest.logs.filter((l) => l.guest).map((l) => [l.level, l.msg])).toEqual([
      ["info", "hello wörld x2"],
      ["info", "echo héllo (6)"],
    ]);
  });

  it("makes the guest see contention on a key the test holds in the plugin's scope, until it is released", async () => {
    await using guest = await load(guestWasm("rust-fenced", "example"), { name: "jobs" });
    const lease = await guest.hold("daily-report");
    expect(lease.name).toBe("jobs:daily-report");
    expect(await guest.call("run")).toBe(0);
    expect(await guest.locks.status("daily-report", { scope: { plugin: "jobs" } })).toMatchObject({ held: true, holders: [{ node: OTHER_NODE }] });
    await guest.locks.release(lease);
    expect(await guest.call("run")).toBe(1);
  });

  it("holds a global key, as a guest's FLAG_GLOBAL names it", async () => {
    await using guest = await load(example("c-fenced"), { globalKeys: ["ledger"] });
    await guest.hold("ledger", { global: true });
    expect(await guest.call("fencedWrite", [5])).toBe(-1000n);
    await guest.hold("catalog", { kind: "rw", mode: "exclusive" });
    expect(await guest.call("shared")).toBe(0);
  });

  it("ends a lease on the backend when the clock is advanced past its TTL: the test's, and one the guest kept", async () => {
    await using guest = await load(guestWasm("locker"));
    await guest.hold("k1", { ttlMs: 10_000 });
    expect(await guest.call("hold", [1, 10_000, 0])).toBe(0);
    // Real time runs on too: 9 s leave the lease a second, whatever the load.
    guest.clock.advance(9_000);
    expect(await guest.call("hold", [1, 10_000, 0])).toBe(0);
    guest.clock.advance(1_000);
    expect(await guest.call("hold", [1, 10_000, 0])).toBeGreaterThan(0);
    // The guest keeps k2 (FLAG_KEEP) past its call; once its TTL has passed, its renewal is refused and the key is free.
    const handle = (await guest.call("hold", [2, 5_000, S.FLAG_KEEP])) as number;
    expect(guest.heldLocks).toBe(1);
    await expect(guest.hold("k2")).rejects.toMatchObject({ code: "CONTENDED", message: "hold: locker:k2 is held already" });
    guest.clock.advance(5_000);
    expect(await guest.hold("k2")).toBeTruthy();
    expect(await guest.call("renew", [handle, 5_000])).toBeLessThan(0);
    expect(guest.clock.advancedMs).toBe(15_000);
    expect(() => guest.clock.advance(-1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
  });

  it("gives a guest waiting for a key the test holds the key once the test releases it", async () => {
    await using guest = await load(guestWasm("lifecycle"));
    const lease = await guest.hold("k1");
    const waiting = guest.call("acquireKey", [1, 10_000, 20_000, 0]);
    await sleep(200);
    await guest.locks.release(lease);
    // Within its wait of 20 s (woken by the release, or at worst by the waiting's polling), not at its end.
    expect(await waiting).toBeGreaterThan(0);
    expect(guest.logs.filter((l) => l.guest)).toEqual([]);
  });

  it("closes once: the guest's kept locks and the test's are released, later calls reject with CLOSED", async () => {
    const guest = await load(guestWasm("locker"));
    expect(await guest.call("hold", [1, 10_000, S.FLAG_KEEP])).toBeGreaterThan(0);
    await guest.hold("k2");
    await Promise.all([guest.close(), guest.close()]);
    await guest[Symbol.asyncDispose]();
    expect(guest.heldLocks).toBe(0);
    await expect(guest.call("noop")).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("loads an Extism PDK plugin the same way (its ABI told by its imports): input bytes in, output out, the test's key contended", async () => {
    await using guest = await load(guestWasm("extism-locks"), { name: "pdk" });
    const tryKey = async () => JSON.parse(await guest.callString("call_try", ['{"key":"k","ttl_ms":5000}'])) as { result: number };
    expect((await tryKey()).result).toBeGreaterThan(0);
    expect(guest.heldLocks).toBe(0); // released when the call returned
    const lease = await guest.hold("k");
    expect(lease.name).toBe("pdk:k");
    expect((await tryKey()).result).toBe(S.TRY_CONTENDED);
  });

  it("checks its options as the config schema checks a [[plugins]] entry, and refuses what the host would not load", async () => {
    await expect(load(example("report"), { memoryLimitMib: 0 })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("memoryLimitMib must be an integer from 1 to 4096, got 0"),
    });
    await expect(load(example("report"), { name: "Report" })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("name must be 1 to 64 of lowercase letters"),
    });
    await expect(load(guestWasm("noversion"))).rejects.toMatchObject({ code: "ABI_UNSUPPORTED" });
    await expect(load("nope/x.wasm")).rejects.toMatchObject({ code: "CONFIG_INVALID", message: expect.stringContaining(`nope/x.wasm" does not exist`) });
  });
});
