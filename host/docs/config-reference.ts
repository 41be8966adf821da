// The config reference of docs/operators.md, written from the declarations: every table, every
// key, its default (or an example), its range and unit, and its doc line. A test holds the page to it,
// so the reference cannot drift from what the reader accepts.
import type { FieldSpec, TableSchema } from "../../kit/schema.js";
import { tomlKey } from "../../kit/schema.js";
import { backendDescriptor, backendNames } from "../registry/registry.js";
import { ADMIN_SCHEMA, HOST_SCHEMA, LOCKING_SCHEMA, PLUGIN_SCHEMA, SCHEDULED_SCHEMA } from "../config/tables.js";
import { CAPABILITIES, type CapabilityRow } from "../runtime/capabilities/table.js";
import { DELEGATION_SCHEMA, KEEPALIVE_SCHEMA, WAITING_SCHEMA } from "../locking/options.js";

/** The reference as a TOML block: the host's tables and every registered backend's. */
export function configReference(): string {
  const backends = backendNames()
    .map((name) => backendDescriptor(name)!)
    .filter((d) => Object.keys(d.config.fields).length > 0)
    .map((d) => section(`[locking.${d.name}]`, d.config));
  const sections = [
    section("[host]", HOST_SCHEMA),
    section("[locking]", LOCKING_SCHEMA),
    ...backends,
    section("[locking.keepalive]", KEEPALIVE_SCHEMA),
    section("[locking.waiting]", WAITING_SCHEMA),
    section("[locking.delegation]", DELEGATION_SCHEMA),
    section("[admin]", ADMIN_SCHEMA),
    section("[[plugins]]", PLUGIN_SCHEMA),
    // Each capability's own table under the entry ([plugins.http]).
    ...(CAPABILITIES as readonly CapabilityRow[]).flatMap((row) => (row.table ? [section(`[plugins.${row.table.key}]`, row.table.schema)] : [])),
    section("[[scheduled]]", SCHEDULED_SCHEMA),
  ];
  return `\`\`\`toml\n${sections.join("\n\n")}\n\`\`\``;
}

function section(header: string, schema: TableSchema<unknown>): string {
  const rows: [string, string][] = [[header, schema.doc]];
  for (const [name, spec] of Object.entries(schema.fields) as [string, FieldSpec<unknown>][]) {
    rows.push([`${tomlKey(name)} = ${exampleValue(spec)}`, comment(spec)]);
  }
  const width = Math.max(...rows.map(([code]) => code.length)) + 2;
  return rows.map(([code, note]) => `${code.padEnd(width)}# ${note}`).join("\n");
}

/** What the reference shows as the key's value: its default, else an example. */
function exampleValue(spec: FieldSpec<unknown>): string {
  if (spec.toml !== undefined) return spec.toml;
  const shown = spec.default !== undefined && spec.defaultDoc === undefined ? spec.default : spec.example;
  return JSON.stringify(shown ?? "");
}

function comment(spec: FieldSpec<unknown>): string {
  const notes = [spec.doc];
  const range = rangeOf(spec);
  if (range) notes.push(range);
  if (spec.defaultDoc !== undefined) notes.push(`default: ${spec.defaultDoc}`);
  else if (spec.default === undefined && spec.toml === undefined) notes.push(spec.optional ? "optional" : "required");
  if (spec.env !== undefined) notes.push(`the CLI reads env ${spec.env} first`);
  return notes.join("; ");
}

function rangeOf(spec: FieldSpec<unknown>): string | undefined {
  const unit = spec.unit ? ` ${spec.unit}` : "";
  if (spec.kind === "int") return `${spec.min}..${spec.max}${unit}`;
  if (spec.kind === "number") {
    const low = spec.gt !== undefined ? `> ${spec.gt}` : spec.min !== undefined ? `>= ${spec.min}` : "";
    const high = spec.lt !== undefined ? `< ${spec.lt}` : spec.max !== undefined ? `<= ${spec.max}` : "";
    return [low, high].filter(Boolean).join(", ") + unit;
  }
  return undefined;
}
