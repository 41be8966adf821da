// The mutex (and, through kit's MutexSteps, the leader kind) in PostgreSQL: PgMutexStore, the
// MutexStore of session-level advisory locks, and its steps.
//
// - Acquisition: one statement takes the advisory lock, hands out the next fence and writes the
//   holder (mutex-sql.ts), plus a flushed fence reservation every FENCE_BLOCK-th time. A session
//   never asks the server twice for an id it has a record of: it answers "contended" itself,
//   unless that record is on its way out.
// - Handoff of a lock this backend holds: the holding session keeps its advisory lock and one
//   statement moves the holder row to the next owner with the next fence, so the key is never
//   free and no waiter anywhere is woken for it. One round trip, where a release then the next
//   owner's attempt cost two. A lock this backend does not hold (a restored lease of another
//   process) is released as usual, then the next owner attempts.
// - Batched renewals (renewMany): one statement per session renews every lock of a batch that
//   routes to it, whether this backend holds the lock (its session is checked) or another
//   process does (by owner, below; its live holder is checked in pg_locks).
// - By owner from anywhere (LockService.restore): only the session holding an advisory lock can
//   unlock it, so renew and release of a lock another process holds work on its holders row
//   (its live holder checked in pg_locks). A release also tells the holder on the table's
//   control channel (payload `pid:id:fence`), and the holder, hearing it here, unlocks. A holder
//   whose LISTEN connection was not open yet (it opens with the first lock) or was away hears
//   nothing: it reads the holders rows of the locks it holds each time LISTEN starts
//   (recheckHeld).
// - Force-release of a lock whoever holds it: this backend unlocks its own; another session's
//   holder is told to unlock that one lock (its row's owner cleared first), and only a holder
//   that does not has its session ended.
// - Status and list: rows of the holders table as LockRecords (toRecord).
// The sessions and the records of the locks on them are held.ts's (HeldLocks, HeldLock).
import type {
  ListRequest,
  LockPage,
  LockRecord,
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexHandoffResult,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import { LockhostError } from "../../../kit/index.js";
import { wasNotSent, type Rows, type Session } from "./client.js";
import { backendError, closedError } from "./errors.js";
import { ELSEWHERE, HeldLock, ignore, MISMATCH, NOT_FOUND, type HeldLocks } from "./held.js";
import type { AdvisoryKey } from "./keys.js";

const NOT_ACQUIRED: MutexAcquireResult = Object.freeze({ acquired: false });

/** What the mutex's steps need from their backend besides the bookkeeping. */
export interface MutexContext {
  readonly book: HeldLocks;
  /** This machine's name, recorded with each lock. */
  readonly hostname: string;
  /** Called when a lock is held: the control channel must be heard while this host holds locks. */
  readonly onHeld: () => void;
  /** Subscribes to wake-ups of the advisory id `id` (index.ts owns the LISTEN connection, watch.ts). */
  readonly watch: (id: string, listener: () => void) => ReleaseWatch;
}

/**
 * The mutex in PostgreSQL (advisory locks + fence and holder tables), shared by every host on the
 * same database and table; see kit/mutex.ts for each step's contract and the file header for how
 * each step is done.
 */
export class PgMutexStore implements MutexStore {
  readonly #ctx: MutexContext;
  readonly #batches: BatchRenewer;

  constructor(context: MutexContext) {
    this.#ctx = context;
    this.#batches = new BatchRenewer(context.book);
  }

  /** Statements sent by renewMany (one per session per batch, unless a batch names an id twice). */
  get renewRoundTrips(): number {
    return this.#batches.statements;
  }

  /** What renew, release and handoff of (`name`, `owner`) act on: its id, session and record (HeldLocks.find). */
  async #locate(name: string, owner: string): Promise<{ book: HeldLocks; advisory: AdvisoryKey; session: Session; found: ReturnType<HeldLocks["find"]> }> {
    const book = this.#ctx.book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(name);
    const session = book.sessionOf(advisory);
    return { book, advisory, session, found: book.find(await book.current(session, advisory.id), name, owner) };
  }

  /** Takes `req.name` if no session anywhere holds it, with the next fence (MutexStore.acquire). */
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return acquire(this.#ctx, req);
  }

  /**
   * Sets the lease to `ttlMs` from now if `owner` still holds `name` (MutexStore.renew). A lock
   * another backend instance holds (another process: restore) is renewed on its holders row;
   * its holder sees the later expiry before it would end the lease.
   */
  async renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    const { book, advisory, session, found } = await this.#locate(name, owner);
    if (found === ELSEWHERE) return renewElsewhere(book, session, advisory, name, owner, ttlMs);
    if (!(found instanceof HeldLock)) return found;
    const lock = found;
    const sentAt = performance.now();
    const values = [advisory.id, name, owner, ttlMs];
    return session.run(book.sql.renew, values).then(
      (rows): RenewResult => book.renewed(session, lock, rows[0]?.[0], sentAt, ttlMs),
      (err: unknown) => {
        // The connection ended: the lock ended with it.
        if (session.held.get(advisory.id) !== lock) return NOT_FOUND;
        throw backendError(err, "renew", book.errors);
      },
    );
  }

  /**
   * Renews each lock as renew() would, with one statement per session (MutexStore.renewMany);
   * results in request order. Counts its statements in `renewRoundTrips`.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#batches.renewMany(reqs);
  }

  /**
   * Unlocks `name` if `owner` holds it (MutexStore.release). A lock another backend instance
   * holds is released on its holders row, and its holder is told to unlock (control channel);
   * until it does (it may be gone: then its session, and the lock, are gone too) acquirers see
   * it contended.
   */
  async release(name: string, owner: string): Promise<ReleaseResult> {
    const { book, advisory, session, found } = await this.#locate(name, owner);
    if (found instanceof HeldLock) return book.unlock(session, found, true);
    if (found !== ELSEWHERE) return found.ok ? "not_found" : found.reason;
    return releaseElsewhere(book, advisory, name, owner);
  }

  /**
   * Releases `owner`'s lock on `name` and takes it for `next` in one step (MutexStore.handoff):
   * a lock this backend holds stays locked on its session while its row moves to `next` (one
   * statement, the key never free); any other is released as release() would, then `next`
   * attempts.
   */
  async handoff(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    const { book, advisory, session, found } = await this.#locate(name, owner);
    if (found instanceof HeldLock) return handOver(this.#ctx, session, found, next);
    const released = found !== ELSEWHERE ? (found.ok ? "not_found" : found.reason) : await releaseElsewhere(book, advisory, name, owner);
    if (released !== "released") return { released };
    // Released: a failed attempt for the next owner does not undo that (it tries again itself).
    return { released, next: await this.acquire(next).catch((): MutexAcquireResult => ({ acquired: false })) };
  }

  /**
   * Calls `listener` when `name` may have become free on any host (MutexStore.watch): after
   * every unlock, a NOTIFY on the table's released channel reaches the backend's one LISTEN
   * connection; after that connection came back from a drop, every listener is called once.
   */
  watch(name: string, listener: () => void): ReleaseWatch {
    if (this.#ctx.book.closed) return { ready: Promise.resolve(), close: ignore };
    const { id } = this.#ctx.book.keyOf(name);
    // Ready once a release anywhere would notify: the key's wait lock is held.
    return this.#ctx.watch(id, listener);
  }

  /** The live holder of `name` on any host, or null (MutexStore.status); see toRecord for its ttlMs. */
  async status(name: string): Promise<LockRecord | null> {
    const book = this.#ctx.book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(name);
    const rows = await book.run("status", advisory, book.sql.status, [advisory.id, name, advisory.classid, advisory.objid]);
    const row = rows[0];
    return row === undefined ? null : toRecord(name, row);
  }

  /**
   * Stores a leader's `value` in the holders row if `owner` holds `name` on a live session, and
   * notifies the key's watchers in the same statement (MutexStore.proclaim).
   */
  async proclaim(name: string, owner: string, value: string): Promise<boolean> {
    const book = this.#ctx.book;
    if (book.closed) throw closedError();
    const advisory = book.keyOf(name);
    const rows = await book.run("proclaim", advisory, book.sql.proclaim, [
      advisory.id,
      name,
      value,
      owner,
      advisory.classid,
      advisory.objid,
      book.channels.released,
    ]);
    return rows.length > 0;
  }

  /** A page of held locks in name order, from the holders table (MutexStore.list). */
  async list(req: ListRequest): Promise<LockPage> {
    const book = this.#ctx.book;
    if (book.closed) throw closedError();
    const pattern = (req.prefix ?? "").replace(/[\\%_]/g, "\\$&") + "%";
    // One more than asked: whether a next page exists, without a second query.
    const rows = await book.run("list", book.keyOf(req.cursor ?? ""), book.sql.list, [pattern, req.cursor ?? null, req.limit + 1]);
    const locks = rows.slice(0, req.limit).map((row) => toRecord(String(row[0]), row.slice(1)));
    return rows.length > req.limit ? { locks, cursor: locks[locks.length - 1]!.name } : { locks };
  }

  /**
   * Frees `name` whoever holds it; true when someone did (MutexStore.forceRelease).
   *
   * When this backend holds it, it just unlocks. Otherwise it clears the holder row's owner
   * (so the holder's next renew or release finds the lock no longer theirs) and tells the
   * holder on the table's control channel: the holder's session unlocks that one lock itself
   * (its other locks stay) and its lease is lost at once. Only a holder that does not do so
   * within a grace period (its process paused, its listener gone) has its session terminated
   * (pg_terminate_backend, the only way to take an advisory lock from another session; every
   * lock on it goes). Resolves once the lock is free, so the key can be taken at once. The
   * fallback needs the right to signal the holder's backend: the same role, or pg_signal_backend.
   */
  forceRelease(name: string): Promise<boolean> {
    if (this.#ctx.book.closed) return Promise.reject(closedError());
    return forceRelease(this.#ctx.book, name);
  }
}

// Acquisition.

/** Takes `req.name` if no session anywhere holds it, with the next fence. */
function acquire(ctx: MutexContext, req: MutexAcquireRequest): Promise<MutexAcquireResult> {
  const { book } = ctx;
  if (book.closed) return Promise.reject(closedError());
  const advisory = book.keyOf(req.name);
  const session = book.sessionOf(advisory);
  const current = session.held.get(advisory.id);
  if (current === undefined) return tryAcquire(ctx, req, advisory, session);
  return acquireAfter(ctx, current, req, advisory, session);
}

function tryAcquire(ctx: MutexContext, req: MutexAcquireRequest, advisory: AdvisoryKey, session: Session): Promise<MutexAcquireResult> {
  const { book } = ctx;
  const lock = new HeldLock(req.name, req.owner, advisory);
  session.held.set(advisory.id, lock);
  const sentAt = performance.now();
  const { plugin, node } = req.holder;
  const values = [advisory.id, req.name, req.owner, plugin, node, ctx.hostname, req.ttlMs];
  const acquired = session.run(book.sql.acquire, values).then(
    (rows): MutexAcquireResult | Promise<MutexAcquireResult> => {
      checkStillOurs(book, session, lock);
      const row = rows[0];
      if (row === undefined || row[0] === null) {
        session.held.delete(advisory.id);
        // The holder row's lease end, when the row was there (maybe an older version of it).
        const left = Number(row?.[4]);
        return left > 0 ? { acquired: false, retryAfterMs: left } : NOT_ACQUIRED;
      }
      return grant(ctx, session, lock, row, sentAt, req.ttlMs);
    },
    (err: unknown): never => {
      if (session.held.get(advisory.id) === lock) {
        // The session lives but the statement failed, maybe after taking the lock (a
        // session-level lock survives the rollback): unlock before the id is free again here.
        if (wasNotSent(err)) session.held.delete(advisory.id);
        else void book.unlock(session, lock, false);
      }
      throw backendError(err, "acquire", book.errors);
    },
  );
  lock.busy = acquired;
  return acquired;
}

/**
 * Hands out the lock `lock` its session now holds, from the answer `row` of the statement that
 * took it ([fence, reserved, acquired ms, expires ms]): held until `sentAt + ttlMs` here. A fence
 * past the reserved block first reserves the next one (flushed); if that fails, the lock is
 * unlocked and the failure thrown.
 */
function grant(
  ctx: MutexContext,
  session: Session,
  lock: HeldLock,
  row: readonly unknown[],
  sentAt: number,
  ttlMs: number,
): MutexAcquireResult | Promise<MutexAcquireResult> {
  const { book } = ctx;
  const { advisory } = lock;
  const [fence, reserved, acquiredAt, expiresAt] = row.map(Number) as [number, number, number, number];
  const held = (handedOut: number): MutexAcquireResult => {
    lock.fence = handedOut;
    book.hold(lock, sentAt + ttlMs, expiresAt);
    ctx.onHeld();
    return { acquired: true, fence: handedOut, acquiredAtMs: acquiredAt, expiresAtMs: expiresAt };
  };
  if (fence <= reserved) return held(fence);
  // Past the reserved block: reserve the next one (flushed) before the fence goes out.
  return session.run(book.sql.reserve, [advisory.id, fence]).then(
    (reservedRows) => {
      checkStillOurs(book, session, lock);
      const raised = Number(reservedRows[0]?.[0]);
      if (!Number.isSafeInteger(raised)) throw new Error("the fence reservation found no holders row");
      return held(raised);
    },
    (err: unknown): never => {
      if (session.held.get(advisory.id) === lock) void book.unlock(session, lock, false);
      throw backendError(err, "acquire", book.errors);
    },
  );
}

/** Throws when `lock` is no longer its session's record: the session ended (or the backend closed) under it. */
function checkStillOurs(book: HeldLocks, session: Session, lock: HeldLock): void {
  if (session.held.get(lock.advisory.id) === lock) return;
  if (book.closed) throw closedError();
  throw new LockhostError("BACKEND_UNAVAILABLE", `PostgreSQL at ${book.errors.target}: the session ended during acquire`);
}

/** Acquire for an id this session has a record of: contended, unless that record is on its way out. */
async function acquireAfter(
  ctx: MutexContext,
  first: HeldLock,
  req: MutexAcquireRequest,
  advisory: AdvisoryKey,
  session: Session,
): Promise<MutexAcquireResult> {
  const { book } = ctx;
  let lock: HeldLock | undefined = first;
  while (lock !== undefined) {
    if (lock.state === "held") book.expireIfDue(lock);
    const busy = lock.busy;
    if (lock.state === "held") {
      // The host ends the lease at its deadline (unless renewed): retry then at the latest.
      const left = Math.ceil(lock.deadline - performance.now());
      return left > 0 ? { acquired: false, retryAfterMs: left } : NOT_ACQUIRED;
    }
    if ((lock.state !== "releasing" && lock.state !== "checking") || busy === undefined) return NOT_ACQUIRED;
    await busy.then(ignore, ignore);
    if (book.closed) throw closedError();
    const next = session.held.get(advisory.id);
    // Still there after its unlock settled: not free, whatever happened.
    if (next === lock && lock.busy === busy) return NOT_ACQUIRED;
    lock = next;
  }
  return tryAcquire(ctx, req, advisory, session);
}

// Handoff of a lock this backend holds.

/**
 * Hands held `lock` (its owner's) on `session` to `next` in one statement. Never rejects once
 * the old holding may be over: a statement that fails (applied or not) or a fence reservation
 * that fails lets the lock go, and the answer says so ("released", the next owner not granted;
 * or "not_found" when the session ended with it), so no caller goes on believing the old owner
 * holds a lock that is free.
 */
function handOver(ctx: MutexContext, session: Session, lock: HeldLock, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
  const { book } = ctx;
  const { advisory } = lock;
  const { plugin, node } = next.holder;
  const sentAt = performance.now();
  const moved = session.run(book.sql.handoff, [advisory.id, lock.name, lock.owner, next.owner, plugin, node, ctx.hostname, next.ttlMs]);
  const done = moved.then(
    async (rows): Promise<MutexHandoffResult> => {
      const row = rows[0];
      if (row === undefined) {
        // The row no longer names this owner (force-released by another host): the lease was
        // over; the lock is let go, as a release would.
        if (session.held.get(advisory.id) === lock) await book.unlock(session, lock, false);
        return { released: "not_found" };
      }
      const taken = new HeldLock(lock.name, next.owner, advisory);
      // The session ended meanwhile: its locks, this one among them, were reported lost.
      if (!book.handedOver(session, lock, taken)) return { released: "not_found" };
      const granted = grant(ctx, session, taken, row, sentAt, next.ttlMs);
      if (!(granted instanceof Promise)) return { released: "released", next: granted };
      // A fence reservation on its way: the next owner's record waits for it (an attempt or a
      // control message on this id waits too).
      taken.busy = granted;
      // Failed, the reservation let the lock go: the old owner's release stands, the next owner was not granted.
      return { released: "released", next: await granted.catch(() => NOT_GRANTED) };
    },
    async (): Promise<MutexHandoffResult> => {
      // Applied or not, nobody knows: the lock is let go (its owner was releasing it; an unlock
      // queued behind the statement frees it either way), so no holder is left that nobody tracks.
      if (session.held.get(advisory.id) !== lock) return { released: "not_found" };
      const released = await book.unlock(session, lock, false);
      return released === "released" ? { released, next: NOT_GRANTED } : { released: "not_found" };
    },
  );
  book.handingOver(lock, done);
  return done;
}

const NOT_GRANTED: MutexAcquireResult = Object.freeze({ acquired: false });

// Batched renewals.

/** One renewal of a statement: `lock` when this backend holds it, else undefined. */
interface Renewal {
  readonly req: RenewRequest;
  readonly advisory: AdvisoryKey;
  readonly lock: HeldLock | undefined;
}

/** Renews `renewals` (ids unique) on `session` in one statement; results in order. */
function renewAll(book: HeldLocks, session: Session, renewals: readonly Renewal[]): Promise<RenewResult[]> {
  const sentAt = performance.now();
  const values = [
    renewals.map((r) => r.advisory.id),
    renewals.map((r) => r.req.name),
    renewals.map((r) => r.req.owner),
    renewals.map((r) => r.req.ttlMs),
    renewals.map((r) => r.lock !== undefined),
  ];
  return session.run(book.sql.renewMany, values).then(
    (rows) =>
      renewals.map((r, i): RenewResult => {
        const [expires, otherOwner] = rows[i] ?? [];
        if (r.lock !== undefined) return book.renewed(session, r.lock, expires, sentAt, r.req.ttlMs);
        if (expires !== null && expires !== undefined) return { ok: true, expiresAtMs: Number(expires) };
        return otherOwner === true ? MISMATCH : NOT_FOUND;
      }),
    (err: unknown) => {
      // Locks of a session that ended ended with it; anything else is unknown: the batch fails.
      if (renewals.every((r) => r.lock !== undefined && session.held.get(r.advisory.id) !== r.lock)) {
        return renewals.map(() => NOT_FOUND);
      }
      throw backendError(err, "renew", book.errors);
    },
  );
}

/** Sends batches of renewals, counting its statements. */
class BatchRenewer {
  readonly #book: HeldLocks;
  #statements = 0;

  constructor(book: HeldLocks) {
    this.#book = book;
  }

  /** Statements sent so far (one per session per batch, unless a batch names an id twice). */
  get statements(): number {
    return this.#statements;
  }

  /** Renews each lock as renew() would, with one statement per session; results in request order. */
  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    const book = this.#book;
    if (book.closed) throw closedError();
    const results: RenewResult[] = new Array<RenewResult>(reqs.length);
    const bySession = new Map<Session, { renewal: Renewal; index: number }[]>();
    await Promise.all(
      reqs.map(async (req, index) => {
        const advisory = book.keyOf(req.name);
        const session = book.sessionOf(advisory);
        const found = book.find(await book.current(session, advisory.id), req.name, req.owner);
        if (found !== ELSEWHERE && !(found instanceof HeldLock)) {
          results[index] = found;
          return;
        }
        let list = bySession.get(session);
        if (list === undefined) bySession.set(session, (list = []));
        list.push({ renewal: { req, advisory, lock: found === ELSEWHERE ? undefined : found }, index });
      }),
    );
    const sent: Promise<void>[] = [];
    for (const [session, list] of bySession) {
      // One UPDATE changes a row once: an id named twice goes in a further statement.
      // A set of ids per round keeps this linear: batches can hold thousands of renewals.
      const rounds: { readonly items: typeof list; readonly ids: Set<AdvisoryKey["id"]> }[] = [];
      for (const item of list) {
        const id = item.renewal.advisory.id;
        let round = rounds.find((r) => !r.ids.has(id));
        if (round === undefined) rounds.push((round = { items: [], ids: new Set() }));
        round.items.push(item);
        round.ids.add(id);
      }
      for (const { items: round } of rounds) {
        this.#statements++;
        sent.push(
          renewAll(
            book,
            session,
            round.map((i) => i.renewal),
          ).then((answers) => {
            round.forEach((item, j) => (results[item.index] = answers[j]!));
          }),
        );
      }
    }
    await Promise.all(sent);
    return results;
  }
}

// By owner: renew and release of a lock another process holds, and control messages.

/** Renews (`name`, `owner`) on its holders row, for a lock not in this backend's bookkeeping. */
async function renewElsewhere(book: HeldLocks, session: Session, advisory: AdvisoryKey, name: string, owner: string, ttlMs: number): Promise<RenewResult> {
  return (await renewAll(book, session, [{ req: { name, owner, ttlMs }, advisory, lock: undefined }]))[0]!;
}

/** Releases (`name`, `owner`) on its holders row and tells its holder, for a lock not in this backend's bookkeeping. */
async function releaseElsewhere(book: HeldLocks, advisory: AdvisoryKey, name: string, owner: string): Promise<ReleaseResult> {
  const rows = await book.run("release", advisory, book.sql.releaseRemote, [advisory.id, name, owner, book.channels.control]);
  const result = rows[0]?.[0];
  return result === "released" || result === "mismatch" ? result : "not_found";
}

/**
 * A message on the control channel: `pid:id:fence`, another host released (by owner token) or
 * force-released the lock `id` our session `pid` holds. The session unlocks that one lock (its
 * other locks stay), and `lost` hears of the owner at once.
 */
export function onControl(book: HeldLocks, payload: string, lost: (owner: string) => void): void {
  const [pid, id, fence] = payload.split(":");
  const session = book.sessions.find((s) => s.pid !== undefined && String(s.pid) === pid);
  const lock = id === undefined ? undefined : session?.held.get(id);
  if (session === undefined || lock === undefined) return;
  if (lock.state !== "held" && lock.busy !== undefined) {
    // An acquisition or handoff whose answer has not been read yet (the message came on the
    // LISTEN connection, ahead of it): the holding it names may be the one being granted. Heard
    // again once that settles; else the force-release would end the whole session.
    lock.busy.then(retry, retry);
    return;
  }
  if (String(lock.fence) !== fence || lock.state !== "held") return;
  book.log.info({ key: lock.name, fence: lock.fence }, "pg lock released by another host: unlocked");
  lost(lock.owner);
  void book.unlock(session, lock, true);

  function retry(): void {
    if (!book.closed) onControl(book, payload, lost);
  }
}

/**
 * Reads the holders rows of the locks this host holds (one statement per session) and unlocks,
 * as a control message would, each one whose row no longer names it: released or
 * force-released by another host while this host's LISTEN connection was not open yet, or was
 * away. Called each time LISTEN is confirmed, so nothing sent before it is missed. Never
 * rejects (a lock whose read fails stays as it is: its renewals, or its lease's end, decide).
 */
export async function recheckHeld(book: HeldLocks, lost: (owner: string) => void): Promise<void> {
  await Promise.all(book.sessions.map((session) => recheckSession(book, session, lost)));
}

async function recheckSession(book: HeldLocks, session: Session, lost: (owner: string) => void): Promise<void> {
  const pid = session.pid;
  // What each lock was when asked: a lock handed on or taken again meanwhile has another fence.
  const asked = [...session.held.values()].filter((l) => l.state === "held").map((l) => ({ id: l.advisory.id, owner: l.owner, fence: l.fence }));
  if (pid === undefined || asked.length === 0) return;
  let rows: unknown[][];
  try {
    rows = await session.run(book.sql.heldRows, [asked.map((a) => a.id)]);
  } catch {
    return;
  }
  const named = new Map(rows.map((r) => [String(r[0]), `${String(r[1])}:${Number(r[2])}`]));
  for (const { id, owner, fence } of asked) {
    if (named.get(id) !== `${owner}:${fence}`) onControl(book, `${pid}:${id}:${fence}`, lost);
  }
}

// Force-release.

/** How often forceRelease looks whether a terminated holder has gone. */
const GONE_POLL_MS = 5;

/** Frees `name` whoever holds it; true when someone did (see PgBackend.forceRelease). */
async function forceRelease(book: HeldLocks, name: string): Promise<boolean> {
  const advisory = book.keyOf(name);
  const session = book.sessionOf(advisory);
  let lock = session.held.get(advisory.id);
  // An acquire or release in flight here decides whether this backend is the holder.
  while (lock?.name === name && lock.state !== "held" && lock.busy !== undefined) {
    const busy = lock.busy;
    await busy.then(ignore, ignore);
    const next = session.held.get(advisory.id);
    if (next === lock && lock.busy === busy) break;
    lock = next;
  }
  if (lock !== undefined && lock.name === name && lock.state === "held") {
    // "not_found": the session ended meanwhile, so there was nothing left to release.
    return (await book.unlock(session, lock, true)) === "released";
  }
  const rows = await book.run("forceRelease", advisory, book.sql.forceReleaseAsk, [advisory.id, name, advisory.classid, advisory.objid, book.channels.control]);
  const row = rows[0];
  if (row === undefined) return false;
  const pid = Number(row[0]);
  const fence = row[1] as string;
  // The holder unlocks that one lock when it hears; a holder that cannot (paused, its listener
  // gone) loses its whole session instead, so the lock is free either way.
  // A holder that unlocks tells the key's waiters itself (as any release does); for one whose
  // session had to end, this host does.
  if (!(await untilGone(book, advisory, pid, fence, Math.min(ASK_GRACE_MS, book.errors.commandTimeoutMs)))) {
    book.log.warn({ pid, key: name }, "pg force-release: the holder did not unlock when told; ending its session (every lock on it is lost)");
    const [terminated] = (await book.run("forceRelease", advisory, book.sql.terminate, [pid]))[0] ?? [];
    if (terminated === true) await awaitGone(book, advisory, pid, fence);
    book.notifyReleased(session, advisory.id);
  }
  return true;
}

/** How long a told holder has to unlock before its session is ended. */
const ASK_GRACE_MS = 1_000;

/**
 * Polls until session `pid` no longer holds the lock as the holding with `fence`, for up to
 * `ms`; whether it let go. (Having let go, the session may hold the lock again for another of
 * its host's callers: a later fence, not the holding asked about.)
 */
async function untilGone(book: HeldLocks, advisory: AdvisoryKey, pid: number, fence: string, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    const rows = await book.run("forceRelease", advisory, book.sql.heldBy, [advisory.classid, advisory.objid, pid, advisory.id, fence]);
    if (rows[0]?.[0] !== true) return true;
    if (performance.now() >= until) return false;
    await new Promise((r) => setTimeout(r, GONE_POLL_MS));
  }
}

/** Waits (up to commandTimeoutMs) until the terminated session `pid` no longer holds the lock. */
async function awaitGone(book: HeldLocks, advisory: AdvisoryKey, pid: number, fence: string): Promise<void> {
  if (!(await untilGone(book, advisory, pid, fence, book.errors.commandTimeoutMs))) {
    book.log.warn({ pid }, "pg force-release: the terminated holder session has not exited yet");
  }
}

// Status and list rows.

/** The record of `name` from the status statement's row (owner, fence, ..., remaining ms, ttl ms, value). */
function toRecord(name: string, row: Rows[number]): LockRecord {
  const [owner, fence, plugin, node, host, acquiredAt, expiresAt, remaining, ttl, value] = row;
  const acquiredAtMs = Number(acquiredAt);
  const expiresAtMs = Number(expiresAt);
  const ttlRemainingMs = Number(remaining);
  return {
    name,
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
