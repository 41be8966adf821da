// The Node process's own metrics (CPU, memory, event loop lag, handles, GC: prom-client's
// default set, under its standard names), made once per process and shown by every host's registry.
// Made once, not per registry: the set keeps an event-loop monitor and a GC observer running
// for good, which one per Host (tests start hundreds) would multiply, and prom-client throws
// when the set is made twice in one registry; and never in prom-client's global registry, which
// stays the embedder's. When the embedder made the set there already (collectDefaultMetrics()
// before the first host started), the hosts show those same metrics: no second monitor runs,
// and Registry.merge([register, host.metrics]) finds one metric per name, not two that clash.
import { collectDefaultMetrics, register, Registry, type Metric } from "prom-client";
import { PROCESS_SERIES } from "./metric-series.js";

let shared: readonly Metric[] | undefined;

/** The process metrics: prom-client's global registry's if the embedder made them there, else made on first use. */
function processMetrics(): readonly Metric[] {
  if (shared === undefined) {
    let registry = register;
    if (registry.getSingleMetric(PROCESS_SERIES[0]!.name) === undefined) {
      registry = new Registry();
      collectDefaultMetrics({ register: registry });
    }
    // Only what the series table lists: a series the README does not name is not shown.
    shared = PROCESS_SERIES.map((row) => registry.getSingleMetric(row.name)).filter((m): m is Metric => m !== undefined);
  }
  return shared;
}

/** Shows the process metrics in `registry` too (each registry adds its own default labels when it renders them). */
export function registerProcessMetrics(registry: Registry): void {
  for (const metric of processMetrics()) registry.registerMetric(metric);
}
