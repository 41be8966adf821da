// What the dashboard shows live, gathered on the host: the recent lock events, schedule ticks
// and operators' actions (audit), counters per plugin, per-second series of acquisitions and
// wait times, and the hold and wait durations its histograms bucket, over the last minutes.
// Subscribers (the dashboard's event streams) get each item as it happens.
import type { LockKind } from "../../kit/kinds.js";
import type { LockEvent } from "../locking/events.js";
import type { LockService } from "../locking/service.js";
import type { TickEvent } from "../scheduler/scheduler.js";
import { countItem, noCounts, type FeedCounts } from "./dashboard/client/feed-count.js";
import type { DurationSample, PluginCounters, SeriesPoint } from "./dashboard/client/wire.js";
import { PairRing, Ring } from "./ring.js";

/** Who made an admin request, as far as the listener can tell. */
export interface AdminCaller {
  /** The peer's address (a proxy's, behind one). */
  readonly address: string;
  /** Whether the request carried the admin token ("valid"), a wrong one, or none. */
  readonly token: "valid" | "wrong" | "none";
}

/** An operator's action through the admin listener: who, on which lock, with what outcome. */
export interface AuditEntry {
  readonly action: "force-release";
  readonly name: string;
  readonly kind: LockKind;
  /** "refused": the token was missing or wrong (or none is configured); "failed": the backend's error. */
  readonly outcome: "released" | "not-held" | "refused" | "failed";
  /** Holders it took the lock from (released, not-held). */
  readonly holders?: number;
  readonly by: AdminCaller;
  /** Why it was refused or failed. */
  readonly detail?: string;
}

/** One item of the feed: a lock event, a schedule tick on this node, or an operator's action. */
export type FeedItem =
  // The feed takes the default event set: no per-attempt "contended" events.
  | Exclude<LockEvent, { readonly type: "contended" }>
  | ({ readonly type: "tick"; readonly atMs: number } & TickEvent)
  | ({ readonly type: "audit"; readonly atMs: number } & AuditEntry);

// Counters per plugin ("host" for host-side callers), a second of the series (acquisitions, and
// waits that ended: count, total ms, longest) and a duration sample are sent to the page as they
// are kept here: their one definition is the page's (its wire types).
export type { DurationSample, PluginCounters, SeriesPoint };

/** What a dashboard that connects is sent first. */
export interface FeedSnapshot {
  readonly recent: readonly FeedItem[];
  readonly plugins: Readonly<Record<string, PluginCounters>>;
  readonly series: readonly SeriesPoint[];
  /** How long locks were held (released on this host) and waits lasted, most recent last, within SERIES_SECONDS. */
  readonly durations: { readonly held: readonly DurationSample[]; readonly waited: readonly DurationSample[] };
}

/** Items kept for a dashboard that connects later. */
const RECENT = 200;
/** Seconds of series kept: the plots' window. */
export const SERIES_SECONDS = 300;
/** Durations kept of each sort for a dashboard that connects later (the live page adds its own). */
const DURATIONS = 2_000;

/** The host's activity, for the dashboard. */
export class ActivityFeed {
  readonly #recent = new Ring<FeedItem>(RECENT);
  readonly #plugins = new Map<string, PluginCounters>();
  readonly #series: SeriesPoint[] = [];
  readonly #held = new PairRing(DURATIONS);
  readonly #waited = new PairRing(DURATIONS);
  readonly #subscribers = new Set<(item: FeedItem) => void>();
  #lastCounters: { readonly plugin: string; readonly counters: PluginCounters } | undefined;
  readonly #stop: () => void;

  constructor(locks: LockService) {
    this.#stop = locks.onEvent((event) => {
      if (event.type !== "contended") this.#add(event);
    });
  }

  /** Records a schedule tick of this node. */
  tick(event: TickEvent): void {
    this.#add({ type: "tick", atMs: Date.now(), ...event });
  }

  /** Records an operator's action (the admin listener's audit line). */
  audit(entry: AuditEntry): void {
    this.#add({ type: "audit", atMs: Date.now(), ...entry });
  }

  /** Everything a dashboard needs to start drawing. */
  snapshot(): FeedSnapshot {
    const nowMs = Date.now();
    this.#trim(Math.floor(nowMs / 1000));
    const recent = (samples: PairRing): DurationSample[] => samples.toArray((atMs) => atMs > nowMs - SERIES_SECONDS * 1000);
    return {
      recent: this.#recent.toArray(),
      plugins: Object.fromEntries(this.#plugins),
      series: this.#series.map((p) => ({ ...p })),
      durations: { held: recent(this.#held), waited: recent(this.#waited) },
    };
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
    countItem(this.#counts, item);
    for (const subscriber of this.#subscribers) subscriber(item);
  }

  /** Where #add counts (feed-count.ts, shared with the open page). */
  readonly #counts: FeedCounts = {
    counters: (plugin) => {
      // Most items in a row are one plugin's: found without a lookup.
      if (this.#lastCounters?.plugin === plugin) return this.#lastCounters.counters;
      let c = this.#plugins.get(plugin);
      if (!c) this.#plugins.set(plugin, (c = noCounts()));
      this.#lastCounters = { plugin, counters: c };
      return c;
    },
    point: (atMs) => this.#point(atMs),
    held: (atMs, ms) => this.#held.push(atMs, ms),
    waited: (atMs, ms) => this.#waited.push(atMs, ms),
  };

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
