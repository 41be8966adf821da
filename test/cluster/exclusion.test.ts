// Mutual exclusion and fencing across real host processes: three hosts, each with four worker
// guests hammering the same three global keys through the ABI, on one Redis and then on one
// PostgreSQL. Every critical section is logged (fence, enter, exit) to one O_APPEND file and
// the checker asserts no two sections on a key overlap and fences strictly increase per key.
// The memory backend (not shared between processes) is the control: there the checker must
// find overlaps, or it would prove nothing.
import { randomUUID } from "node:crypto";
import { afterAll, describe, expect, it } from "vitest";
import { databaseUrl, redisUrl } from "../support/servers.js";
import { dropPgTable, dropRedisPrefix } from "../support/cleanup.js";
import { checkExclusion } from "./exclusion-checker.js";
import { runHammer, type HammerOptions } from "./cluster.js";

const RUN = randomUUID().slice(0, 8);
const SHAPE = { nodes: 3, guestsPerNode: 4, keys: 3, durationMs: 3_000, holdMs: 2, ttlMs: 30_000 } as const;

describe("checkExclusion", () => {
  it("accepts well-nested sections with rising fences and counts them", () => {
    const r = checkExclusion("E 1 1 a\nX 1 1 a\nE 2 1 b\nE 1 2 b\nX 2 1 b\nX 1 2 b\n");
    expect(r).toMatchObject({ acquisitions: 3, overlaps: 0, fenceRegressions: 0, unmatchedExits: 0, perNode: { a: 1, b: 2 } });
  });

  it("finds an overlap, a fence that does not rise and an exit without entry", () => {
    const r = checkExclusion("E 1 5 a\nE 1 6 b\nX 1 5 a\nX 1 6 b\nE 1 6 c\nX 1 6 c\nX 1 9 d\n");
    expect(r).toMatchObject({ acquisitions: 3, overlaps: 1, fenceRegressions: 1, unmatchedExits: 1 });
    expect(r.samples.join("\n")).toContain("line 2: key 1: fence 6 (b) entered while fence 5 a (line 1) was inside");
  });

  it("lets readers share a key and finds a writer beside a reader (read/write locks)", () => {
    const ok = checkExclusion("E 1 1 a r\nE 1 2 b r\nX 1 1 a\nX 1 2 b\nE 1 3 c w\nW 1 3 c\nX 1 3 c\nE 1 4 a r\nX 1 4 a\n");
    expect(ok).toMatchObject({ acquisitions: 4, overlaps: 0, fenceRegressions: 0, unmatchedExits: 0 });
    // Two readers may log their entries out of fence order; a writer may not follow a higher fence.
    expect(checkExclusion("E 1 6 a r\nE 1 5 b r\nX 1 6 a\nX 1 5 b\n").fenceRegressions).toBe(0);
    expect(checkExclusion("E 1 6 a r\nX 1 6 a\nE 1 5 b w\nX 1 5 b\n").fenceRegressions).toBe(1);
    expect(checkExclusion("E 1 6 a w\nX 1 6 a\nE 1 5 b r\nX 1 5 b\n").fenceRegressions).toBe(1);
    const bad = checkExclusion("E 1 1 a r\nE 1 2 b w\nX 1 1 a\nX 1 2 b\nE 1 3 a w\nE 1 4 b r\n");
    expect(bad).toMatchObject({ overlaps: 2, unexplainedOverlaps: 2 });
  });

  it("allows N permits of a semaphore at once and finds the N+1st", () => {
    expect(checkExclusion("E 1 1 a p2\nE 1 2 b p2\nX 1 1 a\nE 1 3 c p2\nX 1 2 b\nX 1 3 c\n")).toMatchObject({ acquisitions: 3, overlaps: 0 });
    const over = checkExclusion("E 1 1 a p2\nE 1 2 b p2\nE 1 3 c p2\n");
    expect(over).toMatchObject({ overlaps: 1, unexplainedOverlaps: 1 });
    expect(over.samples[0]).toContain("entered as permit 3 of 2");
  });

  it("refuses a malformed line", () => {
    expect(() => checkExclusion("E 1 x a\n")).toThrow('line 1 is not "E key fence node [w|r|p<N>]"');
    expect(() => checkExclusion("E 1 1 a q\n")).toThrow("line 1 is not");
    expect(() => checkExclusion("X 1 1 a r\n")).toThrow("line 1 is not");
    expect(() => checkExclusion("Q a\n")).toThrow('line 1 is not "E|W|X key fence node" nor "P|C|K|F|R name"');
    expect(() => checkExclusion("P\n")).toThrow("line 1 is not");
  });

  it("explains an overlap with a holder that was paused, and expects its late write refused", () => {
    const r = checkExclusion(
      [
        "E 1 5 a",
        "W 1 5 a",
        "P a", // a freezes inside its section, past its TTL
        "E 1 6 b",
        "W 1 6 b",
        "X 1 6 b",
        "C a",
        "W 1 5 a",
        "X 1 5 a", // a's late write: refused, as fencing should
        "E 1 7 b",
        "W 1 7 b",
        "X 1 7 b",
        "",
      ].join("\n"),
    );
    expect(r).toMatchObject({ overlaps: 1, unexplainedOverlaps: 0, writes: 4, refusedWrites: 1, unexplainedRefusals: 0, perNodeAfterFaults: { b: 1 } });
    expect(r.samples[0]).toContain("(explained: it lived through a fault)");
  });

  it("explains overlaps with sections open when a server fault began, not with sections entered after it was over", () => {
    const r = checkExclusion("E 1 5 a\nF server-restart\nR server-restart\nE 1 6 b\nX 1 5 a\nE 2 1 a\nE 2 2 b\n");
    expect(r).toMatchObject({ overlaps: 2, unexplainedOverlaps: 1 });
  });

  it("finds a write refused to a holder no fault touched (fences that stepped back)", () => {
    const r = checkExclusion("E 1 90 a\nW 1 90 a\nX 1 90 a\nF server-restart\nR server-restart\nE 1 3 b\nW 1 3 b\nX 1 3 b\n");
    expect(r).toMatchObject({ fenceRegressions: 1, refusedWrites: 1, unexplainedRefusals: 1 });
  });

  it("ends a killed host's sections and wants its keys taken again", () => {
    const held = checkExclusion("E 1 5 a\nE 2 5 a\nK a\nE 1 6 b\nX 1 6 b\n");
    expect(held).toMatchObject({ overlaps: 0, keysNotFreedAfterKill: ["2"], perNodeAfterFaults: { b: 1 } });
    expect(checkExclusion("E 1 5 a\nK a\nE 1 6 b\n").keysNotFreedAfterKill).toEqual([]);
  });
});

async function expectExclusion(locking: Exclude<HammerOptions["locking"], (node: string) => unknown>, kind?: HammerOptions["kind"]): Promise<void> {
  const { report, stats } = await runHammer({ ...SHAPE, locking, ...(kind && { kind }) });
  const summary = { report, stats };
  // The counts go to the log for the closing note / CI output.
  console.log(
    `exclusion on ${locking.backend} ` +
      `(${kind?.kind ?? "mutex"}): ${JSON.stringify({
        acquisitions: report.acquisitions,
        overlaps: report.overlaps,
        fenceRegressions: report.fenceRegressions,
        perNode: report.perNode,
        contended: stats.reduce((n, s) => n + s.contended, 0),
        errors: stats.reduce((n, s) => n + s.errors, 0),
      })}`,
  );
  expect(
    stats.flatMap((s) => s.errorSamples),
    JSON.stringify(summary),
  ).toEqual([]);
  expect(report.overlaps, report.samples.join("\n")).toBe(0);
  expect(report.fenceRegressions, report.samples.join("\n")).toBe(0);
  expect(report.unmatchedExits, report.samples.join("\n")).toBe(0);
  // The keys were really fought over, by every process.
  expect(Object.keys(report.perNode).sort()).toEqual(["node-1", "node-2", "node-3"]);
  expect(report.acquisitions).toBeGreaterThan(100);
  expect(stats.reduce((n, s) => n + s.contended, 0)).toBeGreaterThan(0);
}

describe("exclusion across three host processes", () => {
  const prefix = `lockhost-test:excl-${RUN}:`;
  const table = `lockhost_test_excl_${RUN}`;
  afterAll(async () => {
    await dropRedisPrefix(redisUrl(), prefix);
    await dropPgTable(databaseUrl(), table);
  });

  it("holds on one Redis", async () => {
    await expectExclusion({ backend: "redis", redis: { url: redisUrl(), keyPrefix: prefix } });
  }, 60_000);

  it("holds on one PostgreSQL", async () => {
    await expectExclusion({ backend: "pg", pg: { url: databaseUrl(), table } });
  }, 60_000);

  // Issue 14: the same check with read/write locks (a writer in four attempts) and with
  // semaphores of two permits: never a writer beside anyone, never a third permit.
  const RW = { kind: "rw", writerShare: 0.25 } as const;
  const SEMAPHORE = { kind: "semaphore", permits: 2 } as const;

  it("holds for read/write locks on one Redis", async () => {
    await expectExclusion({ backend: "redis", redis: { url: redisUrl(), keyPrefix: prefix } }, RW);
  }, 60_000);

  it("holds for read/write locks on one PostgreSQL", async () => {
    await expectExclusion({ backend: "pg", pg: { url: databaseUrl(), table } }, RW);
  }, 60_000);

  it("keeps semaphores at their permits on one Redis", async () => {
    await expectExclusion({ backend: "redis", redis: { url: redisUrl(), keyPrefix: prefix } }, SEMAPHORE);
  }, 60_000);

  it("keeps semaphores at their permits on one PostgreSQL", async () => {
    await expectExclusion({ backend: "pg", pg: { url: databaseUrl(), table } }, SEMAPHORE);
  }, 60_000);

  it("is caught breaking for read/write locks on the memory backend (the control of the kinds' runs)", async () => {
    const { report } = await runHammer({ ...SHAPE, durationMs: 1_500, locking: { backend: "memory" }, kind: RW });
    expect(report.acquisitions).toBeGreaterThan(100);
    expect(report.overlaps).toBeGreaterThan(0);
  }, 60_000);

  it("is caught breaking on the memory backend, which processes do not share (the checker's control)", async () => {
    const { report } = await runHammer({ ...SHAPE, durationMs: 1_500, locking: { backend: "memory" } });
    expect(report.acquisitions).toBeGreaterThan(100);
    expect(report.overlaps).toBeGreaterThan(0);
  }, 60_000);
});
