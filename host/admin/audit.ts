// The audit trail of operators' actions through the admin listener: each force-release attempt,
// granted or refused, is one log line and one item in the dashboard's activity feed, naming who
// (the caller's address, and whether it showed the admin token), when and which lock.
import type { Logger } from "pino";
import type { ActivityFeed, AuditEntry } from "./feed.js";

/** What the log says of each outcome, at which level. */
const SAID: Record<AuditEntry["outcome"], readonly ["info" | "warn", string]> = {
  released: ["warn", "lock force-released through the admin listener"],
  // A free lock was asked for, and nothing was taken from anyone: said as that, not as a release.
  "not-held": ["info", "force-release through the admin listener: the lock was not held"],
  refused: ["warn", "admin force-release refused"],
  failed: ["warn", "admin force-release failed"],
};

/** Records `entry` in the log and in the feed. */
export function audit(log: Logger, feed: ActivityFeed, entry: AuditEntry): void {
  const [level, msg] = SAID[entry.outcome];
  log[level](
    {
      audit: entry.action,
      lock: entry.name,
      kind: entry.kind,
      outcome: entry.outcome,
      holders: entry.holders,
      from: entry.by.address,
      token: entry.by.token,
      ...(entry.detail !== undefined && { detail: entry.detail }),
    },
    msg,
  );
  feed.audit(entry);
}
