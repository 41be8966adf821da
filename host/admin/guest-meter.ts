// The guest series: each plugin's export calls by outcome and their duration, its traps, time
// limits and restarts. A runtime is handed one GuestRecorder per plugin and knows nothing of
// prom-client; the children of each (export, outcome) are made once and kept.
import type { Counter, Histogram, Registry } from "prom-client";
import type { CallOutcome, GuestRecorder, RestartReason } from "../runtime/guest-recorder.js";
import { SERIES } from "./metric-series.js";
import { counterOf, histogramOf } from "./series-metric.js";

type CounterChild = ReturnType<Counter["labels"]>;
type HistogramChild = ReturnType<Histogram["labels"]>;

/** The guest series of one registry; recorder(plugin) gives each plugin's runtime its recorder. */
export class GuestMeter {
  readonly #calls: Counter;
  readonly #callTime: Histogram;
  readonly #traps: Counter;
  readonly #timeouts: Counter;
  readonly #restarts: Counter;

  constructor(registry: Registry) {
    this.#calls = counterOf(registry, SERIES.guestCalls);
    this.#callTime = histogramOf(registry, SERIES.guestCallTime);
    this.#traps = counterOf(registry, SERIES.guestTraps);
    this.#timeouts = counterOf(registry, SERIES.guestTimeouts);
    this.#restarts = counterOf(registry, SERIES.guestRestarts);
  }

  /**
   * The recorder of `plugin`'s guest. Its traps, timeouts and restarts show as 0 from now on,
   * so an alert on their rate has a series to read before the first one.
   */
  recorder(plugin: string): GuestRecorder {
    const traps = this.#traps.labels({ plugin });
    const timeouts = this.#timeouts.labels({ plugin });
    for (const child of [traps, timeouts]) child.inc(0);
    const restarts = new Map<RestartReason, CounterChild>();
    for (const reason of ["trap", "timeout", "crash"] as const) {
      const child = this.#restarts.labels({ plugin, reason });
      child.inc(0);
      restarts.set(reason, child);
    }
    // Export names are the module's declared exports (a call to any other is refused before it runs).
    const calls = new Map<string, Map<CallOutcome, CounterChild>>();
    const times = new Map<string, HistogramChild>();
    return {
      called: (exportName, outcome, ms) => {
        let byOutcome = calls.get(exportName);
        if (byOutcome === undefined) calls.set(exportName, (byOutcome = new Map()));
        let count = byOutcome.get(outcome);
        if (count === undefined) byOutcome.set(outcome, (count = this.#calls.labels({ plugin, export: exportName, outcome })));
        count.inc();
        let time = times.get(exportName);
        if (time === undefined) times.set(exportName, (time = this.#callTime.labels({ plugin, export: exportName })));
        time.observe(ms / 1000);
      },
      trapped: () => traps.inc(),
      timedOut: () => timeouts.inc(),
      restarted: (reason) => restarts.get(reason)!.inc(),
    };
  }
}
