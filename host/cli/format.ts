// How the CLI shows a lock's status and a host's counters to a person (--json shows the data
// itself). Kept apart from main.ts, which runs the CLI when imported.
import type { AdminStatsBody } from "../admin/server.js";
import type { LockListPage, LockRef, LockStatus } from "../locking/service.js";
import { kindRow, roleOf } from "../../kit/kinds.js";
import type { LockStats } from "../locking/stats.js";
import { scheduleOfLock } from "../scheduler/scheduler.js";

/**
 * A lock's status as `lockhost status` prints it: a lock with one holder (a mutex, a leader) one
 * field a line, the owner token only when shown (it says how to see it); one with several
 * holders (read/write locks, semaphores) a line per holder.
 */
export function formatStatus(s: LockStatus): string {
  const row = kindRow(s.kind);
  const what = row.isDefault ? s.name : `${row.label} ${s.name}`;
  const waiting = `${row.roles.exclusive ?? "waiter"}(s) queued`;
  const schedule = row.isDefault ? scheduleOfLock(s.name) : undefined;
  if (!s.held) {
    return [
      `${what}: not held${s.queued > 0 ? ` (${s.queued} ${waiting})` : ""}`,
      ...elsewhereLines(s.heldElsewhere ?? []),
      ...(schedule !== undefined ? scheduleLines(schedule, false) : []),
    ].join("\n");
  }
  const iso = (ms: number): string => new Date(ms).toISOString();
  const one = s.holders[0]!;
  if (row.store === "single") {
    return [
      `${what}: held`,
      `  holder:        plugin ${one.plugin} on node ${one.node}${one.hostname ? ` (host ${one.hostname})` : ""}`,
      `  owner:         ${one.owner ?? "(hidden: --show-owner on redis or pg, or the admin token through --admin)"}`,
      `  fence:         ${one.fence}`,
      ...(row.elects ? [`  value:         ${JSON.stringify(one.value ?? "")}`] : []),
      `  acquired_at:   ${iso(one.acquiredAtMs)}`,
      `  expires_at:    ${iso(one.expiresAtMs)}`,
      `  ttl_remaining: ${one.ttlRemainingMs} ms`,
      `  ttl:           ${one.ttlMs} ms (the lease's length, as last set)`,
      ...(schedule !== undefined ? scheduleLines(schedule, true) : []),
    ].join("\n");
  }
  const lines = [
    `${what}: held by ${s.holders.length}${row.limit ? ` of ${s.limit} ${row.limit.field}` : ""}${row.queuesExclusive ? `, ${s.queued} ${waiting}` : ""}`,
  ];
  for (const h of s.holders) {
    const mode = roleOf(s.kind, h.mode);
    lines.push(
      `  ${mode.padEnd(6)} fence ${h.fence}  plugin ${h.plugin} on node ${h.node}  acquired ${iso(h.acquiredAtMs)}  ` +
        `ttl_remaining ${h.ttlRemainingMs} ms of ${h.ttlMs} ms`,
    );
  }
  return lines.join("\n");
}

/**
 * What a schedule lock's status means: the lock is held only from a tick until half a period
 * after it (longer while the job runs), so between ticks "not held" is the normal answer, not a
 * fault, and which node ran the last tick is in the hosts' tick counters and logs.
 */
function scheduleLines(id: string, held: boolean): string[] {
  return [
    held
      ? `  schedule:      ${id}: the holder took it for the tick at acquired_at and holds it until half a period after that tick (or until its job ` +
        `ends, if later)`
      : `  schedule ${id}: its lock is held only from a tick until half a period after it (or until the job ends, if later), so between ticks it is not held;`,
    ...(held
      ? []
      : [
          `  which node ran each tick: the hosts' logs ("schedule lock taken; running"), lockhost status --admin URL (ticks by outcome), ` +
            `lockhost_schedule_ticks_total`,
        ]),
  ];
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
  handoffs: ["local handoffs"],
  cleanups: ["left-behind locks released"],
  unsettled: ["owed releases now"],
  renewalTicks: ["renewal ticks"],
  renewalBatches: ["renewal batches"],
  renewalTimers: ["renewal timers"],
  delegatedGrants: ["delegated grants"],
  delegatedHandoffs: ["delegated handoffs"],
  delegationsYielded: ["delegations given up"],
};

/** A host's counters as a two-column table, under a line naming the node and backend. */
export function formatStats(body: AdminStatsBody, url: string): string {
  const kind = body.distributed ? "distributed" : "not distributed: this process only";
  const stats = body.stats as unknown as Record<string, unknown>;
  const rows = Object.entries(STAT_LABELS).map(([key, [label, unit = ""]]): [label: string, value: string, unit: string] => [
    label,
    String(stats[key] ?? "-"),
    unit,
  ]);
  // A newer host may count more than this CLI knows: show those too, by their own names.
  for (const [key, value] of Object.entries(stats)) if (!(key in STAT_LABELS)) rows.push([key, String(value), ""]);
  const labelWidth = Math.max(...rows.map(([label]) => label.length));
  const valueWidth = Math.max(...rows.map(([, value]) => value.length));
  return [
    `node ${body.node}, ${body.backend} backend (${kind}${body.backendUp === false ? ", NOT ANSWERING" : ""}), admin ${url}`,
    ...rows.map(([label, value, unit]) => `  ${label.padEnd(labelWidth)}  ${value.padStart(valueWidth)}${unit ? ` ${unit}` : ""}`),
    ...tickLines(body.schedules ?? {}),
  ].join("\n");
}

/** Each schedule's ticks by outcome, one line per schedule (skipped_error: the backend failed, as in an outage). */
function tickLines(schedules: Readonly<Record<string, Readonly<Record<string, number>>>>): string[] {
  const ids = Object.keys(schedules);
  if (ids.length === 0) return [];
  const width = Math.max(...ids.map((id) => id.length));
  return [
    "schedule ticks on this node:",
    ...ids.map(
      (id) =>
        `  ${id.padEnd(width)}  ${Object.entries(schedules[id]!)
          .map(([outcome, n]) => `${outcome} ${n}`)
          .join(", ")}`,
    ),
  ];
}

/** A page of held locks as a table, a row per holder with its kind, and the command that shows the next page. */
export function formatLocks(page: LockListPage, next: (cursor: string) => string): string {
  const notes = (page.skipped ?? []).map((s) => `(${kindRow(s.kind).plural} not listed: ${s.reason})`);
  if (page.locks.length === 0 && page.cursor === undefined) return ["no lock held", ...notes].join("\n");
  const rows = page.locks.map((l) => [
    kindRow(l.kind).isDefault ? l.name : `${l.name} (${roleOf(l.kind, l.mode)})`,
    l.kind,
    `${l.holder.plugin} @ ${l.holder.node}`,
    String(l.fence),
    duration(l.ageMs),
    `${duration(l.ttlRemainingMs)} of ${duration(l.ttlMs)}`,
    String(l.waiters),
  ]);
  const header = ["LOCK", "KIND", "HOLDER", "FENCE", "AGE", "TTL LEFT", "WAITERS"];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === 3 || i === 6 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
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
