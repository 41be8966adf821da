// The table of lock kinds in docs/lock-model.md and ABI.md, written from the one kind table
// (kit/kinds.ts): what each kind is called, how it is held, how the host API, a guest and an
// operator name it.
import { markdownTable } from "./blocks.js";
import { KINDS, kindRow, LOCK_KINDS, roleOf, type LockKind } from "../../kit/kinds.js";

/** The host API options that take `kind` (what a spec says), or the verb that takes it. */
function hostForm(kind: LockKind): string {
  const row = KINDS[kind];
  if (row.elects) return "`campaign(name, { ttlMs, value })`";
  if (row.isDefault) return "no `kind` (`tryLock`, `acquire`, `withLock`)";
  const mode = row.modes.length > 1 ? `, mode: ${row.modes.map((m) => `"${m}"`).join(" \\| ")}` : "";
  const limit = row.limit === null ? "" : `, ${row.limit.field}: N`;
  // A kind that rides the mutex's operations under a flag is the mutex's `fair: true`.
  const flagged = Object.values(kindRow(kind).ops).some((op) => op.flag !== undefined);
  return `\`{ kind: "${kind}"${mode}${limit} }\`${flagged ? " or `fair: true`" : ""}`;
}

/** The ABI operations that take the kind (per mode), with the flag that picks it. */
function guestForm(kind: LockKind): string {
  const row = KINDS[kind];
  return Object.entries(row.ops)
    .map(([, op]) => `\`${op.try}\` / \`${op.acquire}\`${op.flag === undefined ? "" : ` with \`${row.statusFlagName}\``}`)
    .join(", ");
}

/** The kinds as a Markdown table. */
export function kindsTable(): string {
  const header = ["kind", "what", "holders (role)", "limit", "queue of waiters", "host API", "guest (`lock`)", "status flag"];
  const rows = LOCK_KINDS.map((kind) => {
    const row = KINDS[kind];
    const holders = row.modes.map((m) => `${m} (${roleOf(kind, m)})`).join(", ");
    return [
      `\`${kind}\``,
      row.label,
      holders,
      row.limit === null ? "—" : `\`${row.limit.field}\` ${row.limit.min}–${row.limit.max.toLocaleString("en-US")}`,
      row.queuesExclusive ? "FIFO across hosts" : "—",
      hostForm(kind),
      guestForm(kind),
      row.statusFlagName === "" ? (row.elects ? "`leader` op" : "none") : `\`${row.statusFlagName}\``,
    ];
  });
  return markdownTable(header, rows);
}
