// The dashboard's activity feed on a real LockService: it keeps the last items and durations in
// fixed rings (oldest first, the oldest dropped past the bound), counts every item, and a
// subscriber hears each one as it happens.
import { afterEach, describe, expect, it } from "vitest";
import { ActivityFeed } from "../host/admin/feed.js";
import { PairRing, Ring } from "../host/admin/ring.js";
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";

const services: LockService[] = [];
afterEach(async () => {
  await Promise.all(services.splice(0).map((s) => s.close()));
});

describe("Ring and PairRing", () => {
  it("keep the last `size` entries, oldest first", () => {
    const ring = new Ring<number>(3);
    expect(ring.toArray()).toEqual([]);
    ring.push(1);
    ring.push(2);
    expect(ring.toArray()).toEqual([1, 2]);
    for (const n of [3, 4, 5]) ring.push(n);
    expect(ring.toArray()).toEqual([3, 4, 5]);
    const pairs = new PairRing(2);
    pairs.push(1, 10);
    pairs.push(2, 20);
    pairs.push(3, 30);
    expect(pairs.toArray(() => true)).toEqual([
      [2, 20],
      [3, 30],
    ]);
    expect(pairs.toArray((at) => at > 2)).toEqual([[3, 30]]);
  });
});

describe("ActivityFeed", () => {
  it("keeps the last 200 items and every count, and tells a subscriber each item", async () => {
    const locks = new LockService(new MemoryBackend(), { node: "feed" });
    services.push(locks);
    const feed = new ActivityFeed(locks);
    const heard: string[] = [];
    const stop = feed.subscribe((item) => heard.push(item.type));
    for (let i = 0; i < 150; i++) await locks.release((await locks.tryLock(`k${i}`, { ttlMs: 10_000 }))!);
    stop();
    const snap = feed.snapshot();
    expect(heard).toHaveLength(300);
    expect(snap.recent).toHaveLength(200);
    // Oldest first: the first 50 pairs are gone, the last item is the last release.
    expect(snap.recent[0]).toMatchObject({ type: "acquired", name: "global:k50" });
    expect(snap.recent[199]).toMatchObject({ type: "released", name: "global:k149" });
    expect(snap.plugins.host).toMatchObject({ acquired: 150, released: 150 });
    expect(snap.durations.held).toHaveLength(150);
    expect(snap.series.reduce((n, p) => n + p.acquired, 0)).toBe(150);
    feed.close();
  });
});
