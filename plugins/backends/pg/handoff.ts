// A mutex handoff (MutexStore.handoff) of a lock this backend holds: the holding session keeps
// its advisory lock and one statement moves the holder row to the next owner with the next
// fence, so the key is never free and no waiter anywhere is woken for it. One round trip,
// where a release then the next owner's attempt cost two. A lock this backend does not hold
// (a restored lease of another process) is released as usual, then the next owner attempts.
import type { MutexAcquireRequest, MutexHandoffResult } from "../../../kit/index.js";
import { checkStillOurs, grant, type AcquireContext } from "./acquire.js";
import { backendError } from "./errors.js";
import { HeldLock } from "./held-lock.js";
import type { Session } from "./session.js";

/** Hands held `lock` (its owner's) on `session` to `next` in one statement. */
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
      if (!book.handedOver(session, lock, taken)) checkStillOurs(book, session, lock);
      return { released: "released", next: await grant(ctx, session, taken, row, sentAt, next.ttlMs) };
    },
    (err: unknown): never => {
      // Applied or not, nobody knows: the lock is let go (its owner was releasing it), so no
      // holder is left that nobody tracks.
      if (session.held.get(advisory.id) === lock) void book.unlock(session, lock, false);
      throw backendError(err, "handoff", book.errors);
    },
  );
  book.handingOver(lock, done);
  return done;
}
