// The example plugins' unit tests under node:test, as their authors would write them with
// lockhost/testing (docs/guests.md "Testing a guest"): lockhost/testing loads without vitest.
// Run by testing-node.test.ts: node --test test/node/examples.test.mjs (after npm run build).
import assert from "node:assert/strict";
import { test } from "node:test";
import { loadGuest } from "lockhost/testing";

test("report.wasm skips the tick while another node holds its lock", async (t) => {
  const guest = await loadGuest("plugins/guests/build/report.wasm");
  t.after(() => guest.close());
  await guest.call("run");
  assert.equal(guest.logs.at(-1)?.msg, "report: generated with fence 1 (total 500500)");
  await guest.hold("daily-report", { ttlMs: 10_000 });
  await guest.call("run");
  assert.equal(guest.logs.at(-1)?.msg, "report: lock busy, another node has it");
  guest.clock.advance(10_000);
  await guest.call("run");
  assert.equal(guest.logs.at(-1)?.msg, "report: generated with fence 3 (total 500500)");
});

for (const name of ["rust-fenced", "c-fenced"]) {
  test(`${name}.wasm writes with a fence the ledger has not seen`, async (t) => {
    const guest = await loadGuest(`plugins/guests/build/${name}.wasm`, { globalKeys: ["ledger"] });
    t.after(() => guest.close());
    assert.equal(await guest.call("fencedWrite", [5]), 5n);
    assert.equal(await guest.call("staleWrite", [1]), -1n);
    await guest.hold("ledger", { global: true });
    assert.equal(await guest.call("fencedWrite", [1]), -1000n);
  });
}
