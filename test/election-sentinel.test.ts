// The election sentinel in isolation, with a fake status read: it reads each watched election
// once per interval for the whole host, wakes that election's listeners when its leader ends or
// changes (not when it stays), and reads nothing once nobody watches, when off, or when stopped.
import { describe, expect, it } from "vitest";
import type { LockState } from "../kit/backend.js";
import { ElectionSentinel } from "../host/locking/election-sentinel.js";
import { sleep } from "./support/until.js";

const led = (fence: number): LockState => ({ holders: [{ fence }] }) as unknown as LockState;

/** A fake backend: `leaders` maps a lock name to its leader's term (absent: nobody leads); reads are counted. */
function fakeRead(leaders: Map<string, number>): { read: (name: string) => Promise<LockState | null>; reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    read: (name) => {
      reads.push(name);
      const term = leaders.get(name);
      return Promise.resolve(term === undefined ? null : led(term));
    },
  };
}

describe("ElectionSentinel", () => {
  it("wakes an election's listeners when its leader ends or changes, once per change, with one read per interval for all of them", async () => {
    const leaders = new Map([["e", 1]]);
    const { read, reads } = fakeRead(leaders);
    const sentinel = new ElectionSentinel(read, 5);
    let a = 0;
    let b = 0;
    const offA = sentinel.watch("e", () => a++);
    const offB = sentinel.watch("e", () => b++);
    await sleep(30);
    expect([a, b]).toEqual([0, 0]);
    const readsPerTick = reads.length;
    leaders.delete("e");
    await sleep(30);
    expect([a, b]).toEqual([1, 1]);
    leaders.set("e", 2);
    await sleep(30);
    expect([a, b]).toEqual([2, 2]);
    offA();
    offB();
    const after = reads.length;
    await sleep(30);
    // Two listeners, one read per tick: never more reads than ticks.
    expect(readsPerTick).toBeGreaterThan(0);
    expect(reads.length - after).toBeLessThanOrEqual(1);
    sentinel.stop();
  });

  it("wakes at its first read when nobody leads: the leader may have ended before the watch began", async () => {
    const { read } = fakeRead(new Map());
    const sentinel = new ElectionSentinel(read, 5);
    let woken = 0;
    const off = sentinel.watch("e", () => woken++);
    await sleep(30);
    expect(woken).toBe(1);
    off();
    sentinel.stop();
  });

  it("reads nothing when off (interval 0) or stopped", async () => {
    const { read, reads } = fakeRead(new Map([["e", 1]]));
    const off = new ElectionSentinel(read, 0);
    off.watch("e", () => undefined);
    const stopped = new ElectionSentinel(read, 5);
    stopped.watch("e", () => undefined);
    stopped.stop();
    await sleep(30);
    expect(reads).toEqual([]);
  });
});
