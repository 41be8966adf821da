// The Node process's own metrics (CPU, memory, event loop lag, handles, GC: prom-client's
// default set, prefixed lockhost_), made once per process and shown by every host's registry.
// Made once, not per registry: the set keeps an event-loop monitor and a GC observer running
// for good, which one per Host (tests start hundreds) would multiply; and never in
// prom-client's global registry, which an embedder's own metrics may use.
import { collectDefaultMetrics, Registry, type Metric } from "prom-client";
import { PROCESS_PREFIX, PROCESS_SERIES } from "./metric-series.js";

let shared: readonly Metric[] | undefined;

/** The process metrics, made on first use. */
function processMetrics(): readonly Metric[] {
  if (shared === undefined) {
    const registry = new Registry();
    collectDefaultMetrics({ register: registry, prefix: PROCESS_PREFIX });
    // Only what the series table lists: a series the README does not name is not shown.
    shared = PROCESS_SERIES.map((row) => registry.getSingleMetric(row.name)).filter((m): m is Metric => m !== undefined);
  }
  return shared;
}

/** Shows the process metrics in `registry` too (each registry adds its own default labels when it renders them). */
export function registerProcessMetrics(registry: Registry): void {
  for (const metric of processMetrics()) registry.registerMetric(metric);
}
