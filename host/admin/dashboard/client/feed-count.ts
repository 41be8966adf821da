// How a feed item adds to the dashboard's numbers, written once for the host's feed
// (host/admin/feed.ts, which a page's snapshot is made from) and the open page
// (numbers.ts, which adds the live items to that snapshot): the two stay the same counts.
import type { FeedItem, PluginCounters, SeriesPoint } from "./wire.js";

/** Where a count goes: each side keeps its numbers its own way. */
export interface FeedCounts {
  /** The counters of one plugin (made on first use). */
  counters(plugin: string): PluginCounters;
  /** The per-second point of the second `atMs` falls in (made on first use). */
  point(atMs: number): SeriesPoint;
  /** A release's hold time, a wait's time: when (ms since the epoch) and how long (ms); two numbers, not a DurationSample, so counting allocates nothing. */
  held(atMs: number, ms: number): void;
  waited(atMs: number, ms: number): void;
}

/** Adds `item` to `counts`. */
export function countItem(counts: FeedCounts, item: FeedItem): void {
  if (item.type === "acquired" || item.type === "released" || item.type === "lost") counts.counters(item.plugin)[item.type]++;
  if (item.type === "acquired") counts.point(item.atMs).acquired++;
  if (item.type === "released") counts.held(item.atMs, item.heldMs);
  if (item.type === "waited") {
    counts.waited(item.atMs, item.waitedMs);
    const point = counts.point(item.atMs);
    point.waits++;
    point.waitMsTotal += item.waitedMs;
    point.waitMsMax = Math.max(point.waitMsMax, item.waitedMs);
    // The waiter's own plugin (a global lock's name names no plugin).
    const c = counts.counters(item.plugin);
    c.waits++;
    if (item.outcome === "timeout") c.timeouts++;
  }
}

/** A plugin's counters before its first count. */
export const noCounts = (): PluginCounters => ({ acquired: 0, released: 0, lost: 0, waits: 0, timeouts: 0 });
