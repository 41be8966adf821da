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

describe("HandleTable tombstones", () => {
  it("answers a released handle with its tombstone until its slot is reused", () => {
    const t = new HandleTable<string, number>();
    const h = t.add("a");
    expect(t.lookup(h)).toEqual({ live: true, value: "a" });
    t.remove(h, "handle", 3);
    expect(t.lookup(h)).toEqual({ live: false, tombstone: 3 });
    t.mark(h, 2);
    expect(t.lookup(h)).toEqual({ live: false, tombstone: 2 });
    const other = t.add("b");
    t.mark(other, 9); // live: marks only released handles
    expect(t.lookup(other)).toEqual({ live: true, value: "b" });
    expect(() => t.lookup(h + 7)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
    expect(() => t.lookup(0)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
  });

  it("drops the tombstone when the slot is reused, and the old handle is then INVALID_HANDLE", () => {
    const t = new HandleTable<number, number>();
    const hs: number[] = [];
    for (let i = 0; i < 65_535; i++) hs.push(t.add(i));
    t.remove(hs[5]!, "handle", 3);
    const reused = t.add(-1);
    expect(t.lookup(reused)).toEqual({ live: true, value: -1 });
    expect(() => t.lookup(hs[5]!)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
    t.mark(hs[5]!, 2); // stale: does nothing
    expect(t.lookup(reused)).toEqual({ live: true, value: -1 });
  });
});

describe("HandleTable reuse", () => {
  it("keeps a released handle ALREADY_RELEASED until every slot exists, and it never resolves again over 70,000 cycles", () => {
    const t = new HandleTable<number>();
    const old = t.add(-1);
    t.remove(old);
    const codeOf = (h: number): string => {
      try {
        t.get(h);
        return "resolved";
      } catch (err) {
        return (err as { code: string }).code;
      }
    };
    let reissued = 0;
    for (let i = 1; i <= 70_000; i++) {
      const h = t.add(i);
      if (h === old) reissued++;
      if (i % 1_000 === 0 || i === 100) {
        // Slot reuse starts only once all 65,535 slots exist.
        const code = codeOf(old);
        if (i < 65_535) expect(code).toBe("ALREADY_RELEASED");
        else expect(["ALREADY_RELEASED", "INVALID_HANDLE"]).toContain(code);
      }
      t.remove(h);
    }
    expect(reissued).toBe(0);
    expect(["ALREADY_RELEASED", "INVALID_HANDLE"]).toContain(codeOf(old));
    expect(t.size).toBe(0);
  });

  it("does not reissue a handle after the 2.1M acquisitions that used to wrap the generations", () => {
    const t = new HandleTable<number>();
    const old = t.add(-1);
    t.remove(old);
    let reissuedAt = -1;
    const cycles = 64 * 0x7fff + 1_000; // past where 64 slots x 32,767 generations wrapped
    for (let i = 0; i < cycles; i++) {
      const h = t.add(i);
      if (h === old && reissuedAt < 0) reissuedAt = i;
      t.remove(h);
    }
    expect(reissuedAt).toBe(-1);
    expect(() => t.get(old)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
  });

  it("holds up to 65,535 handles at once and refuses one more", () => {
    const t = new HandleTable<number>();
    const hs: number[] = [];
    for (let i = 0; i < 65_535; i++) hs.push(t.add(i));
    expect(new Set(hs).size).toBe(65_535);
    expect(() => t.add(-1)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    t.remove(hs[10]!);
    const h = t.add(99);
    expect(t.get(h)).toBe(99);
    expect(() => t.get(hs[10]!)).toThrow(expect.objectContaining({ code: "INVALID_HANDLE" }));
  });
});

describe("HandleTable.entries after slots are reused", () => {
  it("lists exactly the live handles, oldest first, however many slots exist", () => {
    const table = new HandleTable<string>();
    for (let i = 0; i < 70_000; i++) table.remove(table.add(`gone${i}`));
    const live = ["a", "b", "c"].map((v) => [table.add(v), v] as const);
    table.remove(table.add("d"));
    expect([...table.entries()]).toEqual(live.map(([h, v]) => [h, v]));
    expect(table.size).toBe(3);
    table.remove(live[1]![0]);
    expect([...table.entries()].map(([, v]) => v)).toEqual(["a", "c"]);
  });
});
