// What the dashboard shows live, gathered on the host: the recent lock events and schedule
// ticks, counters per plugin, and per-second series of acquisitions and wait times over the
// last minutes. Subscribers (the dashboard's event streams) get each item as it happens.
import type { LockEvent } from "../locking/events.js";
import type { LockService } from "../locking/service.js";
import type { TickEvent } from "../scheduler/scheduler.js";

/** One item of the feed: a lock event, or a schedule tick on this node. */
export type FeedItem = LockEvent | ({ readonly type: "tick"; readonly atMs: number } & TickEvent);

/** Counters of one plugin ("host" for host-side callers). */
export interface PluginCounters {
  acquired: number;
  released: number;
  lost: number;
  waits: number;
  timeouts: number;
}

/** One second of the series: acquisitions that second, and waits that ended (count, total ms, longest). */
export interface SeriesPoint {
  readonly second: number;
  acquired: number;
  waits: number;
  waitMsTotal: number;
  waitMsMax: number;
}

/** What a dashboard that connects is sent first. */
export interface FeedSnapshot {
  readonly recent: readonly FeedItem[];
  readonly plugins: Readonly<Record<string, PluginCounters>>;
  readonly series: readonly SeriesPoint[];
}

/** Items kept for a dashboard that connects later. */
const RECENT = 200;
/** Seconds of series kept: the plots' window. */
export const SERIES_SECONDS = 300;

/** The host's activity, for the dashboard. */
export class ActivityFeed {
  readonly #recent: FeedItem[] = [];
  readonly #plugins = new Map<string, PluginCounters>();
  readonly #series: SeriesPoint[] = [];
  readonly #subscribers = new Set<(item: FeedItem) => void>();
  readonly #stop: () => void;

  constructor(locks: LockService) {
    this.#stop = locks.onEvent((event) => this.#add(event));
  }

  /** Records a schedule tick of this node. */
  tick(event: TickEvent): void {
    this.#add({ type: "tick", atMs: Date.now(), ...event });
  }

  /** Everything a dashboard needs to start drawing. */
  snapshot(): FeedSnapshot {
    this.#trim(Math.floor(Date.now() / 1000));
    return { recent: [...this.#recent], plugins: Object.fromEntries(this.#plugins), series: this.#series.map((p) => ({ ...p })) };
  }

  /** Calls `subscriber` with each new item; returns the function that stops it. */
  subscribe(subscriber: (item: FeedItem) => void): () => void {
    this.#subscribers.add(subscriber);
    return () => void this.#subscribers.delete(subscriber);
  }

  /** Stops listening to the lock service. */
  close(): void {
    this.#stop();
    this.#subscribers.clear();
  }

  #add(item: FeedItem): void {
    this.#recent.push(item);
    if (this.#recent.length > RECENT) this.#recent.splice(0, this.#recent.length - RECENT);
    this.#count(item);
    for (const subscriber of this.#subscribers) subscriber(item);
  }

  #count(item: FeedItem): void {
    if (item.type === "acquired" || item.type === "released" || item.type === "lost") {
      const c = this.#counters(item.plugin);
      c[item.type]++;
    }
    if (item.type === "acquired") this.#point(item.atMs).acquired++;
    if (item.type === "waited") {
      const point = this.#point(item.atMs);
      point.waits++;
      point.waitMsTotal += item.waitedMs;
      point.waitMsMax = Math.max(point.waitMsMax, item.waitedMs);
      const plugin = pluginOf(item.name);
      const c = this.#counters(plugin);
      c.waits++;
      if (item.outcome === "timeout") c.timeouts++;
    }
  }

  #counters(plugin: string): PluginCounters {
    let c = this.#plugins.get(plugin);
    if (!c) {
      c = { acquired: 0, released: 0, lost: 0, waits: 0, timeouts: 0 };
      this.#plugins.set(plugin, c);
    }
    return c;
  }

  #point(atMs: number): SeriesPoint {
    const second = Math.floor(atMs / 1000);
    this.#trim(second);
    const last = this.#series[this.#series.length - 1];
    if (last?.second === second) return last;
    const point: SeriesPoint = { second, acquired: 0, waits: 0, waitMsTotal: 0, waitMsMax: 0 };
    this.#series.push(point);
    return point;
  }

  #trim(nowSecond: number): void {
    let drop = 0;
    while (drop < this.#series.length && this.#series[drop]!.second <= nowSecond - SERIES_SECONDS) drop++;
    if (drop > 0) this.#series.splice(0, drop);
  }
}

/** The plugin part of a fully qualified lock name ("billing:nightly" -> "billing"). */
function pluginOf(name: string): string {
  const colon = name.indexOf(":");
  return colon < 0 ? name : name.slice(0, colon);
}
