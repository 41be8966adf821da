// The operator's listing of held locks: one page from the backend (LockBackend.list), each lock
// with its age and the waiters this host has queued on it. Owner tokens are left out: with one,
// anyone can release or restore the lock, and a listing goes to screens and dashboards.
import type { LockRecord } from "../../kit/backend.js";
import { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import type { SharedMode } from "../../kit/shared.js";
import { checkKind, SHARED_KINDS, type SharedKind } from "../../kit/kinds.js";
import { waitKey } from "./kinds.js";

/** A held lock as listings show it: its record without the owner token, and what this host knows. */
export type LockListing = Omit<LockRecord, "owner"> & {
  /** How long ago it was acquired, on the server's clock as of the listing. */
  readonly ageMs: number;
  /** Acquisitions of this host waiting for it now (waiters on other hosts are not known here). */
  readonly waiters: number;
  /** Set when listing read/write locks or semaphores (one row per holder): the kind and the holder's mode. */
  readonly kind?: SharedKind;
  readonly mode?: SharedMode;
};

/** What to list (see LockService.list). */
export interface ListOptions {
  /** Only lock names starting with this, e.g. "billing:" or "global:jobs/". */
  readonly prefix?: string;
  /** Only locks taken by this plugin ("host" for host-side callers); applied to each page. */
  readonly plugin?: string;
  /** The `cursor` of the previous page. */
  readonly cursor?: string;
  /** Locks per page, 1 to MAX_LIST_LIMIT (default 100). */
  readonly limit?: number;
  /** List read/write locks or semaphores instead of mutexes: a row per holder, a page of keys at a time. */
  readonly kind?: SharedKind;
}

/** One page of a listing. */
export interface LockListPage {
  readonly locks: readonly LockListing[];
  /** Pass it as `cursor` for the next page; absent on the last one. */
  readonly cursor?: string;
}

/** The largest page a listing returns. */
export const MAX_LIST_LIMIT = 1_000;
const DEFAULT_LIST_LIMIT = 100;

/** One page of the locks held now (see LockService.list). */
export async function list(core: ServiceCore, options: ListOptions = {}): Promise<LockListPage> {
  core.checkOpen();
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new LockhostError("INVALID_ARGUMENT", `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}`);
  }
  for (const name of ["prefix", "plugin", "cursor"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "string") throw new LockhostError("INVALID_ARGUMENT", `${name} must be a string, got ${typeof value}`);
  }
  if (options.kind !== undefined) checkKind(options.kind, SHARED_KINDS);
  const request = { limit, ...(options.prefix && { prefix: options.prefix }), ...(options.cursor !== undefined && { cursor: options.cursor }) };
  if (options.kind !== undefined) return listShared(core, options.kind, request, options.plugin);
  const page = await core.backendCall(() => core.backend.list(request));
  const locks: LockListing[] = [];
  for (const { owner: _owner, ...record } of page.locks) {
    if (options.plugin !== undefined && record.holder.plugin !== options.plugin) continue;
    const nowMs = record.expiresAtMs - record.ttlRemainingMs;
    locks.push({ ...record, ageMs: Math.max(0, nowMs - record.acquiredAtMs), waiters: core.waits.waitingOn(record.key) });
  }
  return page.cursor === undefined ? { locks } : { locks, cursor: page.cursor };
}

/** A page of read/write locks or semaphores: one row per live holder of each key listed. */
async function listShared(core: ServiceCore, kind: SharedKind, request: { readonly limit: number; readonly prefix?: string; readonly cursor?: string }, plugin: string | undefined): Promise<LockListPage> {
  const page = await core.backendCall(() => core.shared(kind).list(request));
  const locks: LockListing[] = [];
  for (const record of page.records) {
    const waiters = core.waits.waitingOn(waitKey(kind, record.key));
    for (const { owner: _owner, mode, ...h } of record.holders) {
      if (plugin !== undefined && h.holder.plugin !== plugin) continue;
      const nowMs = h.expiresAtMs - h.ttlRemainingMs;
      locks.push({ key: record.key, ...h, ageMs: Math.max(0, nowMs - h.acquiredAtMs), waiters, kind, mode });
    }
  }
  return page.cursor === undefined ? { locks } : { locks, cursor: page.cursor };
}
