// Renew and release by owner token of a lock another process holds (LockService.restore): only
// the session holding an advisory lock can unlock it, so these work on its holders row (its
// live holder checked in pg_locks). A release also tells the holder on the table's control
// channel (payload `pid:id:fence`), and the holder, hearing it here, unlocks. A holder whose
// LISTEN connection was not open yet (it opens with the first lock) or was away hears nothing:
// it reads the holders rows of the locks it holds each time LISTEN starts (recheckHeld).
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

/**
 * Reads the holders rows of the locks this host holds (one statement per session) and unlocks,
 * as a control message would, each one whose row no longer names it: released or
 * force-released by another host while this host's LISTEN connection was not open yet, or was
 * away. Called each time LISTEN is confirmed, so nothing sent before it is missed. Never
 * rejects (a lock whose read fails stays as it is: its renewals, or its lease's end, decide).
 */
export async function recheckHeld(book: LockBook, lost: (owner: string) => void): Promise<void> {
  await Promise.all(book.sessions.map((session) => recheckSession(book, session, lost)));
}

async function recheckSession(book: LockBook, session: Session, lost: (owner: string) => void): Promise<void> {
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
