// The activity feed (lock events and operators' actions, newest first) and this node's schedule
// runs, as they happen.
import { badge, bodyOf, byId, cell, emptyRow } from "./dom.js";
import { formatMs, formatTime } from "./format.js";
import type { Audit, FeedItem } from "./wire.js";

const FEED_ROWS = 60;
const TICK_ROWS = 20;
const feed = bodyOf(byId("feed", HTMLTableElement));
const ticks = bodyOf(byId("ticks", HTMLTableElement));

/** Empties both tables (a new snapshot follows). */
export function resetActivity(): void {
  feed.replaceChildren();
  ticks.replaceChildren();
  emptyRow(feed, 6, "waiting for activity");
  emptyRow(ticks, 4, "no schedule has run yet");
}

/** Adds `item` at the top of its table; `fresh` ones flash. */
export function addActivity(item: FeedItem, fresh: boolean): void {
  if (item.type === "tick") {
    const row = topRow(ticks, fresh, TICK_ROWS);
    cell(row, formatTime(item.tickAtMs));
    cell(row, item.id, "name");
    cell(row, item.outcome);
    cell(row, item.fence === undefined ? "" : String(item.fence));
    return;
  }
  const row = topRow(feed, fresh, FEED_ROWS);
  cell(row, formatTime(item.atMs));
  const type = item.type === "audit" ? "audit" : item.type;
  row.insertCell().appendChild(badge(type, type));
  const lock = cell(row, item.name, "name");
  if (item.kind !== undefined && item.kind !== "mutex") lock.appendChild(badge(item.kind, "kind"));
  cell(row, "fence" in item && item.fence !== undefined ? String(item.fence) : "");
  cell(row, "plugin" in item ? item.plugin : "");
  cell(row, detailOf(item));
  if (item.type === "audit") row.classList.add("audit", item.outcome);
}

/** What the feed's last column says of `item`. */
function detailOf(item: Exclude<FeedItem, { type: "tick" }>): string {
  switch (item.type) {
    case "lost":
      return item.reason;
    case "released":
      return `held ${formatMs(item.heldMs)}`;
    case "waited":
      return `${item.outcome} after ${formatMs(item.waitedMs)}`;
    case "acquired":
      return `TTL ${formatMs(item.ttlMs)}`;
    case "force-released":
      return item.found ? "" : "was not held";
    case "audit":
      return auditLine(item);
  }
}

/** The audit line: what was done, by whom, with what outcome. */
export function auditLine(audit: Audit): string {
  const token = audit.by.token === "valid" ? "with the admin token" : audit.by.token === "wrong" ? "with a wrong token" : "without a token";
  const outcome =
    audit.outcome === "released"
      ? `released (${audit.holders ?? 0} holder${audit.holders === 1 ? "" : "s"})`
      : audit.outcome === "not-held"
        ? "was not held"
        : `${audit.outcome}: ${audit.detail ?? ""}`;
  return `${audit.action} by ${audit.by.address} ${token}: ${outcome}`;
}

function topRow(tbody: HTMLTableSectionElement, fresh: boolean, keep: number): HTMLTableRowElement {
  if (tbody.rows[0]?.className === "empty") tbody.deleteRow(0);
  const row = tbody.insertRow(0);
  if (fresh) row.className = "fresh";
  while (tbody.rows.length > keep) tbody.deleteRow(tbody.rows.length - 1);
  return row;
}
