// What the steps of every kind share in one backend instance.
import type { EtcdClient } from "./client.js";
import type { HeldBook } from "./held.js";
import type { ClassLease, Leases } from "./leases.js";
import type { PrefixWatcher } from "./watcher.js";

export interface EtcdContext {
  readonly client: EtcdClient;
  readonly leases: Leases;
  readonly book: HeldBook;
  readonly watcher: PrefixWatcher;
  readonly prefix: string;
}

/**
 * When a lock of `ttlMs` taken now ends (epoch ms): its TTL from now, or sooner if its lease is
 * not sure to last that long (keepalives went unanswered), so a holder never counts on a lock
 * its lease may already have ended.
 */
export function endOf(nowMs: number, ttlMs: number, lease: ClassLease): number {
  return Math.min(nowMs + ttlMs, lease.sureUntilMs);
}

/** True for etcd's refusal of a put on a lease it does not have (expired since this host last heard of it). */
export function isLeaseGone(err: unknown): boolean {
  return /requested lease not found|lease not found/.test(String((err as Error)?.message));
}

/**
 * The hint of a contended acquisition: when the earliest holder's recorded end comes. None once
 * it has passed: that holder's host deletes the key at its end (or its lease does, if the host
 * is gone), and the deletion wakes the waiters through the watch; retrying at once would only
 * find the key again until the deletion lands.
 */
export function retryAfter(ends: readonly number[]): { retryAfterMs?: number } {
  if (ends.length === 0) return {};
  const left = Math.min(...ends) - Date.now();
  return left > 0 ? { retryAfterMs: left } : {};
}
