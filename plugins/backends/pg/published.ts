// Waiting for another host's holder row. A lock taken on a session of this version has no row
// until its host publishes it (publisher.ts), PUBLISH_AFTER_MS after taking it; the steps that
// work on rows (status, listing, force-release, proclaim, renew and release by owner) see such
// a lock as held by a marked session with no row naming it (sql.ts), and ask again until the
// row is there or the lock is gone, for up to commandTimeoutMs.
import { LockhostError } from "../../../kit/index.js";
import type { AdvisoryKey } from "./key-hash.js";
import type { LockBook } from "./lock-book.js";
import { PUBLISH_AFTER_MS } from "./publisher.js";

/** An attempt's answer: the lock is held and its row is not written yet. */
export const UNPUBLISHED = Symbol("unpublished");

/**
 * Runs `attempt` until it answers something other than UNPUBLISHED; fails after
 * commandTimeoutMs. For statements that tell an unpublished lock themselves (status, list):
 * their snapshot predates their read of pg_locks, so a row written meanwhile makes them say
 * UNPUBLISHED once more, never miss the lock.
 */
export async function whenPublished<T>(book: LockBook, what: string, attempt: () => Promise<T | typeof UNPUBLISHED>): Promise<T> {
  const limit = book.errors.commandTimeoutMs;
  const until = performance.now() + limit;
  for (;;) {
    const answer = await attempt();
    if (answer !== UNPUBLISHED) return answer;
    if (performance.now() >= until) {
      throw new LockhostError(
        "BACKEND_UNAVAILABLE",
        `PostgreSQL at ${book.errors.target}: ${what}: a lock is held by a session whose host has not written its holder row within commandTimeoutMs (${limit} ms)`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, PUBLISH_AFTER_MS));
  }
}

/**
 * `step`'s answer for `advisory`'s lock, for statements that only read rows: when it `missed`
 * the lock, whether the lock is held unpublished is asked next, and then `step` again, so a
 * row written between the two is found by the second (and while the lock stays unpublished,
 * this waits).
 */
export function afterPublished<T>(
  book: LockBook,
  what: string,
  advisory: AdvisoryKey,
  step: () => Promise<T>,
  missed: (answer: T) => boolean,
  /** The answer of a first `step` the caller already ran (a batch's). */
  first?: T,
): Promise<T> {
  let given = first;
  return whenPublished(book, what, async () => {
    const answer = given ?? (await step());
    given = undefined;
    if (!missed(answer)) return answer;
    const rows = await book.run(what, advisory, book.sql.unpublished, [advisory.id, advisory.classid, advisory.objid]);
    return rows[0]?.[0] === true ? UNPUBLISHED : step();
  });
}
