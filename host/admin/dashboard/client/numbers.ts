// The host's numbers: the counter cards, the per-plugin table, the per-second plots and the
// duration histograms. The snapshot seeds them; each live item adds to them as the host's feed
// adds to its own (host/admin/feed.ts, the same countItem), so a page open for a while counts
// what a fresh one would.
import { bodyOf, byId, cell, emptyRow } from "./dom.js";
import { countScale, durationScale } from "./axes.js";
import { trim } from "./format.js";
import { histogram } from "./histogram.js";
import { drawHistogram, drawSeries, type Line } from "./plot.js";
import { countItem, noCounts, type FeedCounts } from "./feed-count.js";
import type { DurationSample, FeedItem, PluginCounters, SeriesPoint, Snapshot, Stats } from "./wire.js";

/** Seconds the plots and histograms cover. */
const SPAN_SECONDS = 300;
const RATE_SECONDS = 10;

let stats: Stats | undefined;
let series: SeriesPoint[] = [];
let plugins: Record<string, PluginCounters> = {};
let held: DurationSample[] = [];
let waited: DurationSample[] = [];

/** Starts over from a snapshot. */
export function seed(snapshot: Snapshot): void {
  stats = snapshot.stats;
  series = snapshot.feed.series.map((p) => ({ ...p }));
  plugins = structuredClone(snapshot.feed.plugins) as Record<string, PluginCounters>;
  held = [...snapshot.feed.durations.held];
  waited = [...snapshot.feed.durations.waited];
}

/** Takes the latest counters. */
export function setStats(next: Stats): void {
  stats = next;
}

/** Counts a live item, as the host's feed counted the snapshot's (feed-count.ts). */
export function count(item: FeedItem): void {
  countItem(live, item);
}

const live: FeedCounts = {
  counters: (plugin) => (plugins[plugin] ??= noCounts()),
  point,
  held: (atMs, ms) => void held.push([atMs, ms]),
  waited: (atMs, ms) => void waited.push([atMs, ms]),
};

function point(atMs: number): SeriesPoint {
  const second = Math.floor(atMs / 1000);
  const last = series[series.length - 1];
  if (last?.second === second) return last;
  const p: SeriesPoint = { second, acquired: 0, waits: 0, waitMsTotal: 0, waitMsMax: 0 };
  series.push(p);
  return p;
}

/** The counter cards. */
export function renderStats(): void {
  if (stats === undefined) return;
  byId("c-held", HTMLElement).textContent = String(stats.held);
  byId("c-waiting", HTMLElement).textContent = String(stats.waiters);
  byId("c-contended", HTMLElement).textContent = String(stats.contended);
  byId("c-renew", HTMLElement).textContent = `${stats.renewalsOk} / ${stats.renewalsFailed}`;
  byId("c-lost", HTMLElement).textContent = String(stats.lost);
  const since = Math.floor(Date.now() / 1000) - RATE_SECONDS;
  const recent = series.filter((p) => p.second > since).reduce((n, p) => n + p.acquired, 0);
  byId("c-rate", HTMLElement).textContent = trim(recent / RATE_SECONDS);
}

/** The per-plugin table. */
export function renderPlugins(): void {
  const tbody = bodyOf(byId("plugins", HTMLTableElement));
  tbody.replaceChildren();
  const names = Object.keys(plugins).sort();
  for (const name of names) {
    const c = plugins[name]!;
    const row = tbody.insertRow();
    cell(row, name, "name");
    for (const n of [c.acquired, c.released, c.lost, c.waits, c.timeouts]) cell(row, String(n));
  }
  if (names.length === 0) emptyRow(tbody, 6, "nothing yet");
}

/** The plots and histograms, over the last SPAN_SECONDS (older data is dropped here). */
export function renderCharts(): void {
  const nowMs = Date.now();
  const nowSecond = Math.floor(nowMs / 1000);
  series = series.filter((p) => p.second > nowSecond - SPAN_SECONDS);
  held = held.filter(([atMs]) => atMs > nowMs - SPAN_SECONDS * 1000);
  waited = waited.filter(([atMs]) => atMs > nowMs - SPAN_SECONDS * 1000);
  const line = (color: string, label: string, value: (p: SeriesPoint) => number): Line => ({
    color,
    label,
    bySecond: new Map(series.map((p) => [p.second, value(p)])),
  });
  drawSeries(byId("plot-acq", HTMLCanvasElement), [line("#3fcf8e", "acquisitions per second", (p) => p.acquired)], nowSecond, SPAN_SECONDS, (max) =>
    countScale(max, "/s"),
  );
  drawSeries(
    byId("plot-wait", HTMLCanvasElement),
    [line("#4fb3ff", "mean wait", (p) => (p.waits > 0 ? p.waitMsTotal / p.waits : 0)), line("#f2b84b", "longest wait", (p) => p.waitMsMax)],
    nowSecond,
    SPAN_SECONDS,
    durationScale,
  );
  drawHistogram(byId("hist-held", HTMLCanvasElement), histogram(held, nowMs, SPAN_SECONDS * 1000), "#4fb3ff", "hold times");
  drawHistogram(byId("hist-wait", HTMLCanvasElement), histogram(waited, nowMs, SPAN_SECONDS * 1000), "#f2b84b", "wait times");
}
