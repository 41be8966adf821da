// Batched renewals (LockBackend.renewMany): one statement per session renews every lock of a
// batch that routes to it, whether this backend holds the lock (its session is checked) or
// another process does (renewal by owner token: by-owner.ts; its live holder is checked in
// pg_locks).
import type { RenewRequest, RenewResult } from "../../../kit/index.js";
import { backendError, closedError } from "./errors.js";
import { HeldLock } from "./held-lock.js";
import type { AdvisoryKey } from "./key-hash.js";
import { ELSEWHERE, MISMATCH, NOT_FOUND, type LockBook } from "./lock-book.js";
import { afterPublished } from "./published.js";
import type { Session } from "./session.js";

/** One renewal of a statement: `lock` when this backend holds it, else undefined. */
export interface Renewal {
  readonly req: RenewRequest;
  readonly advisory: AdvisoryKey;
  readonly lock: HeldLock | undefined;
}

/** Renews `renewals` (ids unique) on `session` in one statement; results in order. */
export function renewAll(book: LockBook, session: Session, renewals: readonly Renewal[]): Promise<RenewResult[]> {
  // Rows of locks held here that have none yet, first (same session, so before the renewal).
  const unpublished = renewals.flatMap((r) => (r.lock !== undefined && !r.lock.published ? [r.lock] : []));
  if (unpublished.length > 0) void book.publisher.now(session, unpublished);
  const sentAt = performance.now();
  const values = [
    renewals.map((r) => r.advisory.id),
    renewals.map((r) => r.req.key),
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

/**
 * Renews a lock this backend does not hold on its holders row, waiting for a row its holder has
 * not written yet (published.ts); `first`: the answer a batch already had for it.
 */
export function renewUnheld(book: LockBook, session: Session, renewal: Renewal, first?: RenewResult): Promise<RenewResult> {
  const step = async (): Promise<RenewResult> => (await renewAll(book, session, [renewal]))[0]!;
  return afterPublished(book, "renew", renewal.advisory, step, (result) => !result.ok && result.reason === "not_found", first);
}

/** Sends batches of renewals, counting its statements. */
export class BatchRenewer {
  readonly #book: LockBook;
  #statements = 0;

  constructor(book: LockBook) {
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
    /** Requests for locks not in this backend's bookkeeping. */
    const elsewhere = new Set<number>();
    await Promise.all(
      reqs.map(async (req, index) => {
        const advisory = book.keyOf(req.key);
        const session = book.sessionOf(advisory);
        const found = book.find(await book.current(session, advisory.id), req.key, req.owner);
        if (found !== ELSEWHERE && !(found instanceof HeldLock)) {
          results[index] = found;
          return;
        }
        if (found === ELSEWHERE) elsewhere.add(index);
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
          renewAll(book, session, round.map((i) => i.renewal)).then((answers) => {
            round.forEach((item, j) => (results[item.index] = answers[j]!));
          }),
        );
      }
    }
    await Promise.all(sent);
    // Another host's lock it found no row for may be held unpublished: asked again one by one.
    await Promise.all(
      reqs.map(async (req, index) => {
        const result = results[index]!;
        if (result.ok || result.reason !== "not_found" || !elsewhere.has(index)) return;
        const advisory = book.keyOf(req.key);
        results[index] = await renewUnheld(book, book.sessionOf(advisory), { req, advisory, lock: undefined }, result);
      }),
    );
    return results;
  }
}
