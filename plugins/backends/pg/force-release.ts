// Force-release (LockBackend.forceRelease) of a lock whoever holds it: this backend unlocks its
// own; another session's holder is told to unlock that one lock (its row's owner cleared
// first), and only a holder that does not has its session ended.
import { ignore, type LockBook } from "./lock-book.js";
import type { AdvisoryKey } from "./key-hash.js";

/** How often forceRelease looks whether a terminated holder has gone. */
const GONE_POLL_MS = 5;

/** Frees `key` whoever holds it; true when someone did (see PgBackend.forceRelease). */
export async function forceRelease(book: LockBook, key: string): Promise<boolean> {
  const advisory = book.keyOf(key);
  const session = book.sessionOf(advisory);
  let lock = session.held.get(advisory.id);
  // An acquire or release in flight here decides whether this backend is the holder.
  while (lock?.key === key && lock.state !== "held" && lock.busy !== undefined) {
    const busy = lock.busy;
    await busy.then(ignore, ignore);
    const next = session.held.get(advisory.id);
    if (next === lock && lock.busy === busy) break;
    lock = next;
  }
  if (lock !== undefined && lock.key === key && lock.state === "held") {
    // "not_found": the session ended meanwhile, so there was nothing left to release.
    return (await book.unlock(session, lock, true)) === "released";
  }
  const rows = await book.run("forceRelease", advisory, book.sql.forceReleaseAsk, [advisory.id, key, advisory.classid, advisory.objid, book.channels.control]);
  const row = rows[0];
  if (row === undefined) return false;
  const pid = Number(row[0]);
  const fence = row[1] as string;
  // The holder unlocks that one lock when it hears; a holder that cannot (paused, its listener
  // gone) loses its whole session instead, so the lock is free either way.
  // A holder that unlocks tells the key's waiters itself (as any release does); for one whose
  // session had to end, this host does.
  if (!(await untilGone(book, advisory, pid, fence, Math.min(ASK_GRACE_MS, book.errors.commandTimeoutMs)))) {
    book.log.warn({ pid, key }, "pg force-release: the holder did not unlock when told; ending its session (every lock on it is lost)");
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
async function untilGone(book: LockBook, advisory: AdvisoryKey, pid: number, fence: string, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    const rows = await book.run("forceRelease", advisory, book.sql.heldBy, [advisory.classid, advisory.objid, pid, advisory.id, fence]);
    if (rows[0]?.[0] !== true) return true;
    if (performance.now() >= until) return false;
    await new Promise((r) => setTimeout(r, GONE_POLL_MS));
  }
}

/** Waits (up to commandTimeoutMs) until the terminated session `pid` no longer holds the lock. */
async function awaitGone(book: LockBook, advisory: AdvisoryKey, pid: number, fence: string): Promise<void> {
  if (!(await untilGone(book, advisory, pid, fence, book.errors.commandTimeoutMs))) {
    book.log.warn({ pid }, "pg force-release: the terminated holder session has not exited yet");
  }
}
