// The operation tables of abi/ABI.md (the spec) and of docs/abi.md (in brief), written from the
// one operation table, abi/ops.ts: one table for module `lock`, one for what a guest can do
// under its lock (modules lockhost, http, config, log, and host functions).
import { markdownTable } from "./blocks.js";
import { OPS, signatureOf, type OpSpec } from "../../abi/ops.js";

/** Which rows a table shows: the lock module's, or every other module's. */
export type OpGroup = "lock" | "capabilities";

const inGroup =
  (group: OpGroup) =>
  (op: OpSpec): boolean =>
    (op.module === "lock") === (group === "lock");

/** ABI.md's table: every import, its signature, its result and the codes it returns. */
export function abiSpecTable(group: OpGroup = "lock"): string {
  return table(group, ["import", "signature", "result", "codes (negated)"], (op) => [
    op.doc,
    op.codes.length > 0 ? op.codes.map((c) => `\`${c}\``).join(", ") : "none",
  ]);
}

/** The brief's table (docs/abi.md, docs/guests.md): every import, its signature, its result in a few words. */
export function abiBriefTable(group: OpGroup = "lock"): string {
  return table(group, [group === "lock" ? "import (`lock`)" : "import", "signature", "result"], (op) => [op.brief]);
}

function table(group: OpGroup, header: readonly string[], rest: (op: OpSpec) => string[]): string {
  const rows = (OPS as readonly OpSpec[])
    .filter(inGroup(group))
    .map((op) => [`\`${group === "lock" ? op.name : `${op.module}.${op.name}`}\``, `\`${signatureOf(op)}\``, ...rest(op)]);
  return markdownTable(header, rows);
}
