// The lock series labelled by kind and plugin, counted from the lock service's events as they
// happen: acquisitions, contended attempts, wait timeouts, releases, losses, and the wait and
// hold-time histograms. Each (plugin, kind) pair's children are made once and kept, so an
// event costs a map lookup and an increment, never a label object. Lock names are read by
// nobody here: they never reach a label.
import type { Counter, Histogram, Registry } from "prom-client";
import type { LockKind } from "../../kit/kinds.js";
import type { LockEvent, LockEventType } from "../locking/events.js";
import type { LockService } from "../locking/service.js";
import { SERIES } from "./metric-series.js";
import { counterOf, histogramOf } from "./series-metric.js";

/** How many plugin label values the lock series take; later ones are counted under OTHER_PLUGIN. */
export const MAX_PLUGIN_LABELS = 100;
/**
 * The plugin label of a holder past the first MAX_PLUGIN_LABELS: guests' plugins are the
 * config's, but an embedder may name a plugin per caller, and a label must stay bounded.
 */
export const OTHER_PLUGIN = "_other";

/** The events the meter counts. */
const COUNTED: readonly LockEventType[] = ["acquired", "contended", "waited", "released", "lost"];

type CounterChild = ReturnType<Counter["labels"]>;
type HistogramChild = ReturnType<Histogram["labels"]>;

/** The children of one (plugin, kind) pair. */
interface PairChildren {
  readonly acquired: CounterChild;
  readonly contended: CounterChild;
  readonly timeouts: CounterChild;
  readonly released: CounterChild;
  readonly lost: CounterChild;
  readonly waited: Readonly<Record<"acquired" | "timeout" | "failed", HistogramChild>>;
  readonly held: Readonly<Record<"released" | "lost", HistogramChild>>;
}

/** Counts one service's lock events into `registry`; stop() unsubscribes. */
export class LockMeter {
  readonly #acquired: Counter;
  readonly #contended: Counter;
  readonly #timeouts: Counter;
  readonly #released: Counter;
  readonly #lost: Counter;
  readonly #waited: Histogram;
  readonly #held: Histogram;
  readonly #pairs = new Map<string, Map<LockKind, PairChildren>>();
  readonly #stop: () => void;

  constructor(registry: Registry, service: LockService) {
    this.#acquired = counterOf(registry, SERIES.acquisitions);
    this.#contended = counterOf(registry, SERIES.contended);
    this.#timeouts = counterOf(registry, SERIES.waitTimeouts);
    this.#released = counterOf(registry, SERIES.releases);
    this.#lost = counterOf(registry, SERIES.lost);
    this.#waited = histogramOf(registry, SERIES.acquireWait);
    this.#held = histogramOf(registry, SERIES.holdTime);
    this.#stop = service.onEvent((event) => this.#count(event), COUNTED);
  }

  stop(): void {
    this.#stop();
  }

  #count(event: LockEvent): void {
    if (event.type === "force-released") return;
    const pair = this.#pair(event.plugin, event.kind ?? "mutex");
    switch (event.type) {
      case "acquired":
        pair.acquired.inc();
        break;
      case "contended":
        pair.contended.inc();
        break;
      case "waited":
        if (event.outcome === "timeout") pair.timeouts.inc();
        pair.waited[event.outcome].observe(event.waitedMs / 1000);
        break;
      case "released":
        pair.released.inc();
        pair.held.released.observe(seconds(event.heldMs));
        break;
      case "lost":
        pair.lost.inc();
        pair.held.lost.observe(seconds(event.heldMs));
        break;
    }
  }

  /** The children of (plugin, kind), made on first use; past MAX_PLUGIN_LABELS plugins, OTHER_PLUGIN's. */
  #pair(plugin: string, kind: LockKind): PairChildren {
    let kinds = this.#pairs.get(plugin);
    if (kinds === undefined) {
      if (this.#pairs.size >= MAX_PLUGIN_LABELS && plugin !== OTHER_PLUGIN) return this.#pair(OTHER_PLUGIN, kind);
      this.#pairs.set(plugin, (kinds = new Map()));
    }
    let pair = kinds.get(kind);
    if (pair === undefined) {
      const labels = { kind, plugin };
      const wait = (outcome: string): HistogramChild => this.#waited.labels({ ...labels, outcome });
      const hold = (outcome: string): HistogramChild => this.#held.labels({ ...labels, outcome });
      pair = {
        acquired: this.#acquired.labels(labels),
        contended: this.#contended.labels(labels),
        timeouts: this.#timeouts.labels(labels),
        released: this.#released.labels(labels),
        lost: this.#lost.labels(labels),
        waited: { acquired: wait("acquired"), timeout: wait("timeout"), failed: wait("failed") },
        held: { released: hold("released"), lost: hold("lost") },
      };
      kinds.set(kind, pair);
    }
    return pair;
  }
}

/** A span in ms as seconds; a hold measured across two clocks (the server's start, this host's end) is never below 0. */
function seconds(ms: number): number {
  return Math.max(0, ms) / 1000;
}
