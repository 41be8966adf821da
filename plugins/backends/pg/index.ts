// The PostgreSQL backend: session-level advisory locks for exclusion, held many to a
// connection on a few dedicated sessions, plus two small tables for fences and holders.
//
// - Exclusion: pg_try_advisory_lock on the session a name's advisory id routes to (id mod
//   sessions, so a name always lands on the same session). Advisory locks are re-entrant per
//   session, so each session keeps a record per advisory id (HeldLock) and answers
//   "contended" itself for an id it holds or is busy with: it never asks the server twice.
// - Fences and holders: the statement that takes the lock also hands out the next fence and
//   writes the holder (sql.ts: fences are reserved in flushed blocks, holders live in an
//   unlogged table); release only reads and unlocks. One round trip each.
// - Lease: advisory locks never expire, so the host ends each lease at its deadline (one
//   timer for the backend, expiry.ts), counted from when the acquire or renew was sent. If the
//   host dies, its sessions end and PostgreSQL frees their locks. Before ending a lease the
//   holder asks its row whether another host renewed it by owner token meanwhile.
// - By owner from anywhere (LockService.restore): renew and release of a lock this backend
//   does not hold work on the holders row (live holder checked in pg_locks); a release also
//   tells the holder on the control channel, and the holder unlocks.
// - Waking waiters: every unlock is followed by a NOTIFY on the table's released channel
//   (payload: the advisory id); one LISTEN connection per backend (listener.ts), opened on
//   the first watch or acquisition, serves watch() and the control channel.
// - Failure: a session whose connection ends loses every lock on it (renew then reports
//   not_found, release not_found) and reconnects on next use. Calls fail with
//   BACKEND_UNAVAILABLE within commandTimeoutMs when the server does not answer in time, and
//   a session the server stops answering is given up (session.ts).
import { hostname } from "node:os";
import type pg from "pg";
import type { Logger } from "pino";
import type { PgConfig } from "../../../host/config/types.js";
import { LockhostError } from "../../../host/errors.js";
import type {
  AcquireRequest,
  AcquireResult,
  LockBackend,
  LockRecord,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../host/locking/backend.js";
import { redactUrlSecrets, scrubberFor } from "../../../host/redact.js";
import { backendError, isServerError, type ErrorContext } from "./errors.js";
import { DeadlineQueue } from "./expiry.js";
import { HeldLock } from "./held-lock.js";
import { advisoryKeyOf, type AdvisoryKey } from "./key-hash.js";
import { ReleaseListener } from "./listener.js";
import { Session, wasNotSent, type Rows } from "./session.js";
import { channelsOf, statementsFor, type Channels, type Statement, type Statements } from "./sql.js";

/** Options of a PgBackend beyond its config, mostly for tests and embedders. */
export interface PgBackendOptions {
  /** application_name of the sessions, to count them in pg_stat_activity; default `lockhost:<pid>`. */
  readonly applicationName?: string;
  /**
   * Maps a lock name to its advisory lock id; default advisoryKeyOf (key-hash.ts). Every host
   * sharing a table must use the same mapping; tests replace it to force collisions.
   */
  readonly advisoryKey?: (name: string) => AdvisoryKey;
}

const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });
const NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });
const MISMATCH: RenewResult = Object.freeze({ ok: false, reason: "mismatch" });
/** SQLSTATEs of a CREATE TABLE IF NOT EXISTS that lost a race with another host's. */
const CREATE_RACE_CODES = new Set(["23505", "42P07", "42710"]);
/** How often forceRelease looks whether a terminated holder has gone. */
const GONE_POLL_MS = 5;
/** How many ended leases' owner tokens are remembered (their renew and release need no round trip). */
const ENDED_LIMIT = 4096;

/** The lock of a request is not in this backend's bookkeeping: ask the holders row. */
const ELSEWHERE = Symbol("elsewhere");

/** One renewal of a statement: `lock` when this backend holds it, else undefined. */
interface Renewal {
  readonly req: RenewRequest;
  readonly advisory: AdvisoryKey;
  readonly lock: HeldLock | undefined;
}

const ignore = (): undefined => undefined;
/** Calls a watcher: its bug must not reach the backend. */
const callSafely = (listener: () => void): void => {
  try {
    listener();
  } catch {
    // ignored: see above
  }
};
const closedError = (): LockhostError => new LockhostError("CLOSED", "the pg backend is closed");

/**
 * Locks in PostgreSQL (advisory locks + fence and holder tables), shared by every host on the
 * same database and table. Implements LockBackend; see host/locking/backend.ts for each step's
 * contract and the file header for how each step is done.
 */
export class PgBackend implements LockBackend {
  /** Always "pg". */
  readonly kind = "pg";
  /** Always true: every host on the same database and table shares the locks. */
  readonly distributed = true;
  readonly #sessions: Session[];
  readonly #sql: Statements;
  readonly #expiry = new DeadlineQueue<HeldLock>((lock) => this.#expire(lock));
  readonly #errors: ErrorContext;
  readonly #keyOf: (name: string) => AdvisoryKey;
  readonly #log: Logger;
  readonly #hostname = hostname();
  readonly #channels: Channels;
  readonly #listener: ReleaseListener;
  /** Release listeners by advisory id (colliding names share them: a spurious wake-up is allowed). */
  readonly #watchers = new Map<string, Set<() => void>>();
  /** Owner tokens of leases that ended here, oldest first: such a lease is over everywhere. */
  readonly #ended = new Set<string>();
  /** Statements sent by renewMany (one per session per batch, unless a batch names an id twice). */
  renewRoundTrips = 0;
  /** Set once this backend has made sure its tables exist. */
  #tableReady = false;
  #closed = false;
  #closing: Promise<void> | undefined;

  /**
   * Opens no connection: each session connects on first use, and a server that cannot be
   * reached fails calls with BACKEND_UNAVAILABLE, never the constructor.
   */
  constructor(config: PgConfig, log: Logger, options: PgBackendOptions = {}) {
    const timeout = config.commandTimeoutMs;
    const scrub = scrubberFor(config.url);
    this.#errors = { target: redactUrlSecrets(config.url), commandTimeoutMs: timeout, scrub };
    this.#sql = statementsFor(config.table);
    this.#keyOf = options.advisoryKey ?? advisoryKeyOf;
    this.#log = log;
    const client: pg.ClientConfig = {
      connectionString: config.url,
      application_name: options.applicationName ?? `lockhost:${process.pid}`,
      connectionTimeoutMillis: timeout,
      // The server cancels a slow statement a little before the session's time limits (see
      // session.ts): a cancelled statement is an answer and costs one call, while a session
      // that does not answer for commandTimeoutMs is dropped with every lock on it.
      statement_timeout: Math.max(1, timeout - Math.min(250, Math.floor(timeout / 4))),
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      pipeline: true,
    };
    this.#sessions = Array.from(
      { length: config.sessions },
      (_, index) =>
        new Session({
          index,
          client,
          commandTimeoutMs: timeout,
          prepare: (c, ms) => this.#prepare(c, ms),
          onLost: (locks) => {
            for (const lock of locks) {
              this.#expiry.remove(lock);
              this.#remember(lock.owner);
            }
          },
          reconnectAfter: (err) => this.#tableGone(err),
          errors: this.#errors,
          log,
        }),
    );
    this.#channels = channelsOf(config.table);
    this.#listener = new ReleaseListener({
      client: {
        connectionString: config.url,
        application_name: `${client.application_name ?? "lockhost"}:listen`,
        connectionTimeoutMillis: timeout,
        keepAlive: true,
        keepAliveInitialDelayMillis: 10_000,
      },
      channels: [this.#channels.released, this.#channels.control],
      commandTimeoutMs: timeout,
      onNotification: (channel, payload) => this.#notified(channel, payload),
      onReconnect: () => {
        for (const set of this.#watchers.values()) for (const listener of [...set]) callSafely(listener);
      },
      errors: this.#errors,
      log,
    });
  }

  /** The server pids of the sessions connected now (for tests and diagnostics). */
  get sessionPids(): number[] {
    return this.#sessions.flatMap((s) => (s.pid === undefined ? [] : [s.pid]));
  }

  /** The server pid of the LISTEN connection while it is up (never one of sessionPids). */
  get listenerPid(): number | undefined {
    return this.#listener.pid;
  }

  /** Locks this backend holds now, by its own bookkeeping. */
  get heldCount(): number {
    return this.#expiry.size;
  }

  /** Takes `req.key` if no session anywhere holds it, with the next fence (LockBackend.acquire). */
  acquire(req: AcquireRequest): Promise<AcquireResult> {
    if (this.#closed) return Promise.reject(closedError());
    const advisory = this.#keyOf(req.key);
    const session = this.#sessionOf(advisory);
    const current = session.held.get(advisory.id);
    if (current === undefined) return this.#tryAcquire(req, advisory, session);
    return this.#acquireAfter(current, req, advisory, session);
  }

  /**
   * Sets the lease to `ttlMs` from now if `owner` still holds `key` (LockBackend.renew). A lock
   * another backend instance holds (another process: restore) is renewed on its holders row;
   * its holder sees the later expiry before it would end the lease.
   */
  async renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
    const found = this.#find(await this.#current(session, advisory.id), key, owner);
    if (found === ELSEWHERE) return (await this.#renewAll(session, [{ req: { key, owner, ttlMs }, advisory, lock: undefined }]))[0]!;
    if (!(found instanceof HeldLock)) return found;
    const lock = found;
    const sentAt = performance.now();
    const values = [advisory.id, key, owner, ttlMs];
    return session.run(this.#sql.renew, values).then(
      (rows): RenewResult => this.#renewed(session, lock, rows[0]?.[0], sentAt, ttlMs),
      (err: unknown) => {
        // The connection ended: the lock ended with it.
        if (session.held.get(advisory.id) !== lock) return NOT_FOUND;
        throw backendError(err, "renew", this.#errors);
      },
    );
  }

  /**
   * Renews each lock as renew() would, with one statement per session (LockBackend.renewMany);
   * results in request order. Counts its statements in `renewRoundTrips`.
   */
  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    if (this.#closed) throw closedError();
    const results: RenewResult[] = new Array<RenewResult>(reqs.length);
    const bySession = new Map<Session, { renewal: Renewal; index: number }[]>();
    await Promise.all(
      reqs.map(async (req, index) => {
        const advisory = this.#keyOf(req.key);
        const session = this.#sessionOf(advisory);
        const found = this.#find(await this.#current(session, advisory.id), req.key, req.owner);
        if (found !== ELSEWHERE && !(found instanceof HeldLock)) {
          results[index] = found;
          return;
        }
        let list = bySession.get(session);
        if (list === undefined) bySession.set(session, (list = []));
        list.push({ renewal: { req, advisory, lock: found === ELSEWHERE ? undefined : found }, index });
      }),
    );
    const sent: Promise<void>[] = [];
    for (const [session, list] of bySession) {
      // One UPDATE changes a row once: an id named twice goes in a further statement.
      const rounds: (typeof list)[] = [];
      for (const item of list) {
        let round = rounds.find((r) => !r.some((o) => o.renewal.advisory.id === item.renewal.advisory.id));
        if (round === undefined) rounds.push((round = []));
        round.push(item);
      }
      for (const round of rounds) {
        this.renewRoundTrips++;
        sent.push(
          this.#renewAll(session, round.map((i) => i.renewal)).then((answers) => {
            round.forEach((item, j) => (results[item.index] = answers[j]!));
          }),
        );
      }
    }
    await Promise.all(sent);
    return results;
  }

  /**
   * Unlocks `key` if `owner` holds it (LockBackend.release). A lock another backend instance
   * holds is released on its holders row, and its holder is told to unlock (control channel);
   * until it does (it may be gone: then its session, and the lock, are gone too) acquirers see
   * it contended.
   */
  async release(key: string, owner: string): Promise<ReleaseResult> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
    const found = this.#find(await this.#current(session, advisory.id), key, owner);
    if (found instanceof HeldLock) return this.#unlock(session, found, true);
    if (found !== ELSEWHERE) return found.ok ? "not_found" : found.reason;
    const rows = await this.#run("release", advisory, this.#sql.releaseRemote, [advisory.id, key, owner, this.#channels.control]);
    const result = rows[0]?.[0];
    return result === "released" || result === "mismatch" ? result : "not_found";
  }

  /**
   * Calls `listener` when `key` may have become free on any host (LockBackend.watch): after
   * every unlock, a NOTIFY on the table's released channel reaches the backend's one LISTEN
   * connection; after that connection came back from a drop, every listener is called once.
   */
  watch(key: string, listener: () => void): ReleaseWatch {
    if (this.#closed) return { ready: Promise.resolve(), close: ignore };
    const id = this.#keyOf(key).id;
    let set = this.#watchers.get(id);
    if (set === undefined) this.#watchers.set(id, (set = new Set()));
    // A function of its own per watch: the same listener may be watched twice and closed once.
    const own = (): void => listener();
    set.add(own);
    let open = true;
    return {
      ready: this.#listener.start(),
      close: () => {
        if (!open) return;
        open = false;
        set.delete(own);
        if (set.size === 0 && this.#watchers.get(id) === set) this.#watchers.delete(id);
      },
    };
  }

  /** The live holder of `key` on any host, or null (LockBackend.status). */
  async status(key: string): Promise<LockRecord | null> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const rows = await this.#run("status", advisory, this.#sql.status, [advisory.id, key, advisory.classid, advisory.objid]);
    const row = rows[0];
    if (row === undefined) return null;
    const [owner, fence, plugin, node, host, acquiredAt, expiresAt, remaining] = row;
    return {
      key,
      owner: String(owner),
      fence: Number(fence),
      holder: { plugin: String(plugin), node: String(node), hostname: String(host) },
      acquiredAtMs: Number(acquiredAt),
      expiresAtMs: Number(expiresAt),
      ttlRemainingMs: Number(remaining),
    };
  }

  /**
   * Frees `key` whoever holds it; true when someone did (LockBackend.forceRelease).
   *
   * When this backend holds it, it just unlocks. Otherwise it clears the holder row's owner
   * (so the holder's next renew or release finds the lock no longer theirs) and terminates the
   * holder's session with pg_terminate_backend, the only way to take an advisory lock from
   * another session: EVERY lock on that session is lost with it (that host sees them lost and
   * reconnects). Resolves once the holder's session has gone, so the key can be taken at once.
   * Needs the right to signal the holder's backend: the same database role, or
   * pg_signal_backend.
   */
  async forceRelease(key: string): Promise<boolean> {
    if (this.#closed) throw closedError();
    const advisory = this.#keyOf(key);
    const session = this.#sessionOf(advisory);
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
      return (await this.#unlock(session, lock, true)) === "released";
    }
    const rows = await this.#run("forceRelease", advisory, this.#sql.forceRelease, [advisory.id, key, advisory.classid, advisory.objid]);
    const row = rows[0];
    if (row === undefined) return false;
    const [pid, terminated] = row;
    if (terminated === true) await this.#awaitGone(advisory, Number(pid));
    this.#notifyReleased(session, advisory.id);
    return true;
  }

  /**
   * Ends every session; PostgreSQL frees their locks as each one ends (fences are kept).
   * Does not wait past commandTimeoutMs for a server that does not answer.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    this.#closed = true;
    this.#expiry.clear();
    this.#listener.close();
    this.#watchers.clear();
    await Promise.all(this.#sessions.map((s) => s.close()));
  }

  #sessionOf(advisory: AdvisoryKey): Session {
    // By advisory id, not by name: names with the same id land on the same session, whose
    // bookkeeping then keeps them apart.
    return this.#sessions[advisory.objid % this.#sessions.length]!;
  }

  #tryAcquire(req: AcquireRequest, advisory: AdvisoryKey, session: Session): Promise<AcquireResult> {
    const lock = new HeldLock(req.key, req.owner, advisory);
    session.held.set(advisory.id, lock);
    const sentAt = performance.now();
    const { plugin, node } = req.holder;
    const values = [advisory.id, req.key, req.owner, plugin, node, this.#hostname, req.ttlMs];
    const acquired = session.run(this.#sql.acquire, values).then(
      (rows): AcquireResult | Promise<AcquireResult> => {
        this.#checkStillOurs(session, lock);
        const row = rows[0];
        if (row === undefined || row[0] === null) {
          session.held.delete(advisory.id);
          // The holder row's lease end, when the row was there (maybe an older version of it).
          const left = Number(row?.[4]);
          return left > 0 ? { acquired: false, retryAfterMs: left } : NOT_ACQUIRED;
        }
        const [fence, reserved, acquiredAt, expiresAt] = row.map(Number) as [number, number, number, number];
        const held = (handedOut: number): AcquireResult => {
          lock.state = "held";
          lock.busy = undefined;
          lock.deadline = sentAt + req.ttlMs;
          lock.fence = handedOut;
          lock.expiresAtMs = expiresAt;
          this.#expiry.add(lock);
          // The control channel must be heard while this host holds locks (release by owner elsewhere).
          void this.#listener.start();
          return { acquired: true, fence: handedOut, acquiredAtMs: acquiredAt, expiresAtMs: expiresAt };
        };
        if (fence <= reserved) return held(fence);
        // Past the reserved block: reserve the next one (flushed) before the fence goes out.
        return session.run(this.#sql.reserve, [advisory.id, fence]).then(
          (reservedRows) => {
            this.#checkStillOurs(session, lock);
            const raised = Number(reservedRows[0]?.[0]);
            if (!Number.isSafeInteger(raised)) throw new Error("the fence reservation found no holders row");
            return held(raised);
          },
          (err: unknown): never => {
            if (session.held.get(advisory.id) === lock) void this.#unlock(session, lock, false);
            throw backendError(err, "acquire", this.#errors);
          },
        );
      },
      (err: unknown): never => {
        if (session.held.get(advisory.id) === lock) {
          // The session lives but the statement failed, maybe after taking the lock (a
          // session-level lock survives the rollback): unlock before the id is free again here.
          if (wasNotSent(err)) session.held.delete(advisory.id);
          else void this.#unlock(session, lock, false);
        }
        throw backendError(err, "acquire", this.#errors);
      },
    );
    lock.busy = acquired;
    return acquired;
  }

  /** Throws when `lock` is no longer its session's record: the session ended (or the backend closed) under it. */
  #checkStillOurs(session: Session, lock: HeldLock): void {
    if (session.held.get(lock.advisory.id) === lock) return;
    if (this.#closed) throw closedError();
    throw new LockhostError("BACKEND_UNAVAILABLE", `PostgreSQL at ${this.#errors.target}: the session ended during acquire`);
  }

  /** Acquire for an id this session has a record of: contended, unless that record is on its way out. */
  async #acquireAfter(
    first: HeldLock,
    req: AcquireRequest,
    advisory: AdvisoryKey,
    session: Session,
  ): Promise<AcquireResult> {
    let lock: HeldLock | undefined = first;
    while (lock !== undefined) {
      if (lock.state === "held") this.#expireIfDue(lock);
      const busy = lock.busy;
      if (lock.state === "held") {
        // The host ends the lease at its deadline (unless renewed): retry then at the latest.
        const left = Math.ceil(lock.deadline - performance.now());
        return left > 0 ? { acquired: false, retryAfterMs: left } : NOT_ACQUIRED;
      }
      if ((lock.state !== "releasing" && lock.state !== "checking") || busy === undefined) return NOT_ACQUIRED;
      await busy.then(ignore, ignore);
      if (this.#closed) throw closedError();
      const next = session.held.get(advisory.id);
      // Still there after its unlock settled: not free, whatever happened.
      if (next === lock && lock.busy === busy) return NOT_ACQUIRED;
      lock = next;
    }
    return this.#tryAcquire(req, advisory, session);
  }

  /** Ends `lock` now if its deadline passed (the timer may lag behind a busy event loop). */
  #expireIfDue(lock: HeldLock): boolean {
    if (performance.now() < lock.deadline) return false;
    this.#expire(lock);
    return true;
  }

  /**
   * Ends a lease at its deadline, unless another host renewed it by owner token meanwhile (its
   * row then names a later expiry than this host last set: the lease goes on to that).
   */
  #expire(lock: HeldLock): void {
    if (lock.state !== "held") return;
    const session = this.#sessionOf(lock.advisory);
    const id = lock.advisory.id;
    if (session.held.get(id) !== lock) return;
    lock.state = "checking";
    this.#expiry.remove(lock);
    const sentAt = performance.now();
    const checked = session.run(this.#sql.expire, [id, lock.key, lock.owner, lock.expiresAtMs]).then(
      (rows) => {
        if (session.held.get(id) !== lock || lock.state !== "checking") return;
        const [remaining, expiresAt] = rows[0] ?? [];
        if (remaining !== null && remaining !== undefined) {
          this.#log.debug({ key: lock.key }, "pg lock lease was renewed by owner on another host: kept");
          lock.state = "held";
          lock.busy = undefined;
          lock.deadline = sentAt + Number(remaining);
          lock.expiresAtMs = Number(expiresAt);
          this.#expiry.add(lock);
          return;
        }
        this.#log.debug({ key: lock.key }, "pg lock lease ended without renewal: released");
        lock.state = "releasing";
        this.#remember(lock.owner);
        session.held.delete(id);
        this.#notifyReleased(session, id);
      },
      // The session lives (it still has this record): unlock all the same, or drop the session.
      () => (session.held.get(id) === lock ? this.#unlock(session, lock, false) : undefined),
    );
    lock.busy = checked;
  }

  /**
   * The record of `id` on `session` once any lease end it is due is settled: a lease past its
   * deadline is checked (#expire) first.
   */
  async #current(session: Session, id: string): Promise<HeldLock | undefined> {
    for (;;) {
      const lock = session.held.get(id);
      if (lock === undefined) return undefined;
      if (lock.state === "held") this.#expireIfDue(lock);
      const busy = lock.busy;
      if (lock.state !== "checking" || busy === undefined) return lock;
      await busy.then(ignore, ignore);
      if (this.#closed) throw closedError();
    }
  }

  /**
   * What renew and release of (`key`, `owner`) act on: this backend's lock, the answer it gives
   * without the server, or ELSEWHERE (not in this backend's bookkeeping: ask the holders row).
   */
  #find(lock: HeldLock | undefined, key: string, owner: string): HeldLock | RenewResult | typeof ELSEWHERE {
    if (lock === undefined) return this.#ended.has(owner) ? NOT_FOUND : ELSEWHERE;
    // Another name with the same id, or an acquisition not confirmed yet: this key is not held.
    if (lock.key !== key || lock.state === "acquiring") return NOT_FOUND;
    if (lock.owner !== owner) return MISMATCH;
    return lock.state === "held" ? lock : NOT_FOUND;
  }

  /** Applies the answer of a renew of `lock` sent at `sentAt` (`expires`: the row's new expiry, or none). */
  #renewed(session: Session, lock: HeldLock, expires: unknown, sentAt: number, ttlMs: number): RenewResult {
    // Expired, released or lost while the renew was in flight: the lease had ended.
    if (session.held.get(lock.advisory.id) !== lock || lock.state !== "held") return NOT_FOUND;
    if (expires === null || expires === undefined) {
      // The server says it is not ours (force-released by another host): give it up here too.
      void this.#unlock(session, lock, false);
      return NOT_FOUND;
    }
    lock.deadline = sentAt + ttlMs;
    lock.expiresAtMs = Number(expires);
    this.#expiry.update(lock);
    return { ok: true, expiresAtMs: Number(expires) };
  }

  /** Renews `renewals` (ids unique) on `session` in one statement; results in order. */
  #renewAll(session: Session, renewals: readonly Renewal[]): Promise<RenewResult[]> {
    const sentAt = performance.now();
    const values = [
      renewals.map((r) => r.advisory.id),
      renewals.map((r) => r.req.key),
      renewals.map((r) => r.req.owner),
      renewals.map((r) => r.req.ttlMs),
      renewals.map((r) => r.lock !== undefined),
    ];
    return session.run(this.#sql.renewMany, values).then(
      (rows) =>
        renewals.map((r, i): RenewResult => {
          const [expires, otherOwner] = rows[i] ?? [];
          if (r.lock !== undefined) return this.#renewed(session, r.lock, expires, sentAt, r.req.ttlMs);
          if (expires !== null && expires !== undefined) return { ok: true, expiresAtMs: Number(expires) };
          return otherOwner === true ? MISMATCH : NOT_FOUND;
        }),
      (err: unknown) => {
        // Locks of a session that ended ended with it; anything else is unknown: the batch fails.
        if (renewals.every((r) => r.lock !== undefined && session.held.get(r.advisory.id) !== r.lock)) {
          return renewals.map(() => NOT_FOUND);
        }
        throw backendError(err, "renew", this.#errors);
      },
    );
  }

  /** Remembers that the lease of `owner` ended here (bounded, oldest out). */
  #remember(owner: string): void {
    this.#ended.add(owner);
    if (this.#ended.size > ENDED_LIMIT) this.#ended.delete(this.#ended.values().next().value!);
  }

  /** Tells every host's watchers that `id` may be free (after its unlock was answered); best effort. */
  #notifyReleased(session: Session, id: string): void {
    // Not worth a new connection: a session that ended has no lock left to announce.
    if (session.pid === undefined || this.#closed) return;
    session.run(this.#sql.notify, [this.#channels.released, id]).catch(ignore);
  }

  /** A notification on one of the table's channels (see ReleaseListener). */
  #notified(channel: string, payload: string): void {
    if (channel === this.#channels.released) {
      const set = this.#watchers.get(payload);
      if (set !== undefined) for (const listener of [...set]) callSafely(listener);
      return;
    }
    if (channel !== this.#channels.control) return;
    // `pid:id:fence`: another host released by owner the lock `id` our session `pid` holds.
    const [pid, id, fence] = payload.split(":");
    const session = this.#sessions.find((s) => s.pid !== undefined && String(s.pid) === pid);
    const lock = id === undefined ? undefined : session?.held.get(id);
    if (session === undefined || lock === undefined || String(lock.fence) !== fence) return;
    if (lock.state !== "held") return;
    this.#log.info({ key: lock.key, fence: lock.fence }, "pg lock released by owner on another host: unlocked");
    void this.#unlock(session, lock, true);
  }

  /**
   * Unlocks `lock` on its session and forgets it when done; never rejects. With `checkOwner`,
   * the release statement also reads whether the row still names the owner; if it fails (a
   * statement timeout...), a bare unlock follows, and if even that fails the session is
   * dropped, which frees the lock on the server in any case. Until then the id stays
   * "releasing", so no caller here takes it before the server has let it go. Resolves to
   * "released" only when the server confirmed the unlock (and, with `checkOwner`, that the row
   * still named this owner: it does not after a force-release).
   */
  #unlock(session: Session, lock: HeldLock, checkOwner: boolean): Promise<ReleaseResult> {
    lock.state = "releasing";
    this.#expiry.remove(lock);
    this.#remember(lock.owner);
    const id = lock.advisory.id;
    const bare = (): Promise<ReleaseResult> =>
      session.run(this.#sql.unlock, [id], true).then(
        () => "released",
        () => "not_found",
      );
    const unlocked = checkOwner
      ? session.run(this.#sql.release, [id, lock.owner]).then(
          (rows): ReleaseResult => (rows[0]?.[0] === true ? "released" : "not_found"),
          // The session lives (it still has this record): the lock is still held.
          (): Promise<ReleaseResult> | ReleaseResult => (session.held.get(id) === lock ? bare() : "not_found"),
        )
      : bare();
    const done = unlocked.then((result) => {
      if (session.held.get(id) === lock) {
        session.held.delete(id);
        this.#notifyReleased(session, id);
      }
      return result;
    });
    lock.busy = done;
    return done;
  }

  /** Runs a statement that needs no lock of its own on `advisory`'s session, failures mapped. */
  #run(what: string, advisory: AdvisoryKey, statement: Statement, values: unknown[]): Promise<Rows> {
    return this.#sessionOf(advisory)
      .run(statement, values)
      .catch((err: unknown) => {
        throw backendError(err, what, this.#errors);
      });
  }

  /** Waits (up to commandTimeoutMs) until the terminated session `pid` no longer holds the lock. */
  async #awaitGone(advisory: AdvisoryKey, pid: number): Promise<void> {
    const until = performance.now() + this.#errors.commandTimeoutMs;
    while (performance.now() < until) {
      const rows = await this.#run("forceRelease", advisory, this.#sql.heldBy, [advisory.classid, advisory.objid, pid]);
      if (rows[0]?.[0] !== true) return;
      await new Promise((r) => setTimeout(r, GONE_POLL_MS));
    }
    this.#log.warn({ pid }, "pg force-release: the terminated holder session has not exited yet");
  }

  /**
   * Whether `err` says a table is gone (dropped by an operator). The holders went with it: the
   * session is dropped (its locks are lost) and the next connection creates the tables again.
   * Fences keep increasing as long as the fence table (`<table>`) is kept.
   */
  #tableGone(err: unknown): boolean {
    if (!isServerError(err) || err.code !== "42P01") return false;
    if (this.#tableReady) this.#log.warn({ err: this.#errors.scrub(err.message) }, "pg lock tables are gone: they will be created again");
    this.#tableReady = false;
    return true;
  }

  /**
   * Makes sure the tables exist, once per backend. Existing tables are only looked up (an
   * operator may create them, DDL in sql.ts, for a role that may not create tables); missing
   * ones are created, and several hosts may race to do so.
   */
  async #prepare(client: pg.Client, timeoutMs: number): Promise<void> {
    if (this.#tableReady) return;
    const until = performance.now() + timeoutMs;
    const left = (): number => Math.max(1, until - performance.now());
    const { text, values } = this.#sql.tablesExist;
    const exist = await client.query<[boolean]>({ text, values: [...values], rowMode: "array", query_timeout: left() } as pg.QueryArrayConfig);
    if (exist.rows[0]?.[0] !== true) {
      for (const create of this.#sql.createTables) {
        try {
          await client.query({ text: create, query_timeout: left() } as pg.QueryConfig);
        } catch (err) {
          if (!(isServerError(err) && CREATE_RACE_CODES.has(err.code ?? ""))) throw err;
        }
      }
    }
    this.#tableReady = true;
  }
}
