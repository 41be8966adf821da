// The example ledger service: writes carry a fence, a stale one is refused with 409, and the
// balance holds only accepted writes. Also started alone, as `node` would run it.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { startLedgerService, type LedgerService } from "../examples/ledger-service.js";
import { fenced, send } from "./support/fenced-request.js";

const services: LedgerService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

async function ledger(): Promise<{ service: LedgerService; lines: string[] }> {
  const lines: string[] = [];
  const service = await startLedgerService({ log: (line) => void lines.push(line) });
  services.push(service);
  return { service, lines };
}

describe("the ledger service", () => {
  it("accepts fenced entries, refuses a stale fence with 409, and counts only accepted entries", async () => {
    const { service, lines } = await ledger();
    const post = (fence: number, amount: number) => send("POST", `${service.url}/entries`, fenced("global:ledger", fence), { amount });

    expect(await post(1, 10)).toEqual({ status: 200, body: { balance: 10, fence: "1" } });
    expect(await post(2, 5)).toEqual({ status: 200, body: { balance: 15, fence: "2" } });
    expect(await post(1, 1000)).toEqual({
      status: 409,
      body: { error: "stale_fence", lock: "global:ledger", fence: "1", last_accepted: "2" },
    });
    expect(await send("GET", `${service.url}/balance`)).toEqual({ status: 200, body: { balance: 15, entries: 2 } });
    expect(service.balance()).toBe(15);
    expect(service.entries()).toEqual([
      { amount: 10, lock: "global:ledger", lockKind: "mutex", fence: 1n },
      { amount: 5, lock: "global:ledger", lockKind: "mutex", fence: 2n },
    ]);
    expect(lines).toEqual([
      "accepted 10 under global:ledger with fence 1; balance 10",
      "accepted 5 under global:ledger with fence 2; balance 15",
      "refused stale fence 1 for global:ledger (last accepted 2)",
    ]);
  });

  it("refuses an unfenced write (428) and a bad entry (400) without spending the fence", async () => {
    const { service } = await ledger();
    expect((await send("POST", `${service.url}/entries`, {}, { amount: 1 })).status).toBe(428);
    expect((await send("POST", `${service.url}/entries`, fenced("global:ledger", 3), { amount: "lots" })).status).toBe(400);
    expect((await send("POST", `${service.url}/entries`, fenced("global:ledger", 3), { amount: 7 })).status).toBe(200);
    expect(service.balance()).toBe(7);
  });

  it("opens only to its own lock: a fence of any other lock is refused 403", async () => {
    const { service } = await ledger();
    expect(await send("POST", `${service.url}/entries`, fenced("billing:mine", 99), { amount: 1 })).toEqual({
      status: 403,
      body: { error: "lock_not_accepted", lock: "billing:mine", reason: "this resource accepts fences of other locks" },
    });
    expect(service.balance()).toBe(0);
  });

  it("runs alone and prints its URL", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", join(import.meta.dirname, "..", "examples", "ledger-service.ts")], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let out = "";
        child.stdout.on("data", (d: Buffer) => {
          out += d.toString();
          const line = out.split("\n")[0];
          if (out.includes("\n") && line !== undefined) resolve(line.trim());
        });
        child.once("exit", (code) => reject(new Error(`the service exited (${code}) before printing its URL: ${out}`)));
      });
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect((await send("POST", `${url}/entries`, fenced("global:ledger", 1), { amount: 3 })).status).toBe(200);
      expect(await send("GET", `${url}/balance`)).toEqual({ status: 200, body: { balance: 3, entries: 1 } });
    } finally {
      child.kill("SIGTERM");
      await new Promise((r) => (child.exitCode === null ? child.once("exit", r) : r(undefined)));
    }
  });
});
