import { describe, expect, it } from "vitest";
import { HandleTable } from "../host/runtime/handle-table.js";

describe("HandleTable", () => {
  it("issues distinct positive handles and resolves them", () => {
    const t = new HandleTable<string>();
    const hs = ["a", "b", "c"].map((v) => t.add(v));
    expect(new Set(hs).size).toBe(3);
    for (const h of hs) expect(h).toBeGreaterThan(0);
    expect(t.get(hs[1]!)).toBe("b");
    expect(t.size).toBe(3);
  });

  it("tells a double release from a forged or stale handle", () => {
    const t = new HandleTable<string>();
    const h = t.add("a");
    expect(t.remove(h)).toBe("a");
    expect(() => t.get(h)).toThrow(expect.objectContaining({ code: "ALREADY_RELEASED" }));
    expect(() => t.get(h + 1)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
    expect(() => t.get(0)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
    expect(() => t.get(-1)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
    expect(() => t.get(h ^ (1 << 16))).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
  });

  it("never lets an old handle reach the value that reuses its slot", () => {
    const t = new HandleTable<number>();
    const old = t.add(-1);
    t.remove(old);
    const seen = new Set<number>([old]);
    for (let i = 0; i < 10_000; i++) {
      const h = t.add(i);
      expect(seen.has(h)).toBe(false);
      seen.add(h);
      expect(() => t.get(old)).toThrow();
      t.remove(h);
    }
  });

  it("lists live entries only", () => {
    const t = new HandleTable<string>();
    const a = t.add("a");
    const b = t.add("b");
    t.remove(a);
    expect([...t.entries()]).toEqual([[b, "b"]]);
  });
});
