// The status-code table of docs/abi.md, written from abi/status.ts: every code a call can
// return negated, with its TSDoc line, so the brief cannot stop short of the codes the host has.
import { markdownTable } from "./blocks.js";
import { codes } from "./guest-sdks.js";

/** Every status code but OK as a Markdown table: code, name, meaning. */
export function statusCodesTable(statusSource: string): string {
  const rows = codes(statusSource)
    .filter((c) => c.value > 0)
    .map((c) => [String(c.value), `\`${c.name}\``, c.doc.replaceAll("|", "\\|")]);
  return markdownTable(["code", "name", "meaning"], rows);
}
