// What status reports: a row of the status statement (sql.ts) as a LockRecord.
import type { LockRecord } from "../../../kit/index.js";
import type { Rows } from "./session.js";

/** The record of `key` from the status statement's row (owner, fence, ..., remaining ms, ttl ms, value). */
export function toRecord(key: string, row: Rows[number]): LockRecord {
  const [owner, fence, plugin, node, host, acquiredAt, expiresAt, remaining, ttl, value] = row;
  const acquiredAtMs = Number(acquiredAt);
  const expiresAtMs = Number(expiresAt);
  const ttlRemainingMs = Number(remaining);
  return {
    key,
    owner: String(owner),
    fence: Number(fence),
    holder: { plugin: String(plugin), node: String(node), hostname: String(host) },
    acquiredAtMs,
    expiresAtMs,
    ttlMs: leaseTtl(ttl === null || ttl === undefined ? undefined : Number(ttl), ttlRemainingMs, expiresAtMs - acquiredAtMs),
    ttlRemainingMs,
    ...(typeof value === "string" && { value }),
  };
}

/**
 * The TTL status reports: the row's `ttl_ms`, kept within what is certainly true of any lease
 * (at least what is left of it, at most `expires_at - acquired_at`, which adds the lock's age
 * at its last renewal), so a row an older version half-updated (its renew does not write
 * `ttl_ms`) still gives a possible TTL. A row an older version wrote has no `ttl_ms`: then the
 * remaining lease, the lower bound, since restoring with a shorter TTL renews sooner than
 * needed while a longer one could hold the lock far past its holder's intent. Never below 1 ms.
 */
function leaseTtl(recorded: number | undefined, remainingMs: number, upToMs: number): number {
  const ttl = recorded !== undefined && Number.isSafeInteger(recorded) ? recorded : remainingMs;
  return Math.max(1, remainingMs, Math.min(ttl, upToMs));
}
