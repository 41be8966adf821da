// The operation tables of abi/ABI.md (the spec) and of the README (in brief), written from the
// one operation table, abi/ops.ts.
import { OPS, signatureOf, type OpSpec } from "../../abi/ops.js";

/** ABI.md's table: every import, its signature, its result and the codes it returns. */
export function abiSpecTable(): string {
  return table(["import", "signature", "result", "codes (negated)"], (op) => [
    op.doc,
    op.codes.length > 0 ? op.codes.map((c) => `\`${c}\``).join(", ") : "none",
  ]);
}

/** The README's table: every import, its signature, its result in a few words. */
export function abiBriefTable(): string {
  return table(["import (`lock`)", "signature", "result"], (op) => [op.brief]);
}

function table(header: readonly string[], rest: (op: OpSpec) => string[]): string {
  const rows = (OPS as readonly OpSpec[]).map((op) => [`\`${op.name}\``, `\`${signatureOf(op)}\``, ...rest(op)]);
  return [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}
