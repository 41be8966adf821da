// The operator's listing of held locks: pages from each kind's steps (KindSteps.list), each
// holder with its lock's age and the waiters this host has queued on it.
import { LockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import { checkKind, KINDS, LOCK_KINDS, type LockKind } from "../../kit/kinds.js";
import type { HolderRecord } from "../../kit/steps.js";
import { servedKinds, waitKey } from "./kinds.js";

/**
 * A holder of a lock as listings show it, without the owner token (with one, anyone can release
 * or restore the lock, and a listing goes to screens and dashboards), and what this host knows.
 * A row per holder: a read/write lock or a semaphore may have several.
 */
export interface LockListing extends Omit<HolderRecord, "owner"> {
  /** The lock's fully qualified name. */
  readonly name: string;
  readonly kind: LockKind;
  /** How long ago it was acquired, on the server's clock as of the listing. */
  readonly ageMs: number;
  /** Acquisitions of this host waiting for it now (waiters on other hosts are not known here). */
  readonly waiters: number;
}

/** What to list (see LockService.list). */
export interface ListOptions {
  /** Only lock names starting with this, e.g. "billing:" or "global:jobs/". */
  readonly prefix?: string;
  /** Only locks taken by this plugin ("host" for host-side callers); applied to each page. */
  readonly plugin?: string;
  /** The `cursor` of the previous page (of a listing with the same `kind`). */
  readonly cursor?: string;
  /** Locks per page, 1 to MAX_LIST_LIMIT (default 100); a read/write lock or semaphore counts once however many hold it. */
  readonly limit?: number;
  /** Only locks of this kind. Default: every kind the backend serves, one after the other in the order of the kind table. */
  readonly kind?: LockKind;
}

/** One page of a listing. */
export interface LockListPage {
  readonly locks: readonly LockListing[];
  /** Pass it as `cursor` for the next page; absent on the last one. */
  readonly cursor?: string;
  /**
   * Kinds a listing of every kind could not read (e.g. a PostgreSQL role that may not create
   * the read/write tables), with why: the page holds the other kinds' locks. Absent when none.
   */
  readonly skipped?: readonly { readonly kind: LockKind; readonly reason: string }[];
}

/** The largest page a listing returns. */
export const MAX_LIST_LIMIT = 1_000;
const DEFAULT_LIST_LIMIT = 100;

/** One backend page request. */
interface PageRequest {
  readonly limit: number;
  readonly prefix?: string;
  readonly cursor?: string;
}

/** One page of the locks held now (see LockService.list). */
export async function list(core: ServiceCore, options: ListOptions = {}): Promise<LockListPage> {
  core.life.checkOpen();
  const limit = options.limit ?? DEFAULT_LIST_LIMIT;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
    throw new LockhostError("INVALID_ARGUMENT", `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${String(limit)}`);
  }
  for (const name of ["prefix", "plugin", "cursor"] as const) {
    const value = options[name];
    if (value !== undefined && typeof value !== "string") throw new LockhostError("INVALID_ARGUMENT", `${name} must be a string, got ${typeof value}`);
  }
  const prefix = options.prefix ? { prefix: options.prefix } : {};
  if (options.kind !== undefined) {
    // One kind: its backend's own cursor, as before there was a listing of every kind.
    const kind = checkKind(options.kind, LOCK_KINDS);
    return listKind(core, kind, { limit, ...prefix, ...(options.cursor !== undefined && { cursor: options.cursor }) }, options.plugin);
  }
  // Every kind, one after the other: the cursor says which kind the next page starts in ("rw:<its cursor>").
  const kinds = servedKinds(core.backend);
  let { index, cursor } = options.cursor === undefined ? { index: 0, cursor: undefined } : parseCursor(options.cursor, kinds);
  const locks: LockListing[] = [];
  const skipped: { kind: LockKind; reason: string }[] = [];
  const done = (more?: string): LockListPage => ({ locks, ...(more !== undefined && { cursor: more }), ...(skipped.length > 0 && { skipped }) });
  for (; index < kinds.length; index++, cursor = undefined) {
    const kind = kinds[index]!;
    try {
      if (locks.length >= limit) {
        // Full at a kind's start: a cursor only when a later kind holds something, so the last page says it is the last.
        if (await holdsAny(core, kind, prefix, options.plugin)) return done(`${kind}${CURSOR_SEPARATOR}`);
        continue;
      }
      const page = await listKind(core, kind, { limit: limit - locks.length, ...prefix, ...(cursor !== undefined && { cursor }) }, options.plugin);
      locks.push(...page.locks);
      if (page.cursor !== undefined) return done(`${kind}${CURSOR_SEPARATOR}${page.cursor}`);
    } catch (err) {
      // The default kind's failure is the listing's; another kind's is said beside the rest.
      if (KINDS[kind].isDefault) throw err;
      skipped.push({ kind, reason: err instanceof Error ? err.message : String(err) });
    }
  }
  return done();
}

/** Whether a lock of `kind` may be held under the prefix (one row, or a page that was cut short). */
async function holdsAny(core: ServiceCore, kind: LockKind, prefix: { readonly prefix?: string }, plugin: string | undefined): Promise<boolean> {
  const probe = await listKind(core, kind, { limit: 1, ...prefix }, plugin);
  return probe.locks.length > 0 || probe.cursor !== undefined;
}

/** Between a kind and its backend cursor in a listing of every kind (kinds never contain it). */
const CURSOR_SEPARATOR = ":";

/** A cursor of a listing of every kind: the index of its kind among `kinds`, and that kind's backend cursor. */
function parseCursor(text: string, kinds: readonly LockKind[]): { index: number; cursor: string | undefined } {
  const at = text.indexOf(CURSOR_SEPARATOR);
  const index = at < 0 ? -1 : kinds.indexOf(text.slice(0, at) as LockKind);
  if (index < 0)
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `cursor ${JSON.stringify(text)} is not one a listing of every kind gave (pass the cursor of the previous page, with the same kind option)`,
    );
  const rest = text.slice(at + CURSOR_SEPARATOR.length);
  return { index, cursor: rest === "" ? undefined : rest };
}

/** One page of the locks of one kind: a row per live holder of each key listed. */
async function listKind(core: ServiceCore, kind: LockKind, request: PageRequest, plugin: string | undefined): Promise<LockListPage> {
  const steps = core.steps(kind);
  const page = await core.backendCall(() => steps.list(request));
  const locks: LockListing[] = [];
  for (const record of page.records) {
    const waiters = core.waits.waitingOn(waitKey(kind, record.name));
    for (const { owner: _owner, ...h } of record.holders) {
      if (plugin !== undefined && h.holder.plugin !== plugin) continue;
      const nowMs = h.expiresAtMs - h.ttlRemainingMs;
      locks.push({ name: record.name, kind, ...h, ageMs: Math.max(0, nowMs - h.acquiredAtMs), waiters });
    }
  }
  return page.cursor === undefined ? { locks } : { locks, cursor: page.cursor };
}
