// Small statistics helpers for the benchmarks.

/** The q-quantile (0..1) of `values` (nearest rank). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** The median of `values`. */
export const median = (values: readonly number[]): number => quantile(values, 0.5);

/** One measured round: throughput and per-operation latency. */
export interface Round {
  readonly opsPerSec: number;
  readonly p50Us: number;
  readonly p99Us: number;
}

/** The per-metric median of several rounds. */
export function medianRound(rounds: readonly Round[]): Round {
  return {
    opsPerSec: median(rounds.map((r) => r.opsPerSec)),
    p50Us: median(rounds.map((r) => r.p50Us)),
    p99Us: median(rounds.map((r) => r.p99Us)),
  };
}

/** Formats rows as an aligned text table. */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
