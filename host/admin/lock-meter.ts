// The lock series labelled by kind and plugin, counted from the lock service's events as they
// happen: acquisitions, contended attempts, wait timeouts, releases, losses, and the wait and
// hold-time histograms. Each (plugin, kind) pair's cells are made once and kept, so an event
// costs two map lookups and an increment or a bucket scan, and no allocation. Lock names are
// read by nobody here: they never reach a label.
import type { Registry } from "prom-client";
import type { LockKind } from "../../kit/kinds.js";
import type { LockEvent, LockEventType } from "../locking/events.js";
import type { LockService } from "../locking/service.js";
import { SERIES } from "./metric-series.js";
import { counterTally, histogramTally, type Buckets, type CountCell } from "./tally.js";

/** How many plugin label values the lock series take; later ones are counted under OTHER_PLUGIN. */
export const MAX_PLUGIN_LABELS = 100;
/**
 * The plugin label of a holder past the first MAX_PLUGIN_LABELS: guests' plugins are the
 * config's, but an embedder may name a plugin per caller, and a label must stay bounded.
 */
export const OTHER_PLUGIN = "_other";

/** The events the meter counts. */
const COUNTED: readonly LockEventType[] = ["acquired", "contended", "waited", "released", "lost"];

/** The cells of one (plugin, kind) pair. */
interface PairCells {
  readonly acquired: CountCell;
  readonly contended: CountCell;
  readonly timeouts: CountCell;
  readonly released: CountCell;
  readonly lost: CountCell;
  readonly waited: Readonly<Record<"acquired" | "timeout" | "failed", Buckets>>;
  readonly held: Readonly<Record<"released" | "lost", Buckets>>;
}

type Cells = ReturnType<typeof counterTally>;

/** Counts one service's lock events into `registry`; stop() unsubscribes. */
export class LockMeter {
  readonly #acquired: Cells;
  readonly #contended: Cells;
  readonly #timeouts: Cells;
  readonly #released: Cells;
  readonly #lost: Cells;
  readonly #waited: ReturnType<typeof histogramTally>;
  readonly #held: ReturnType<typeof histogramTally>;
  readonly #pairs = new Map<string, Map<LockKind, PairCells>>();
  #last: { readonly plugin: string; readonly kind: LockKind; readonly cells: PairCells } | undefined;
  readonly #stop: () => void;

  constructor(registry: Registry, service: LockService) {
    this.#acquired = counterTally(registry, SERIES.acquisitions);
    this.#contended = counterTally(registry, SERIES.contended);
    this.#timeouts = counterTally(registry, SERIES.waitTimeouts);
    this.#released = counterTally(registry, SERIES.releases);
    this.#lost = counterTally(registry, SERIES.lost);
    this.#waited = histogramTally(registry, SERIES.acquireWait);
    this.#held = histogramTally(registry, SERIES.holdTime);
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
        pair.acquired.n++;
        break;
      case "contended":
        pair.contended.n++;
        break;
      case "waited":
        if (event.outcome === "timeout") pair.timeouts.n++;
        pair.waited[event.outcome].observe(event.waitedMs / 1000);
        break;
      case "released":
        pair.released.n++;
        pair.held.released.observe(seconds(event.heldMs));
        break;
      case "lost":
        pair.lost.n++;
        pair.held.lost.observe(seconds(event.heldMs));
        break;
    }
  }

  /** The cells of (plugin, kind), made on first use; past MAX_PLUGIN_LABELS plugins, OTHER_PLUGIN's. */
  #pair(plugin: string, kind: LockKind): PairCells {
    // Most events in a row are one plugin's on one kind: found without a lookup.
    const last = this.#last;
    if (last !== undefined && last.plugin === plugin && last.kind === kind) return last.cells;
    const cells = this.#find(plugin, kind);
    this.#last = { plugin, kind, cells };
    return cells;
  }

  #find(plugin: string, kind: LockKind): PairCells {
    let kinds = this.#pairs.get(plugin);
    if (kinds === undefined) {
      if (this.#pairs.size >= MAX_PLUGIN_LABELS && plugin !== OTHER_PLUGIN) return this.#find(OTHER_PLUGIN, kind);
      this.#pairs.set(plugin, (kinds = new Map()));
    }
    let pair = kinds.get(kind);
    if (pair === undefined) {
      const labels = { kind, plugin };
      const wait = (outcome: string): Buckets => this.#waited({ ...labels, outcome });
      const hold = (outcome: string): Buckets => this.#held({ ...labels, outcome });
      pair = {
        acquired: this.#acquired(labels),
        contended: this.#contended(labels),
        timeouts: this.#timeouts(labels),
        released: this.#released(labels),
        lost: this.#lost(labels),
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
