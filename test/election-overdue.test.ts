// An observer of an election whose leader is still reported past its lease's end waits for that
// end instead of polling for it. PostgreSQL reports such a leader for as long as its process is
// frozen (its session keeps the advisory lock until the holder itself ends the lease), and each
// observer used to re-read it every millisecond meanwhile (about 800 status reads a second,
// found by test/faults/election-faults.test.ts). Here a memory backend reports its leader that
// way; the leader's resignation must still be seen at once.
import { describe, expect, it } from "vitest";
import type { LockRecord } from "../kit/backend.js";
import { LockService, type LeaderInfo } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { sleep } from "./support/until.js";

/** A memory backend that counts status reads and can report its record as past its lease's end. */
class OverdueBackend extends MemoryBackend {
  reads = 0;
  overdue = false;
  override async status(key: string): Promise<LockRecord | null> {
    this.reads++;
    const record = await super.status(key);
    return record !== null && this.overdue ? { ...record, ttlRemainingMs: 0 } : record;
  }
}

describe("observing a leader past its lease's end", () => {
  it("backs off its reads instead of re-reading every millisecond, and still sees the end at once", async () => {
    const backend = new OverdueBackend();
    const locks = new LockService(backend, { node: "n", waiting: { pollIntervalMs: 1_000 } });
    const leader = await locks.campaign("jobs", { ttlMs: 10_000, value: "a" });
    const controller = new AbortController();
    const seen: { info: LeaderInfo; at: number }[] = [];
    const observing = (async () => {
      for await (const info of locks.observe("jobs", { signal: controller.signal })) seen.push({ info, at: performance.now() });
    })();
    try {
      while (seen.length === 0) await sleep(1);
      backend.overdue = true;
      backend.reads = 0;
      // A read finds it overdue (the poll interval's read at the latest), then the backoff.
      await sleep(1_500);
      // Before the fix: one read a millisecond after the first overdue read, over a thousand here.
      expect(backend.reads).toBeLessThan(20);
      const resignedAt = performance.now();
      await leader.resign();
      while (!seen.some((s) => !s.info.held) && performance.now() - resignedAt < 2_000) await sleep(1);
      const end = seen.find((s) => !s.info.held);
      expect(end).toBeDefined();
      // At once: by the release notice, where the backed-off reads would have come up to a poll
      // interval (1 s) later; half of it is a margin a loaded machine cannot eat (was 100 ms).
      expect(end!.at - resignedAt).toBeLessThan(500);
    } finally {
      controller.abort();
      await observing;
      await locks.close();
    }
  });
});
