// Acquisition (LockBackend.acquire): one statement takes the advisory lock, hands out the next
// fence and writes the holder (sql.ts), plus a flushed fence reservation every FENCE_BLOCK-th
// time. A session never asks the server twice for an id it has a record of: it answers
// "contended" itself, unless that record is on its way out.
import { LockhostError } from "../../../kit/index.js";
import type { MutexAcquireRequest, MutexAcquireResult } from "../../../kit/index.js";
import { backendError, closedError } from "./errors.js";
import { HeldLock } from "./held-lock.js";
import type { AdvisoryKey } from "./key-hash.js";
import { ignore, type LockBook } from "./lock-book.js";
import { wasNotSent, type Session } from "./session.js";

const NOT_ACQUIRED: MutexAcquireResult = Object.freeze({ acquired: false });

/** What acquisitions need besides the bookkeeping. */
export interface AcquireContext {
  readonly book: LockBook;
  /** This machine's name, recorded with each lock. */
  readonly hostname: string;
  /** Called when a lock is held: the control channel must be heard while this host holds locks. */
  readonly onHeld: () => void;
}

/** Takes `req.key` if no session anywhere holds it, with the next fence. */
export function acquire(ctx: AcquireContext, req: MutexAcquireRequest): Promise<MutexAcquireResult> {
  const { book } = ctx;
  if (book.closed) return Promise.reject(closedError());
  const advisory = book.keyOf(req.key);
  const session = book.sessionOf(advisory);
  const current = session.held.get(advisory.id);
  if (current === undefined) return tryAcquire(ctx, req, advisory, session);
  return acquireAfter(ctx, current, req, advisory, session);
}

function tryAcquire(ctx: AcquireContext, req: MutexAcquireRequest, advisory: AdvisoryKey, session: Session): Promise<MutexAcquireResult> {
  const { book } = ctx;
  const lock = new HeldLock(req.key, req.owner, advisory);
  session.held.set(advisory.id, lock);
  const sentAt = performance.now();
  const { plugin, node } = req.holder;
  const values = [advisory.id, req.key, req.owner, plugin, node, ctx.hostname, req.ttlMs];
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
export function grant(ctx: AcquireContext, session: Session, lock: HeldLock, row: readonly unknown[], sentAt: number, ttlMs: number): MutexAcquireResult | Promise<MutexAcquireResult> {
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
function checkStillOurs(book: LockBook, session: Session, lock: HeldLock): void {
  if (session.held.get(lock.advisory.id) === lock) return;
  if (book.closed) throw closedError();
  throw new LockhostError("BACKEND_UNAVAILABLE", `PostgreSQL at ${book.errors.target}: the session ended during acquire`);
}

/** Acquire for an id this session has a record of: contended, unless that record is on its way out. */
async function acquireAfter(
  ctx: AcquireContext,
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
