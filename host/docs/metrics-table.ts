// The list of every series /metrics shows (docs/operators.md), written from the series table
// (host/admin/metric-series.ts): where it comes from, name, type, labels and meaning.
import { markdownTable } from "./blocks.js";
import { allSeries } from "../admin/metric-series.js";

/** The series as a Markdown table. */
export function metricsTable(): string {
  const header = ["from", "series", "type", "labels", "meaning"];
  const rows = allSeries().map((row) => [
    row.source,
    `\`${row.name}\``,
    row.type,
    row.labels.map((l) => `\`${l}\``).join(", ") || "—",
    row.help.replaceAll("|", "\\|"),
  ]);
  return markdownTable(header, rows);
}
