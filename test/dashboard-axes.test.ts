// The dashboard's axes and histogram buckets, as pure functions (the page's own modules, run in
// Node): round ticks with units from zero up past the largest value, never "1 / 1 / 0".
import { describe, expect, it } from "vitest";
import { countScale, durationScale, niceAxis, niceStep, timeTicks } from "../host/admin/dashboard/client/axes.js";
import { formatMs, trim } from "../host/admin/dashboard/client/format.js";
import { bucketLabel, bucketOf, edgeTicks, EDGES_MS, histogram } from "../host/admin/dashboard/client/histogram.js";

describe("niceAxis", () => {
  it.each([
    [1, {}, [0, 0.5, 1]],
    [0, {}, [0, 0.5, 1]],
    [0, { integer: true }, [0, 1]],
    [1, { integer: true }, [0, 1]],
    [5, { integer: true }, [0, 2, 4, 6]],
    [7, {}, [0, 2, 4, 6, 8]],
    [110, {}, [0, 50, 100, 150]],
    [1234, {}, [0, 500, 1000, 1500]],
    [0.3, {}, [0, 0.1, 0.2, 0.3]],
    [250, { integer: true }, [0, 100, 200, 300]],
  ] as const)("of %s %j: %j", (max, options, ticks) => {
    const axis = niceAxis(max, options);
    expect(axis.ticks).toEqual(ticks);
    expect(axis.max).toBe(ticks.at(-1));
  });

  it("always starts at 0, covers the largest value, and steps evenly by 1, 2 or 5 times a power of ten", () => {
    for (let max = 0.001; max < 1e7; max *= 1.37) {
      for (const integer of [false, true]) {
        const { ticks } = niceAxis(max, { integer });
        expect(ticks[0]).toBe(0);
        expect(ticks.at(-1)!).toBeGreaterThanOrEqual(max);
        expect(ticks.length).toBeGreaterThanOrEqual(2);
        expect(ticks.length).toBeLessThanOrEqual(6);
        const step = ticks[1]!;
        expect(step / 10 ** Math.floor(Math.log10(step))).toSatisfy((m: number) => [1, 2, 5].some((n) => Math.abs(m - n) < 1e-9));
        if (integer) expect(ticks.every(Number.isInteger)).toBe(true);
        const { axis, labels } = durationScale(max);
        expect(axis.max).toBeGreaterThanOrEqual(max);
        expect(new Set(labels).size).toBe(labels.length);
        expect(new Set(labels.map((l) => l.split(" ")[1])).size).toBe(1);
        for (const label of labels) expect(label).toMatch(/^\d+(\.\d+)? (ms|s|min|h)$/);
      }
    }
  });

  it("labels durations in one unit, chosen by the top tick", () => {
    const labels = (maxMs: number): readonly string[] => durationScale(maxMs).labels;
    expect(labels(0)).toEqual(["0 ms", "0.5 ms", "1 ms"]);
    expect(labels(1)).toEqual(["0 ms", "0.5 ms", "1 ms"]);
    expect(labels(110)).toEqual(["0 ms", "50 ms", "100 ms", "150 ms"]);
    expect(labels(1234)).toEqual(["0 s", "0.5 s", "1 s", "1.5 s"]);
    expect(labels(75_000)).toEqual(["0 s", "20 s", "40 s", "60 s", "80 s"]);
    expect(labels(300_000)).toEqual(["0 min", "2 min", "4 min", "6 min"]);
    expect(durationScale(300_000).axis.ticks).toEqual([0, 120_000, 240_000, 360_000]);
    expect(countScale(5, "/s").labels).toEqual(["0/s", "2/s", "4/s", "6/s"]);
    expect(countScale(2500).labels).toEqual(["0", "1,000", "2,000", "3,000"]);
  });

  it("steps", () => {
    expect([0.03, 0.25, 1, 1.2, 3, 7, 42].map(niceStep)).toEqual([0.05, 0.5, 1, 2, 5, 10, 50]);
  });

  it("labels the time axis a minute apart", () => {
    expect(timeTicks(300).map((t) => t.label)).toEqual(["-5 min", "-4 min", "-3 min", "-2 min", "-1 min", "now"]);
  });
});

describe("durations", () => {
  it("are written with a unit and at most three digits", () => {
    expect([0, 0.25, 1, 850, 1000, 12_500, 59_000, 60_000, 90_000, 7_200_000].map(formatMs)).toEqual([
      "0 ms",
      "0.25 ms",
      "1 ms",
      "850 ms",
      "1 s",
      "12.5 s",
      "59 s",
      "1 min",
      "1.5 min",
      "2 h",
    ]);
    expect(trim(8.0234)).toBe("8.02");
  });

  it("fall in 1-2-5 buckets from 1 ms to 5 min, each labelled, the axis at powers of ten", () => {
    expect([0, 0.9, 1, 1.5, 2, 999, 1000, 299_999, 300_000, 1e9].map(bucketOf)).toEqual([0, 0, 1, 1, 2, 9, 10, 15, 16, 16]);
    expect([0, 1, EDGES_MS.length].map(bucketLabel)).toEqual(["< 1 ms", "1 ms – 2 ms", "≥ 5 min"]);
    expect(edgeTicks().map((t) => t.label)).toEqual(["1 ms", "10 ms", "100 ms", "1 s", "10 s", "1 min", "5 min"]);
    const now = 1_000_000;
    const counts = histogram(
      [
        [now - 1, 0.5],
        [now - 2, 3],
        [now - 3, 4],
        [now - 10_000, 3],
      ],
      now,
      5_000,
    );
    expect(counts[0]).toBe(1);
    expect(counts[2]).toBe(2);
    expect(counts.reduce((a, b) => a + b)).toBe(3);
  });
});
