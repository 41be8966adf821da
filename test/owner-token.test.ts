// The owner tokens the LockService mints: random version-4 UUIDs in crypto.randomUUID's format.
import { describe, expect, it } from "vitest";
import { mintOwner } from "../host/locking/owner-token.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe("owner tokens", () => {
  it("are version-4 UUIDs, all different, across many refills of the entropy pool", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 5_000; i++) {
      const owner = mintOwner();
      expect(owner).toMatch(UUID_V4);
      seen.add(owner);
    }
    expect(seen.size).toBe(5_000);
  });

  it("use every hex digit in the random positions", () => {
    const digits = new Map<string, number>();
    for (let i = 0; i < 2_000; i++) for (const c of mintOwner().slice(24)) digits.set(c, (digits.get(c) ?? 0) + 1);
    // 24,000 digits: each of 16 expected ~1,500 times.
    expect(digits.size).toBe(16);
    for (const n of digits.values()) expect(n).toBeGreaterThan(1_200);
  });

  it("are what a lease gets when the caller names no owner", async () => {
    const locks = new LockService(new MemoryBackend(), { node: "n" });
    const a = (await locks.tryLock("a", { ttlMs: 1_000 }))!;
    const b = (await locks.tryLock("b", { ttlMs: 1_000 }))!;
    expect(a.owner).toMatch(UUID_V4);
    expect(b.owner).not.toBe(a.owner);
    await locks.close();
  });
});
