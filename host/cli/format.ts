// How the CLI shows a lock's status and a host's counters to a person (--json shows the data
// itself). Kept apart from main.ts, which runs the CLI when imported.
import type { AdminStatsBody } from "../admin/server.js";
import type { LockListPage, LockRef, LockStatus, SharedLockStatus } from "../locking/service.js";
import { kindRow, roleOf, type SharedKind } from "../../kit/kinds.js";
import type { LockStats } from "../locking/stats.js";

/** Human-readable status, one field a line; a status without its owner token says how to see it. */
export function formatStatus(s: LockStatus | Omit<Extract<LockStatus, { held: true }>, "owner">): string {
  if (!s.held) return [`${s.key}: not held`, ...elsewhereLines(s.heldElsewhere ?? [])].join("\n");
  const iso = (ms: number): string => new Date(ms).toISOString();
  return [
    `${s.key}: held`,
    `  holder:        plugin ${s.holder.plugin} on node ${s.holder.node}${s.holder.hostname ? ` (host ${s.holder.hostname})` : ""}`,
    `  owner:         ${"owner" in s && typeof s.owner === "string" ? s.owner : "(hidden: --show-owner on redis or pg, or the admin token through --admin)"}`,
    `  fence:         ${s.fence}`,
    `  acquired_at:   ${iso(s.acquiredAtMs)}`,
    `  expires_at:    ${iso(s.expiresAtMs)}`,
    `  ttl_remaining: ${s.ttlRemainingMs} ms`,
    `  ttl:           ${s.ttlMs} ms (the lease's length, as last set)`,
  ].join("\n");
}

/** A read/write lock's or semaphore's status as `lockhost status --kind` prints it. */
export function formatSharedStatus(kind: SharedKind, name: string, s: SharedLockStatus | null, elsewhere: readonly LockRef[] = []): string {
  const row = kindRow(kind);
  const what = row.label;
  const waiting = `${row.roles.exclusive ?? "waiter"}(s) queued`;
  if (s === null || s.holders.length === 0) {
    return [`${what} ${name}: not held${s && s.queued > 0 ? ` (${s.queued} ${waiting})` : ""}`, ...elsewhereLines(elsewhere)].join("\n");
  }
  const lines = [`${what} ${name}: held by ${s.holders.length}${row.limit ? ` of ${s.limit} ${row.limit.field}` : ""}${row.queuesExclusive ? `, ${s.queued} ${waiting}` : ""}`];
  for (const h of s.holders) {
    const mode = roleOf(kind, h.mode);
    lines.push(`  ${mode.padEnd(6)} fence ${h.fence}  plugin ${h.plugin} on node ${h.node}  acquired ${new Date(h.acquiredAtMs).toISOString()}  ttl_remaining ${h.ttlRemainingMs} ms of ${h.ttlMs} ms`);
  }
  return lines.join("\n");
}

/** A line per lock of the key held elsewhere, with the command that shows it. */
function elsewhereLines(refs: readonly LockRef[]): string[] {
  return refs.map((ref) => {
    const row = kindRow(ref.kind);
    return `  but held: ${row.label} ${ref.name}  (lockhost status ${ref.name}${row.isDefault ? "" : ` --kind ${ref.kind}`})`;
  });
}

// Keyed by LockStats, so a counter added there fails to compile here until it has a label.
const STAT_LABELS: Record<keyof LockStats, readonly [label: string, unit?: string]> = {
  held: ["locks held"],
  keepalive: ["kept alive"],
  acquisitions: ["acquisitions"],
  contended: ["contended tries"],
  renewalsOk: ["renewals ok"],
  renewalsFailed: ["renewals failed"],
  lost: ["leases lost"],
  waiters: ["waiting now"],
  waits: ["waits ended"],
  waitTimeouts: ["wait timeouts"],
  waitTimeMsTotal: ["time waited", "ms"],
  renewalTicks: ["renewal ticks"],
  renewalBatches: ["renewal batches"],
  renewalTimers: ["renewal timers"],
};

/** A host's counters as a two-column table, under a line naming the node and backend. */
export function formatStats(body: AdminStatsBody, url: string): string {
  const kind = body.distributed ? "distributed" : "not distributed: this process only";
  const stats = body.stats as unknown as Record<string, unknown>;
  const rows = Object.entries(STAT_LABELS).map(([key, [label, unit = ""]]): [label: string, value: string, unit: string] => [label, String(stats[key] ?? "-"), unit]);
  // A newer host may count more than this CLI knows: show those too, by their own names.
  for (const [key, value] of Object.entries(stats)) if (!(key in STAT_LABELS)) rows.push([key, String(value), ""]);
  const labelWidth = Math.max(...rows.map(([label]) => label.length));
  const valueWidth = Math.max(...rows.map(([, value]) => value.length));
  return [
    `node ${body.node}, ${body.backend} backend (${kind}), admin ${url}`,
    ...rows.map(([label, value, unit]) => `  ${label.padEnd(labelWidth)}  ${value.padStart(valueWidth)}${unit ? ` ${unit}` : ""}`),
  ].join("\n");
}

/** A page of held locks as a table, a row per holder with its kind, and the command that shows the next page. */
export function formatLocks(page: LockListPage, next: (cursor: string) => string): string {
  const notes = (page.skipped ?? []).map((s) => `(${kindRow(s.kind).plural} not listed: ${s.reason})`);
  if (page.locks.length === 0 && page.cursor === undefined) return ["no lock held", ...notes].join("\n");
  const rows = page.locks.map((l) => [
    kindRow(l.kind).isDefault ? l.key : `${l.key} (${roleOf(l.kind, l.mode)})`,
    l.kind,
    `${l.holder.plugin} @ ${l.holder.node}`,
    String(l.fence),
    duration(l.ageMs),
    `${duration(l.ttlRemainingMs)} of ${duration(l.ttlMs)}`,
    String(l.waiters),
  ]);
  const header = ["LOCK", "KIND", "HOLDER", "FENCE", "AGE", "TTL LEFT", "WAITERS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === 3 || i === 6 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  const out = [line(header), ...rows.map(line)];
  if (page.cursor !== undefined) out.push("", `more: ${next(page.cursor)}`);
  out.push(...notes);
  return out.join("\n");
}

/** A duration for people: ms, s or min. */
function duration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 120_000) return `${(ms / 1_000).toFixed(1)} s`;
  if (ms < 7_200_000) return `${(ms / 60_000).toFixed(1)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}
