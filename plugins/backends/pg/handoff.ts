// A mutex handoff (MutexStore.handoff) of a lock this backend holds: the holding session keeps
// its advisory lock and one statement moves the holder row to the next owner with the next
// fence, so the key is never free and no waiter anywhere is woken for it. One round trip,
// where a release then the next owner's attempt cost two. A lock this backend does not hold
// (a restored lease of another process) is released as usual, then the next owner attempts.
import type { MutexAcquireRequest, MutexAcquireResult, MutexHandoffResult } from "../../../kit/index.js";
import { grant, type AcquireContext } from "./acquire.js";
import { HeldLock } from "./held-lock.js";
import type { Session } from "./session.js";

/**
 * Hands held `lock` (its owner's) on `session` to `next` in one statement. Never rejects once
 * the old holding may be over: a statement that fails (applied or not) or a fence reservation
 * that fails lets the lock go, and the answer says so ("released", the next owner not granted;
 * or "not_found" when the session ended with it), so no caller goes on believing the old owner
 * holds a lock that is free.
 */
export function handOver(ctx: AcquireContext, session: Session, lock: HeldLock, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
  const { book } = ctx;
  const { advisory } = lock;
  const { plugin, node } = next.holder;
  const sentAt = performance.now();
  const moved = session.run(book.sql.handoff, [advisory.id, lock.key, lock.owner, next.owner, plugin, node, ctx.hostname, next.ttlMs]);
  const done = moved.then(
    async (rows): Promise<MutexHandoffResult> => {
      const row = rows[0];
      if (row === undefined) {
        // The row no longer names this owner (force-released by another host): the lease was
        // over; the lock is let go, as a release would.
        if (session.held.get(advisory.id) === lock) await book.unlock(session, lock, false);
        return { released: "not_found" };
      }
      const taken = new HeldLock(lock.key, next.owner, advisory);
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
