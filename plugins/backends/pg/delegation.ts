// The PostgreSQL steps of lock delegation (kit/delegation.ts), over the mutex's own (mutex.ts):
// a grant is the mutex's acquisition (or, replacing this host's grant, its handoff: the session
// keeps the advisory lock, the key is never free) followed by one statement on the same session
// that raises the holder row's fence to the block's top and, when that passes the reservation,
// reserves past it, flushed, in the fences table (as mutex-sql.ts's reserve does): every later
// acquisition of the id, also after a crash that empties the unlogged holders table, gets a fence
// above the block. Two round trips per grant (and a flush in RESERVED_BLOCKS); the local handoffs
// between grants cost none.
//
// Wanted: a grant sends `d:<id>` on the table's queue channel, before it asks (the one
// the LISTEN connection of every backend instance hears, index.ts), and the delegating host's
// watch of the id hears it. PostgreSQL keeps no mark: the host that gave the key up stands back
// for `wantedMs` itself (host/locking/delegation.ts).
import type { DelegatedGrant, DelegationSteps, MutexAcquireResult, ReleaseWatch } from "../../../kit/index.js";
import { backendError } from "./errors.js";
import { ignore, type HeldLocks } from "./held.js";
import type { PgMutexStore } from "./mutex.js";
import { FENCE_BLOCK, holdersTableOf, quoteTable, type Statement } from "./mutex-sql.js";

const NOT_ACQUIRED: MutexAcquireResult = Object.freeze({ acquired: false });

/** Blocks reserved past a grant's top when it passes the reservation: one flushed write in this many grants. */
const RESERVED_BLOCKS = 16;

/** What the delegation steps borrow from their PgBackend. */
export interface PgDelegationParts {
  readonly book: HeldLocks;
  readonly mutex: PgMutexStore;
  readonly table: string;
  /** Subscribes to the wanted notices of an advisory id (index.ts). */
  readonly wanted: (id: string, listener: () => void) => ReleaseWatch;
}

/** The block's statements for one configured table. */
function statementsOf(table: string): { readonly raise: Statement; readonly notify: Statement } {
  const t = quoteTable(table);
  const h = quoteTable(holdersTableOf(table));
  return {
    // $1 id, $2 owner, $3 block. Only while the row names the owner on this session (a
    // force-release clears the owner first). Only a top past the row's copy of `reserved` writes
    // the fences table, reserving RESERVED_BLOCKS blocks past it, flushed as reserve's is; the
    // other grants write the unlogged holders row alone (no WAL, no flush).
    raise: {
      name: "lockhost_delegation_raise",
      text: `WITH cur AS (
          SELECT fence + $3::int8 - 1 AS top, reserved FROM ${h} WHERE id = $1::int8 AND owner = $2::text AND pid = pg_backend_pid()
        ),
        f AS (
          INSERT INTO ${t} AS f (id, reserved)
          SELECT $1::int8, cur.top + greatest(${FENCE_BLOCK}, ${RESERVED_BLOCKS} * $3::int8) FROM cur
          WHERE cur.top > cur.reserved
            AND (current_setting('synchronous_commit') <> 'off' OR set_config('synchronous_commit', 'on', true) = 'on')
          ON CONFLICT (id) DO UPDATE SET reserved = greatest(f.reserved, EXCLUDED.reserved)
          RETURNING reserved
        )
        UPDATE ${h} h SET fence = cur.top, reserved = coalesce((SELECT reserved FROM f), cur.reserved) FROM cur WHERE h.id = $1::int8
        RETURNING h.fence`,
    },
    notify: { name: "lockhost_delegation_wanted", text: "SELECT pg_notify($1::text, $2::text)" },
  };
}

/** PostgreSQL's DelegationSteps (kit/delegation.ts). */
export class PgDelegation implements DelegationSteps {
  readonly #parts: PgDelegationParts;
  readonly #sql: { readonly raise: Statement; readonly notify: Statement };

  constructor(parts: PgDelegationParts) {
    this.#parts = parts;
    this.#sql = statementsOf(parts.table);
  }

  async grant(req: DelegatedGrant): Promise<MutexAcquireResult> {
    const { book, mutex } = this.#parts;
    let result: MutexAcquireResult;
    if (req.from === undefined && req.wantedMs === 0) {
      result = await mutex.acquire(req);
    } else if (req.from === undefined) {
      // The wanted notice goes first, on the session the acquisition takes (pipelined: no round
      // trip of its own), so a delegating holder hears it a round trip sooner. When the key was
      // free it tells nobody anything: no host delegates a key nobody holds.
      const advisory = book.keyOf(req.name);
      void book
        .sessionOf(advisory)
        .run(this.#sql.notify, [book.channels.queue, `d:${advisory.id}`])
        .catch(ignore);
      result = await mutex.acquire(req);
    } else {
      const moved = await mutex.handoff(req.name, req.from, req);
      // The previous grant had ended: nothing was changed.
      if (moved.released !== "released") return NOT_ACQUIRED;
      result = moved.next;
    }
    const advisory = book.keyOf(req.name);
    const session = book.sessionOf(advisory);
    if (!result.acquired) return result;
    let top: number | undefined;
    try {
      const rows = await session.run(this.#sql.raise, [advisory.id, req.owner, req.block]);
      top = rows.length > 0 ? Number(rows[0]![0]) : undefined;
    } catch (err) {
      await mutex.release(req.name, req.owner).catch(ignore);
      throw backendError(err, "acquire", book.errors);
    }
    // Force-released in between: the lock is not ours to hand out.
    if (top === undefined) {
      await mutex.release(req.name, req.owner).catch(ignore);
      return NOT_ACQUIRED;
    }
    // The session's record of the lock carries the row's fence: the checks of held locks
    // (recheckHeld, the control channel's force-release) compare the two.
    const lock = session.held.get(advisory.id);
    if (lock?.owner === req.owner) lock.fence = top;
    return result;
  }

  wanted(name: string, listener: () => void): ReleaseWatch {
    return this.#parts.wanted(this.#parts.book.keyOf(name).id, listener);
  }
}
