// Renew and release by owner token of a lock another process holds (LockService.restore): only
// the session holding an advisory lock can unlock it, so these work on its holders row (its
// live holder checked in pg_locks). A release also tells the holder on the table's control
// channel (payload `pid:id:fence`), and the holder, hearing it here, unlocks.
import type { ReleaseResult, RenewResult } from "../../../kit/index.js";
import { renewAll } from "./batch.js";
import type { AdvisoryKey } from "./key-hash.js";
import type { LockBook } from "./lock-book.js";
import type { Session } from "./session.js";

/** Renews (`key`, `owner`) on its holders row, for a lock not in this backend's bookkeeping. */
export async function renewElsewhere(
  book: LockBook,
  session: Session,
  advisory: AdvisoryKey,
  key: string,
  owner: string,
  ttlMs: number,
): Promise<RenewResult> {
  return (await renewAll(book, session, [{ req: { key, owner, ttlMs }, advisory, lock: undefined }]))[0]!;
}

/** Releases (`key`, `owner`) on its holders row and tells its holder, for a lock not in this backend's bookkeeping. */
export async function releaseElsewhere(book: LockBook, advisory: AdvisoryKey, key: string, owner: string): Promise<ReleaseResult> {
  const rows = await book.run("release", advisory, book.sql.releaseRemote, [advisory.id, key, owner, book.channels.control]);
  const result = rows[0]?.[0];
  return result === "released" || result === "mismatch" ? result : "not_found";
}

/**
 * A message on the control channel: `pid:id:fence`, another host released (by owner token) or
 * force-released the lock `id` our session `pid` holds. The session unlocks that one lock (its
 * other locks stay), and `lost` hears of the owner at once.
 */
export function onControl(book: LockBook, payload: string, lost: (owner: string) => void): void {
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
  book.log.info({ key: lock.key, fence: lock.fence }, "pg lock released by another host: unlocked");
  lost(lock.owner);
  void book.unlock(session, lock, true);

  function retry(): void {
    if (!book.closed) onControl(book, payload, lost);
  }
}
