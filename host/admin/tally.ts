// Counters and histograms for the hot paths (a lock taken, a guest call): each label set's
// values are plain numbers in a cell made once, so counting is an increment and observing a
// short scan of the bucket bounds; prom-client reads the cells when /metrics is scraped.
// prom-client's own children hash their labels into a string on every inc or observe (0.5 µs
// and 2 µs measured): more than a memory backend's whole try+release costs the LockService.
import type { Metric, Registry } from "prom-client";
import type { SeriesRow } from "./metric-series.js";
import { counterOf } from "./series-metric.js";

type Labels = Readonly<Record<string, string>>;

/** One label set's count. */
export interface CountCell {
  n: number;
}

/** One label set's observations: per bucket (not cumulative; +Inf last), their sum and number. */
export class Buckets {
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0);
  }

  clear(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }

  observe(value: number): void {
    const { bounds } = this;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

/** A counter of `row` whose label sets are cells: cell(labels) makes one (shown as 0 until counted) or finds it. */
export function counterTally(registry: Registry, row: SeriesRow): (labels: Labels) => CountCell {
  const cells = new Map<string, { readonly labels: Labels; readonly cell: CountCell }>();
  counterOf(registry, row, function () {
    this.reset();
    for (const { labels, cell } of cells.values()) this.inc(labels, cell.n);
  });
  return (labels) => {
    const key = keyOf(row, labels);
    let entry = cells.get(key);
    if (entry === undefined) cells.set(key, (entry = { labels: { ...labels }, cell: { n: 0 } }));
    return entry.cell;
  };
}

/** A histogram of `row` (which has buckets) whose label sets are Buckets: cell(labels) makes one or finds it. */
export function histogramTally(registry: Registry, row: SeriesRow): (labels: Labels) => Buckets {
  const bounds = row.buckets ?? [];
  const cells = new Map<string, { readonly labels: Labels; readonly cell: Buckets }>();
  const les = [...bounds.map(String), "+Inf"];
  // What prom-client's registry reads of a metric when it renders one: its name, help, type and
  // values (each bucket's cumulative count as <name>_bucket{le}, then _sum and _count).
  const metric = {
    name: row.name,
    help: row.help,
    type: "histogram",
    aggregator: "sum",
    get() {
      const values: { labels: Labels; value: number; metricName: string }[] = [];
      for (const { labels, cell } of cells.values()) {
        // A label set shows from its first observation, as prom-client's own histograms do.
        if (cell.count === 0) continue;
        let cumulative = 0;
        cell.counts.forEach((n, i) => {
          cumulative += n;
          values.push({ labels: { ...labels, le: les[i]! }, value: cumulative, metricName: `${row.name}_bucket` });
        });
        values.push({ labels, value: cell.sum, metricName: `${row.name}_sum` }, { labels, value: cell.count, metricName: `${row.name}_count` });
      }
      return { name: row.name, help: row.help, type: "histogram", aggregator: "sum", values };
    },
    // Zeroed, not dropped: the meters keep their cells.
    reset() {
      for (const { cell } of cells.values()) cell.clear();
    },
  };
  registry.registerMetric(metric as unknown as Metric);
  return (labels) => {
    const key = keyOf(row, labels);
    let entry = cells.get(key);
    if (entry === undefined) cells.set(key, (entry = { labels: { ...labels }, cell: new Buckets(bounds) }));
    return entry.cell;
  };
}

/** A label set's key: its values in the row's label order (label values never hold a NUL). */
function keyOf(row: SeriesRow, labels: Labels): string {
  return row.labels.map((l) => labels[l] ?? "").join("\0");
}
