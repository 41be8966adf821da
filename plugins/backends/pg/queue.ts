// The steps of the queue kinds (read/write locks, semaphores, fair mutexes: kit/kinds.ts) on
// PostgreSQL (kit/steps.ts): each one statement (queue-sql.ts) on the session the key's shared
// id routes to. Nothing is held on the session:
// holders are rows with leases on the server's clock, so a host that dies leaves rows that lapse.
import type {
  ListRequest,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
  AcquireRequest,
  AcquireResult,
  HolderRecord,
  QueueKind,
  LockMode,
  KindSteps,
  LockState,
  LockStatePage,
} from "../../../kit/index.js";
import { backendError, closedError } from "./errors.js";
import type { Rows } from "./client.js";
import { NOT_FOUND, type HeldLocks } from "./held.js";
import { queueKeyOf, waitLockOf, type AdvisoryKey } from "./keys.js";
import type { Statement } from "./mutex-sql.js";
import type { QueueStatements } from "./queue-sql.js";
import type { QueueTables } from "./tables.js";

/** What the queue steps need from their backend. */
export interface QueueContext {
  readonly book: HeldLocks;
  readonly sql: QueueStatements;
  readonly tables: QueueTables;
  /** This machine's name, recorded with each holder. */
  readonly hostname: string;
  /** This backend instance's token, recorded with each holder: a force-release tells it alone. */
  readonly instance: string;
  /** Called when a hold was taken: loss notices must be heard while this host holds something. */
  readonly onHeld: () => void;
  /** Subscribes to wake-ups of the queue-kind key `advisory` (index.ts owns the LISTEN connection). */
  readonly watch: (advisory: AdvisoryKey, listener: () => void) => ReleaseWatch;
}

const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });

/** The steps of one kind, in its own namespace of names (the `kind` column). */
export class PgQueueSteps implements KindSteps {
  readonly kind: QueueKind;
  readonly #ctx: QueueContext;

  constructor(kind: QueueKind, ctx: QueueContext) {
    this.kind = kind;
    this.#ctx = ctx;
  }

  /** One attempt: the key's row locked, expired holders and places pruned, the rules checked (queue-sql.ts). */
  async acquire(req: AcquireRequest): Promise<AcquireResult> {
    const { plugin, node } = req.holder;
    const values = [
      this.kind,
      req.name,
      req.owner,
      req.mode,
      req.limit,
      req.ttlMs,
      req.mode === "exclusive" ? req.queueMs : 0,
      plugin,
      node,
      this.#ctx.hostname,
      this.#ctx.instance,
    ];
    const row = (await this.#run("acquire", req.name, this.#ctx.sql.acquire, values))[0] ?? [];
    const [fence, acquiredAt, expiresAt, retry, limit] = row;
    if (fence !== null && fence !== undefined) {
      this.#ctx.onHeld();
      return { acquired: true, fence: Number(fence), acquiredAtMs: Number(acquiredAt), expiresAtMs: Number(expiresAt) };
    }
    if (limit !== null && limit !== undefined) {
      return retry === null || retry === undefined
        ? { acquired: false, limit: Number(limit) }
        : { acquired: false, retryAfterMs: Number(retry), limit: Number(limit) };
    }
    return retry === null || retry === undefined ? NOT_ACQUIRED : { acquired: false, retryAfterMs: Number(retry) };
  }

  /** Every renewal in one statement (a pair named twice is sent once, and both get its answer). */
  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    if (reqs.length === 0) return [];
    const unique = new Map<string, number>();
    const sent: RenewRequest[] = [];
    const slot = reqs.map((r) => {
      const id = `${r.name}\u0000${r.owner}`;
      let i = unique.get(id);
      if (i === undefined) {
        unique.set(id, (i = sent.length));
        sent.push(r);
      }
      return i;
    });
    const values = [this.kind, sent.map((r) => r.name), sent.map((r) => r.owner), sent.map((r) => r.ttlMs)];
    const rows = await this.#run("renew", reqs[0]!.name, this.#ctx.sql.renewMany, values);
    const answers = sent.map((_, i): RenewResult => {
      const expires = rows[i]?.[0];
      return expires === null || expires === undefined ? NOT_FOUND : { ok: true, expiresAtMs: Number(expires) };
    });
    return slot.map((i) => answers[i]!);
  }

  /** Deletes the holder row; wakes the key's watchers when one holds its wait lock. */
  async release(name: string, owner: string): Promise<ReleaseResult> {
    const rows = await this.#run("release", name, this.#ctx.sql.release, [this.kind, name, owner, ...this.#wake(name)]);
    return rows[0]?.[0] === true ? "released" : "not_found";
  }

  /** Deletes the queue place; wakes the watchers (shared acquirers may stand behind it). */
  async leaveQueue(name: string, owner: string): Promise<void> {
    await this.#run("leaveQueue", name, this.#ctx.sql.leaveQueue, [this.kind, name, owner, ...this.#wake(name)]);
  }

  /** Live holders and queue, or null when the key has neither. */
  async status(name: string): Promise<LockState | null> {
    const row = (await this.#run("status", name, this.#ctx.sql.status, [this.kind, name]))[0];
    if (row === undefined) return null;
    const record = this.#record(name, row);
    return record.holders.length === 0 && record.queued === 0 ? null : record;
  }

  /**
   * Deletes every holder row and tells each live holder's backend instance (`l:` notices on the
   * queue channel, which it hears on its LISTEN connection and passes to onLost by owner).
   */
  async forceRelease(name: string): Promise<number> {
    const rows = await this.#run("forceRelease", name, this.#ctx.sql.forceRelease, [this.kind, name, ...this.#wake(name)]);
    return Number(rows[0]?.[0] ?? 0);
  }

  /** One page of keys with live holders in name order, in one query; the cursor is the page's last name. */
  async list(req: ListRequest): Promise<LockStatePage> {
    const pattern = (req.prefix ?? "").replace(/[\\%_]/g, "\\$&") + "%";
    // One more than asked: whether a next page exists, without a second query.
    const rows = await this.#run("list", req.cursor ?? "", this.#ctx.sql.list, [this.kind, pattern, req.cursor ?? null, req.limit + 1]);
    const records = rows.slice(0, req.limit).map((row) => this.#record(String(row[0]), row.slice(1)));
    return rows.length > req.limit ? { records, cursor: records[records.length - 1]!.name } : { records };
  }

  /** Wake-ups on the table's queue channel, for this kind's `name`. */
  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#ctx.watch(queueKeyOf(this.kind, name), listener);
  }

  /** [the key's wait lock (two int4s), the channel, the wake payload]: a statement's wake arguments. */
  #wake(name: string): [number, number, string, string] {
    const advisory = queueKeyOf(this.kind, name);
    const [k1, k2] = waitLockOf(advisory);
    return [k1, k2, this.#ctx.book.channels.queue, `w:${advisory.id}`];
  }

  /** [limit, queued, holders json] as a LockState. */
  #record(name: string, row: Rows[number]): LockState {
    const [limit, queued, holders] = row;
    return {
      name,
      kind: this.kind,
      limit: Number(limit),
      queued: Number(queued),
      holders: ((holders ?? []) as unknown[][]).map(toHolder),
    };
  }

  /**
   * Runs a statement on the session `name`'s queue id routes to, once the objects exist; a
   * statement that finds them dropped makes them again and runs once more.
   */
  async #run(what: string, name: string, statement: Statement, values: unknown[]): Promise<Rows> {
    const { book, tables } = this.#ctx;
    if (book.closed) throw closedError();
    const advisory = queueKeyOf(this.kind, name);
    await tables.ready();
    try {
      return await book.sessionOf(advisory).run(statement, values);
    } catch (err) {
      if (!tables.gone(err)) throw backendError(err, what, book.errors);
    }
    await tables.ready();
    return book.run(what, advisory, statement, values);
  }
}

/** One element of a holders json array (queue-sql.ts holdersJson). */
function toHolder(h: unknown[]): HolderRecord {
  const [owner, mode, fence, plugin, node, hostname, acquiredAt, expiresAt, ttl, remaining] = h;
  return {
    owner: String(owner),
    mode: mode as LockMode,
    fence: Number(fence),
    holder: { plugin: String(plugin), node: String(node), hostname: String(hostname) },
    acquiredAtMs: Number(acquiredAt),
    expiresAtMs: Number(expiresAt),
    ttlMs: Number(ttl),
    ttlRemainingMs: Math.max(0, Number(remaining)),
  };
}
