// The guest series: each plugin's export calls by outcome and their duration, its traps, time
// limits and restarts. A runtime is handed one GuestRecorder per plugin and knows nothing of
// prom-client; the cells of each (export, outcome) are made once and kept.
import type { Registry } from "prom-client";
import type { CallOutcome, GuestRecorder, RestartReason } from "../runtime/guest-recorder.js";
import { SERIES } from "./metric-series.js";
import { counterTally, histogramTally, type Buckets, type CountCell } from "./tally.js";

/** The guest series of one registry; recorder(plugin) gives each plugin's runtime its recorder. */
export class GuestMeter {
  readonly #calls: ReturnType<typeof counterTally>;
  readonly #callTime: ReturnType<typeof histogramTally>;
  readonly #traps: ReturnType<typeof counterTally>;
  readonly #timeouts: ReturnType<typeof counterTally>;
  readonly #restarts: ReturnType<typeof counterTally>;

  constructor(registry: Registry) {
    this.#calls = counterTally(registry, SERIES.guestCalls);
    this.#callTime = histogramTally(registry, SERIES.guestCallTime);
    this.#traps = counterTally(registry, SERIES.guestTraps);
    this.#timeouts = counterTally(registry, SERIES.guestTimeouts);
    this.#restarts = counterTally(registry, SERIES.guestRestarts);
  }

  /**
   * The recorder of `plugin`'s guest. Its traps, timeouts and restarts show as 0 from now on,
   * so an alert on their rate has a series to read before the first one.
   */
  recorder(plugin: string): GuestRecorder {
    const traps = this.#traps({ plugin });
    const timeouts = this.#timeouts({ plugin });
    const restarts: Readonly<Record<RestartReason, CountCell>> = {
      trap: this.#restarts({ plugin, reason: "trap" }),
      timeout: this.#restarts({ plugin, reason: "timeout" }),
      crash: this.#restarts({ plugin, reason: "crash" }),
    };
    // Export names are the module's declared exports (a call to any other is refused before it runs).
    const calls = new Map<string, Map<CallOutcome, CountCell>>();
    const times = new Map<string, Buckets>();
    return {
      called: (exportName, outcome, ms) => {
        let byOutcome = calls.get(exportName);
        if (byOutcome === undefined) calls.set(exportName, (byOutcome = new Map()));
        let count = byOutcome.get(outcome);
        if (count === undefined) byOutcome.set(outcome, (count = this.#calls({ plugin, export: exportName, outcome })));
        count.n++;
        let time = times.get(exportName);
        if (time === undefined) times.set(exportName, (time = this.#callTime({ plugin, export: exportName })));
        time.observe(ms / 1000);
      },
      trapped: () => void traps.n++,
      timedOut: () => void timeouts.n++,
      restarted: (reason) => void restarts[reason].n++,
    };
  }
}
