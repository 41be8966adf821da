// Force-release (LockBackend.forceRelease) of a lock whoever holds it: this backend unlocks its
// own; another session's is taken away by clearing its row's owner and ending that session.
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
  const rows = await book.run("forceRelease", advisory, book.sql.forceRelease, [advisory.id, key, advisory.classid, advisory.objid]);
  const row = rows[0];
  if (row === undefined) return false;
  const [pid, terminated] = row;
  if (terminated === true) await awaitGone(book, advisory, Number(pid));
  book.notifyReleased(session, advisory.id);
  return true;
}

/** Waits (up to commandTimeoutMs) until the terminated session `pid` no longer holds the lock. */
async function awaitGone(book: LockBook, advisory: AdvisoryKey, pid: number): Promise<void> {
  const until = performance.now() + book.errors.commandTimeoutMs;
  while (performance.now() < until) {
    const rows = await book.run("forceRelease", advisory, book.sql.heldBy, [advisory.classid, advisory.objid, pid]);
    if (rows[0]?.[0] !== true) return;
    await new Promise((r) => setTimeout(r, GONE_POLL_MS));
  }
  book.log.warn({ pid }, "pg force-release: the terminated holder session has not exited yet");
}
