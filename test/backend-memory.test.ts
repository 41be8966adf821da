import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { backendContract } from "./support/backend-contract.js";

backendContract("memory", { create: () => new MemoryBackend() });

describe("memory backend", () => {
  const holder = { plugin: "p", node: "n" };

  it("says it is not distributed", () => {
    expect(new MemoryBackend().distributed).toBe(false);
  });

  it("decides expiry on its own clock, not the wall clock", async () => {
    let now = 1_000_000;
    const backend = new MemoryBackend({ now: () => now });
    const owner = randomUUID();
    await backend.acquire({ name: "k", owner, ttlMs: 100, holder });
    now += 99;
    expect((await backend.acquire({ name: "k", owner: randomUUID(), ttlMs: 100, holder })).acquired).toBe(false);
    now += 1;
    expect((await backend.acquire({ name: "k", owner: randomUUID(), ttlMs: 100, holder })).acquired).toBe(true);
  });

  it("reports integer ms times on its default clock (acquire, renew, status)", async () => {
    const backend = new MemoryBackend();
    const owner = randomUUID();
    for (let i = 0; i < 20; i++) {
      const got = await backend.acquire({ name: `k${i}`, owner, ttlMs: 10_000, holder });
      if (!got.acquired) throw new Error("not acquired");
      expect([got.acquiredAtMs, got.expiresAtMs].every(Number.isInteger)).toBe(true);
      const renewed = await backend.renew(`k${i}`, owner, 20_000);
      if (!renewed.ok) throw new Error("not renewed");
      expect(Number.isInteger(renewed.expiresAtMs)).toBe(true);
      const s = (await backend.status(`k${i}`))!;
      expect([s.acquiredAtMs, s.expiresAtMs, s.ttlRemainingMs].every(Number.isInteger)).toBe(true);
      await new Promise((r) => setTimeout(r, 1));
    }
  });

  it("sweeps expired entries of keys nobody touches again", async () => {
    let now = 0;
    const backend = new MemoryBackend({ now: () => now });
    for (let i = 0; i < 500; i++) await backend.acquire({ name: `old-${i}`, owner: "o", ttlMs: 10, holder });
    now = 1_000;
    for (let i = 0; i < 3_000; i++) await backend.acquire({ name: `new-${i}`, owner: "o", ttlMs: 1e6, holder });
    expect(backend.size).toBe(3_000);
  });
});
