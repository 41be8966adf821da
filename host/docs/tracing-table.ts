// The spans lockhost makes and their attributes (docs/operators.md, Observability), written from
// the table of host/tracing/spans.ts.
import { markdownTable } from "./blocks.js";
import { ATTRIBUTES, SPANS } from "../tracing/spans.js";

/** The spans, then the attributes, as two Markdown tables. */
export function tracingTable(): string {
  const spans = markdownTable(
    ["span", "kind", "what it covers", "attributes"],
    Object.values(SPANS).map((row) => [
      `\`${row.name}\``,
      row.kind,
      row.doc.replaceAll("|", "\\|"),
      row.attributes.map((a) => `\`${ATTRIBUTES[a].name}\``).join(", "),
    ]),
  );
  const attributes = markdownTable(
    ["attribute", "type", "values", "meaning"],
    Object.values(ATTRIBUTES).map((row) => [
      `\`${row.name}\``,
      row.type,
      "high" in row && row.high ? "many (span only, never a metric label)" : "few",
      row.doc.replaceAll("|", "\\|"),
    ]),
  );
  return `${spans}\n\n${attributes}`;
}
