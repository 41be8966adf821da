// prom-client metrics made from rows of the series table: the one place a row's name, help,
// labels and buckets become a metric.
import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { SeriesRow } from "./metric-series.js";

type Collect<M> = (this: M) => void;

/** A counter of `row` in `registry`; with `collect`, its values are set at scrape time. */
export function counterOf(registry: Registry, row: SeriesRow, collect?: Collect<Counter>): Counter {
  return new Counter({ name: row.name, help: row.help, labelNames: row.labels, registers: [registry], ...(collect && { collect }) });
}

/** A gauge of `row` in `registry`; with `collect`, its values are set at scrape time. */
export function gaugeOf(registry: Registry, row: SeriesRow, collect?: Collect<Gauge>): Gauge {
  return new Gauge({ name: row.name, help: row.help, labelNames: row.labels, registers: [registry], ...(collect && { collect }) });
}

/** A histogram of `row` (which has buckets) in `registry`. */
export function histogramOf(registry: Registry, row: SeriesRow): Histogram {
  return new Histogram({ name: row.name, help: row.help, labelNames: row.labels, buckets: [...(row.buckets ?? [])], registers: [registry] });
}
