// prom-client counters and gauges made from rows of the series table, their values set when
// scraped: the one place a row's name, help and labels become one (histograms: tally.ts).
import { Counter, Gauge, type Registry } from "prom-client";
import type { SeriesRow } from "./metric-series.js";

type Collect<M> = (this: M) => void;

/** A counter of `row` in `registry` whose values `collect` sets at scrape time. */
export function counterOf(registry: Registry, row: SeriesRow, collect: Collect<Counter>): Counter {
  return new Counter({ name: row.name, help: row.help, labelNames: row.labels, registers: [registry], collect });
}

/** A gauge of `row` in `registry` whose values `collect` sets at scrape time. */
export function gaugeOf(registry: Registry, row: SeriesRow, collect: Collect<Gauge>): Gauge {
  return new Gauge({ name: row.name, help: row.help, labelNames: row.labels, registers: [registry], collect });
}
