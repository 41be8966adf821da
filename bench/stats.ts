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

/** Where `table` writes rows as JSON (`npm run bench -- --json`): the part being run, else off. */
let jsonPart: string | undefined;

/** Switches every later table to JSON lines for `part` (one object per row, on stdout). */
export function reportAsJson(part: string): void {
  jsonPart = part;
}

/** The JSON key of a column: the common measures get one name whatever a table calls them. */
function jsonKey(column: string): string {
  if (/\/s$/.test(column)) return "opsPerSec";
  if (column === "p50 µs") return "p50Us";
  if (column === "p99 µs") return "p99Us";
  return column;
}

/**
 * Formats rows as an aligned text table; in JSON mode, writes each row as one object (`part`,
 * `path`: its first cell, then `p50Us`, `p99Us`, `opsPerSec` and the other columns, numbers
 * parsed) and returns "".
 */
export function table(header: readonly string[], rows: readonly (readonly string[])[]): string {
  if (jsonPart !== undefined) {
    for (const row of rows) {
      const entry: Record<string, string | number> = { part: jsonPart, path: row[0]! };
      header.slice(1).forEach((column, i) => {
        const cell = row[i + 1]!;
        entry[jsonKey(column)] = cell.trim() !== "" && Number.isFinite(Number(cell)) ? Number(cell) : cell;
      });
      process.stdout.write(`${JSON.stringify(entry)}\n`);
    }
    return "";
  }
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), line(widths.map((w) => "-".repeat(w))), ...rows.map(line)].join("\n");
}
