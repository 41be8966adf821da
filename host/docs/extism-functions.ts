// The table of lockhost's lock functions for Extism plugins in docs/guests-extism.md, written
// from abi/extism.ts (itself derived from the operation table): each function's JSON arguments
// and what its reply's `result` is.
import { LOCK_FUNCTIONS } from "../../abi/extism.js";
import { markdownTable } from "./blocks.js";

/** The lock functions as a Markdown table. */
export function extismFunctionsTable(): string {
  const rows = LOCK_FUNCTIONS.map((f) => {
    const value = f.output === undefined ? "" : `; \`value\`: ${f.output === "string" ? "the token" : f.op.name === "leader" ? "the leader" : "the status"}`;
    return [`\`${f.name}\``, f.fields.map((a) => `\`${a.field}\``).join(", ") || "none", `${f.op.brief}${value}`];
  });
  return markdownTable(["function", "JSON arguments", "result"], rows);
}
