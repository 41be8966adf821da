// The example plugins' own unit tests, as their authors would write them with lockhost/testing's
// loadGuest under vitest (docs/guests.md "Testing a guest"); node/examples.test.mjs has the same
// under node:test. Each guest runs on a memory backend of its own; a key the test holds makes it
// see another node's lock.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadGuest } from "lockhost/testing";
import { startLedgerService, type LedgerService } from "../examples/ledger-service.js";

const built = (name: string): string => `plugins/guests/build/${name}.wasm`;

describe("report.wasm", () => {
  it("generates the report under its lock, and skips the tick while another node holds it", async () => {
    await using guest = await loadGuest(built("report"));
    await guest.call("run");
    expect(guest.logs.at(-1)?.msg).toBe("report: generated with fence 1 (total 500500)");
    const other = await guest.hold("daily-report");
    await guest.call("run");
    expect(guest.logs.at(-1)?.msg).toBe("report: lock busy, another node has it");
    await guest.locks.release(other);
  });
});

describe("ledger.wasm", () => {
  let ledger: LedgerService;
  beforeAll(async () => void (ledger = await startLedgerService()));
  afterAll(() => ledger.close());

  it("writes to the ledger with its lock's fence, and not while another node holds the lock", async () => {
    const http = { allowedHosts: ["127.0.0.1:*"], allowPrivateRanges: ["127.0.0.0/8"], methods: ["POST"] };
    await using guest = await loadGuest(built("ledger"), { config: { ledger_url: ledger.url }, http, globalKeys: ["ledger"] });
    await guest.call("run");
    expect(ledger.entries()).toMatchObject([{ amount: 100, lock: "global:ledger", fence: 1n }]);
    const other = await guest.hold("ledger", { global: true, ttlMs: 10_000 });
    await guest.call("run");
    expect(guest.logs.at(-1)).toMatchObject({ level: "info", msg: "ledger: lock busy, another writer has it" });
    guest.clock.advance(10_000); // the other writer's lease ends: its TTL has passed on the backend
    await guest.call("run");
    expect(ledger.entries().map((e) => e.fence)).toEqual([1n, 3n]);
    expect(other.fence).toBe(2);
  });
});

describe.each(["rust-fenced", "c-fenced"])("%s.wasm", (name) => {
  it("runs its job on one node only, and writes with a fence the ledger has not seen", async () => {
    await using guest = await loadGuest(built(name), { globalKeys: ["ledger"] });
    expect(await guest.call("run")).toBe(1);
    await guest.hold("daily-report");
    expect(await guest.call("run")).toBe(0);
    expect(await guest.call("fencedWrite", [5])).toBe(5n);
    expect(await guest.call("staleWrite", [1])).toBe(-1n);
    expect(await guest.call("shared")).toBe(1);
    expect(guest.heldLocks).toBe(0);
  });
});
