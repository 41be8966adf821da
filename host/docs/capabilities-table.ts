// The capability list of docs/guests.md, written from the capability table
// (host/runtime/capabilities/table.ts): per capability, the name `lockhost.capability` takes,
// the imports it provides (abi/ops.ts), the [[plugins]] keys that grant it, and what it gives.
import { opsOf, type OpSpec } from "../../abi/ops.js";
import { tomlKey } from "../../kit/schema.js";
import { CAPABILITIES, type CapabilityRow } from "../runtime/capabilities/table.js";
import { markdownTable } from "./blocks.js";

/** One row per capability. */
export function capabilitiesTable(): string {
  const rows = (CAPABILITIES as readonly CapabilityRow[]).map((row) => [
    `\`${row.name}\``,
    row.modules.flatMap((m) => opsOf(m).map((op: OpSpec) => `\`${op.module}.${op.name}\``)).join(", "),
    keysOf(row),
    row.doc,
  ]);
  return markdownTable(["capability", "the guest imports", "the operator grants", "what it gives"], rows);
}

/** Its [[plugins]] keys: a key that holds a table of its own shows as that table. */
function keysOf(row: CapabilityRow): string {
  return Object.entries(row.fields)
    .map(([name, spec]) => (spec.kind === "custom" && spec.toml?.startsWith("{") ? `\`[plugins.${tomlKey(name)}]\`` : `\`${tomlKey(name)}\``))
    .join(", ");
}
