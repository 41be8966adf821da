// Acquisition (LockBackend.acquire): one statement takes the advisory lock and hands out the
// next fence, writing nothing (sql.ts); the holder row follows PUBLISH_AFTER_MS later if the
// lock is still held (publisher.ts). A session never asks the server twice for an id it has a
// record of: it answers "contended" itself, unless that record is on its way out.
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
  const lock = new HeldLock(req.key, req.owner, advisory, req.holder);
  session.held.set(advisory.id, lock);
  const sentAt = performance.now();
  const acquired = session.run(book.sql.acquire, [advisory.id]).then(
    (rows): MutexAcquireResult | Promise<MutexAcquireResult> => {
      checkStillOurs(book, session, lock);
      const [stored, clockUs, left] = rows[0] ?? [];
      if (stored === null || stored === undefined) {
        session.held.delete(advisory.id);
        // The holder row's lease end, when the row was there (maybe a stale one: a hint only).
        const hint = Number(left);
        return hint > 0 ? { acquired: false, retryAfterMs: hint } : NOT_ACQUIRED;
      }
      const clock = Number(clockUs);
      // Above the stored fence and this host's last one, whatever the clock did (sql.ts).
      const fence = Math.max(clock, Number(stored) + 1, book.lastFence(advisory.id) + 1);
      if (!Number.isSafeInteger(fence)) {
        void book.unlock(session, lock, false);
        throw new LockhostError("BACKEND_UNAVAILABLE", `PostgreSQL at ${book.errors.target}: the fence of ${req.key} would pass 2^53 (stored: ${String(stored)})`);
      }
      const acquiredAtMs = Math.floor(clock / 1000);
      const expiresAtMs = acquiredAtMs + req.ttlMs;
      lock.fence = fence;
      lock.acquiredAtMs = acquiredAtMs;
      lock.ttlMs = req.ttlMs;
      book.handedOut(advisory.id, fence);
      book.hold(lock, sentAt + req.ttlMs, expiresAtMs);
      ctx.onHeld();
      const result: MutexAcquireResult = { acquired: true, fence, acquiredAtMs, expiresAtMs };
      if (!session.uncleared.has(advisory.id)) {
        book.publisher.later(lock);
        return result;
      }
      // Its row may still name this session with an earlier owner: written over before the
      // lock is handed out, so it never passes for this holding.
      return book.publisher.now(session, [lock]).then(() => {
        if (lock.published) session.uncleared.delete(advisory.id);
        return result;
      });
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
