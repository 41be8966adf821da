// The Redis mutex: its MutexStore (kit/mutex.ts), which MutexSteps serves, through
// RedisBackend's methods (index.ts), as the mutex's and the leader kind's steps. Each step is
// one Lua script (mutex-lua.ts) on the backend's connection (client.ts) to one server or, with
// cluster = true, to the Redis Cluster node that owns the lock's slot, over keys that Redis
// Cluster keeps in one slot per lock name (keys.ts). This file maps steps to scripts and replies to results. On the
// lock path (acquire, renew, release while connected): one EVALSHA per call, reply handlers
// bound once (but acquire's, a closure over the TTL its reply's expiry is derived from), shared
// results for the outcomes that carry no data (a contended acquire allocates its result only to
// carry the holder's remaining lease). Batched renewals are cut into script calls, and the
// acquires and releases of one tick sent together, by batch.ts; a watch is heard on the
// backend's subscriber and flagged as watched (watch.ts).
import type { Logger } from "pino";
import { LockhostError } from "../../../kit/index.js";
import type {
  Holder,
  ListRequest,
  LockPage,
  LockRecord,
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexHandoffResult,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import { renewCalls, TickBatcher } from "./batch.js";
import type { LockClient, RedisConnection } from "./client.js";
import { scanNames, type KeyLayout } from "./keys.js";
import { DELETED, MISMATCH, NOT_FOUND, type AcquireReply, type ReleaseReply, type RenewReply, type StatusReply } from "./mutex-lua.js";
import type { ReleaseWatcher, WatchFlags } from "./watch.js";

// Results that carry nothing per call are shared, frozen, so the lock path allocates none.
const NOT_ACQUIRED: MutexAcquireResult = Object.freeze({ acquired: false });
const RENEW_NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });
const RENEW_MISMATCH: RenewResult = Object.freeze({ ok: false, reason: "mismatch" });

function toRenewResult(reply: RenewReply): RenewResult {
  if (reply > 0) return { ok: true, expiresAtMs: reply };
  return reply === MISMATCH ? RENEW_MISMATCH : RENEW_NOT_FOUND;
}

function toReleaseResult(reply: ReleaseReply): ReleaseResult {
  return reply === DELETED ? "released" : reply === MISMATCH ? "mismatch" : "not_found";
}

const isDeleted = (reply: number): boolean => reply === DELETED;

// A handoff whose holder did not hold the key: nothing changed (shared, frozen).
const HANDOFF_NOT_FOUND: MutexHandoffResult = Object.freeze({ released: "not_found" });
const HANDOFF_MISMATCH: MutexHandoffResult = Object.freeze({ released: "mismatch" });
const handoffRefused = (reply: number): MutexHandoffResult => (reply === MISMATCH ? HANDOFF_MISMATCH : HANDOFF_NOT_FOUND);

/**
 * The result of an acquire whose reply was one number (mutex-lua.ts AcquireReply): > 0, acquired,
 * with the server's clock in µs as fence, so acquiredAtMs is its whole ms; else contended,
 * `-1 - PTTL` (0: a lock without TTL, which tells no end).
 */
function acquiredOrNot(reply: number, ttlMs: number): MutexAcquireResult {
  if (reply > 0) {
    const acquiredAtMs = Math.floor(reply / 1000);
    return { acquired: true, fence: reply, acquiredAtMs, expiresAtMs: acquiredAtMs + ttlMs };
  }
  return reply < 0 ? { acquired: false, retryAfterMs: -1 - reply } : NOT_ACQUIRED;
}

const noop = (): void => undefined;

/** A release waiting for its batch. */
interface Releasing {
  readonly name: string;
  readonly owner: string;
}

/** What a call of a batch that failed on its own says, as the error ioredis gives a refused command. */
function refused(message: string): Error {
  const err = new Error(message);
  err.name = "ReplyError";
  return err;
}

/**
 * Whether Redis takes `ttlMs`. Checked before sending: a script that fails half-way is not
 * rolled back, and PEXPIRE failing after HSET would leave a lock without a TTL.
 */
const validTtl = (ttlMs: number): boolean => ttlMs > 0 && Number.isSafeInteger(ttlMs);

function ttlError(ttlMs: number): Promise<never> {
  return Promise.reject(new LockhostError("INVALID_ARGUMENT", `ttlMs must be a positive integer number of milliseconds, got ${String(ttlMs)}`));
}

/** What the mutex borrows from its RedisBackend. */
export interface RedisMutexParts {
  readonly conn: RedisConnection;
  readonly keys: KeyLayout;
  readonly log: Logger;
  readonly watcher: ReleaseWatcher;
  /** The watched flags of the mutex's watches. */
  readonly flags: WatchFlags;
  /** os.hostname(), recorded with each lock. */
  readonly hostname: string;
  /** The backend's instance id, stored with each lock it takes (RedisBackend.instanceId). */
  readonly instanceId: string;
  /** `[locking.redis] reclaim_own_locks`. */
  readonly reclaimOwnLocks: boolean;
  /** `[locking.redis] cluster`: no tick batches there (one script may only touch keys of one slot). */
  readonly cluster: boolean | undefined;
  /** Counts script calls of renewMany (RedisBackend.renewRoundTrips). */
  readonly countRenewCalls: (calls: number) => void;
}

/**
 * The mutex's steps on one RedisBackend, one record per key (kit/mutex.ts MutexStore): see
 * kit/steps.ts for each step's contract. Every time it reports comes from the clock
 * of the server that holds the lock (on a cluster: the node owning its slot), in whole ms.
 *
 * Failures (server unreachable, command timeout, a refused command) reject with a
 * LockhostError BACKEND_UNAVAILABLE within about commandTimeoutMs, at once while the
 * connection is known to be down; the connection recovers by itself when the server is back.
 */
export class RedisMutex implements MutexStore {
  readonly #conn: RedisConnection;
  readonly #redis: LockClient;
  readonly #keys: KeyLayout;
  readonly #log: Logger;
  readonly #hostname: string;
  readonly #instanceId: string;
  readonly #reclaim: "1" | "0";
  readonly #watcher: ReleaseWatcher;
  /** The watched flags of this backend's mutex watches (watch.ts). */
  readonly #flags: WatchFlags;
  readonly #countRenewCalls: (calls: number) => void;
  /** Set by close(): the client may still say "ready" while QUIT is under way. */
  #closed = false;
  /**
   * Acquires and releases of one tick, sent together (batch.ts); undefined on a cluster,
   * where one script may only touch keys of one slot.
   */
  readonly #acquires: TickBatcher<MutexAcquireRequest, MutexAcquireResult> | undefined;
  readonly #releases: TickBatcher<Releasing, ReleaseResult> | undefined;

  constructor(parts: RedisMutexParts) {
    this.#conn = parts.conn;
    this.#redis = parts.conn.redis;
    this.#keys = parts.keys;
    this.#log = parts.log;
    this.#hostname = parts.hostname;
    this.#instanceId = parts.instanceId;
    this.#reclaim = parts.reclaimOwnLocks ? "1" : "0";
    this.#watcher = parts.watcher;
    this.#flags = parts.flags;
    this.#countRenewCalls = parts.countRenewCalls;
    if (!parts.cluster) {
      this.#releases = new TickBatcher(
        (r) => this.#releaseOne(r.name, r.owner),
        (rs) => this.#releaseMany(rs),
      );
      this.#acquires = new TickBatcher(
        (req) => this.#acquireOne(req),
        (reqs) => this.#acquireMany(reqs),
        this.#releases,
      );
    }
  }

  /** Takes `req.name` if it is free, with the next fence (MutexStore.acquire). */
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    if (!validTtl(req.ttlMs)) return ttlError(req.ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#acquire(req));
    return this.#acquire(req);
  }

  /** Sets the lease to `ttlMs` from now if `owner` still holds `name` (the one-lock form of MutexStore.renewMany). */
  renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    if (!validTtl(ttlMs)) return ttlError(ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#renew(name, owner, ttlMs));
    return this.#renew(name, owner, ttlMs);
  }

  /**
   * Renews each lock as renew() would, in one round trip (MutexStore.renewMany): one script
   * per chunk of up to 1,000 locks, or on a cluster per slot, all sent at once. Rejects the
   * whole batch with BACKEND_UNAVAILABLE when any call fails (others may have been applied),
   * and with INVALID_ARGUMENT, before sending anything, for a TTL Redis cannot take.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    if (reqs.length === 0) return Promise.resolve([]);
    for (const r of reqs) if (!validTtl(r.ttlMs)) return ttlError(r.ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#renewMany(reqs));
    return this.#renewMany(reqs);
  }

  /**
   * Calls `listener` when `name` is released or force-released by any host on this server or
   * cluster, or its holder proclaims (MutexStore.watch), over a subscriber connection opened
   * on the first watch. The name is flagged as watched while the watch is open (watch.ts WatchFlags:
   * release, force-release and proclaim publish only then). `ready` settles once SUBSCRIBE is
   * confirmed and the flag is set, or after commandTimeoutMs if they are not. After the
   * subscriber reconnects every listener is called once (a release may have been missed
   * meanwhile). A lease that merely expires is not signalled.
   */
  watch(name: string, listener: () => void): ReleaseWatch {
    const watch = this.#watcher.watch(this.#keys.released(name), listener);
    if (this.#closed) return watch;
    const flag = this.#flags.hold(name);
    return {
      ready: Promise.all([watch.ready, flag.ready]).then(noop),
      close: () => {
        watch.close();
        flag.close();
      },
    };
  }

  /** Deletes the lock if `owner` still holds `name` (MutexStore.release). */
  release(name: string, owner: string): Promise<ReleaseResult> {
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#release(name, owner));
    return this.#release(name, owner);
  }

  /**
   * Releases `owner`'s lock on `name` and takes it for `next.owner` in one script (KindSteps.handoff):
   * one round trip, the key never free in between, nothing published on its release channel.
   * Sent at once, not with the tick's batch: a handoff is the next waiter's whole wait.
   */
  handoff(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    if (!validTtl(next.ttlMs)) return ttlError(next.ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#handoff(name, owner, next));
    return this.#handoff(name, owner, next);
  }

  /** The live holder of `name`, or null (MutexStore.status); the holder includes the hostname. */
  status(name: string): Promise<LockRecord | null> {
    return this.#conn.whenReady(() => this.#redis.lockhostStatus(this.#keys.lock(name)).then((reply) => toRecord(name, reply), this.#fail));
  }

  /** A page of held locks: SCAN over the prefix, then each one's status (MutexStore.list). */
  list(req: ListRequest): Promise<LockPage> {
    return this.#conn.whenReady(async () => {
      try {
        const page = await scanNames(this.#redis, this.#keys, req);
        const records = await Promise.all(page.names.map((name) => this.#redis.lockhostStatus(this.#keys.lock(name)).then((reply) => toRecord(name, reply))));
        const locks = records.filter((r): r is LockRecord => r !== null);
        return page.cursor === undefined ? { locks } : { locks, cursor: page.cursor };
      } catch (err) {
        return this.#fail(err);
      }
    });
  }

  /**
   * Stores a leader's `value` in the lock's hash if `owner` still holds `name`, and publishes on
   * the key's release channel in the same script, so watchers re-read it (MutexStore.proclaim).
   */
  proclaim(name: string, owner: string, value: string): Promise<boolean> {
    return this.#conn.whenReady(() =>
      this.#redis
        .lockhostProclaim(this.#keys.lock(name), this.#keys.watched(name), owner, value, this.#keys.released(name))
        .then((reply) => reply === 1, this.#fail),
    );
  }

  /** Deletes the lock whoever holds it; the fence counter stays (MutexStore.forceRelease). */
  forceRelease(name: string): Promise<boolean> {
    return this.#conn.whenReady(() =>
      this.#redis
        .lockhostForceRelease(this.#keys.lock(name), this.#keys.watched(name), this.#keys.released(name), this.#keys.holderHead)
        .then(isDeleted, this.#fail),
    );
  }

  /** Stops the mutex's steps: calls made before and still waiting for their tick's batch go now (ahead of QUIT), flags stop refreshing. */
  close(): void {
    this.#closed = true;
    this.#acquires?.flush();
    this.#releases?.flush();
    this.#flags.close();
  }

  #acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return this.#acquires ? this.#acquires.add(req) : this.#acquireOne(req);
  }

  #acquireOne(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    const { name, holder, ttlMs } = req;
    return this.#redis
      .lockhostAcquire(
        this.#keys.lock(name),
        this.#keys.fence(name),
        req.owner,
        ttlMs,
        holder.plugin,
        holder.node,
        this.#hostname,
        this.#instanceId,
        this.#reclaim,
      )
      .then((reply) => this.#onAcquire(reply, ttlMs), this.#fail);
  }

  #acquireMany(reqs: readonly MutexAcquireRequest[]): Promise<(MutexAcquireResult | Error)[]> {
    const n = reqs.length;
    const args = new Array<string | number>(4 + 6 * n);
    args[0] = 2 * n;
    const head = 1 + 2 * n;
    args[head] = this.#hostname;
    args[head + 1] = this.#instanceId;
    args[head + 2] = this.#reclaim;
    for (let j = 0; j < n; j++) {
      const req = reqs[j]!;
      args[1 + 2 * j] = this.#keys.lock(req.name);
      args[2 + 2 * j] = this.#keys.fence(req.name);
      const a = head + 3 + 4 * j;
      args[a] = req.owner;
      args[a + 1] = req.ttlMs;
      args[a + 2] = req.holder.plugin;
      args[a + 3] = req.holder.node;
    }
    return this.#redis.lockhostAcquireMany(args).then((replies) => this.#perCall(replies, (reply, j) => this.#onAcquire(reply, reqs[j]!.ttlMs)), this.#fail);
  }

  #handoff(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    const { ttlMs, holder } = next;
    return this.#redis
      .lockhostHandoff(
        this.#keys.lock(name),
        this.#keys.fence(name),
        owner,
        next.owner,
        ttlMs,
        holder.plugin,
        holder.node,
        this.#hostname,
        this.#instanceId,
        this.#keys.holderHead,
      )
      .then(
        (reply) => (typeof reply === "number" && reply <= 0 ? handoffRefused(reply) : { released: "released" as const, next: this.#onAcquire(reply, ttlMs) }),
        this.#fail,
      );
  }

  #renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#redis.lockhostRenew(this.#keys.lock(name), owner, ttlMs).then(toRenewResult, this.#fail);
  }

  #release(name: string, owner: string): Promise<ReleaseResult> {
    return this.#releases ? this.#releases.add({ name, owner }) : this.#releaseOne(name, owner);
  }

  #releaseOne(name: string, owner: string): Promise<ReleaseResult> {
    return this.#redis
      .lockhostRelease(this.#keys.lock(name), this.#keys.watched(name), owner, this.#keys.released(name), this.#instanceId, this.#keys.holderHead)
      .then(toReleaseResult, this.#fail);
  }

  #releaseMany(rs: readonly Releasing[]): Promise<(ReleaseResult | Error)[]> {
    const n = rs.length;
    const args = new Array<string | number>(3 + 4 * n);
    args[0] = 2 * n;
    const head = 1 + 2 * n;
    args[head] = this.#instanceId;
    args[head + 1] = this.#keys.holderHead;
    for (let j = 0; j < n; j++) {
      const { name, owner } = rs[j]!;
      args[1 + 2 * j] = this.#keys.lock(name);
      args[2 + 2 * j] = this.#keys.watched(name);
      args[head + 2 + 2 * j] = owner;
      args[head + 3 + 2 * j] = this.#keys.released(name);
    }
    return this.#redis.lockhostReleaseMany(args).then((replies) => this.#perCall(replies, toReleaseResult), this.#fail);
  }

  /** Each call's result from a batch's replies; a string is the error of a call Redis refused on its own. */
  #perCall<R, T>(replies: readonly (R | string)[], result: (reply: R, index: number) => T): (T | Error)[] {
    return replies.map((reply, j) => (typeof reply === "string" ? this.#conn.toError(refused(reply)) : result(reply, j)));
  }

  #renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    const results = new Array<RenewResult>(reqs.length);
    const calls = renewCalls(reqs, this.#keys, this.#redis.isCluster);
    this.#countRenewCalls(calls.length);
    const sent = calls.map((call) =>
      this.#redis.lockhostRenewMany(call.args).then((replies) => {
        const { indexes } = call;
        for (let j = 0; j < indexes.length; j++) results[indexes[j]!] = toRenewResult(replies[j]!);
      }),
    );
    return Promise.all(sent).then(() => results, this.#fail);
  }

  #onAcquire(reply: AcquireReply, ttlMs: number): MutexAcquireResult {
    if (typeof reply === "number") return acquiredOrNot(reply, ttlMs);
    if (reply.length > 3) {
      const [fence, , , oldFence, redisKey, node] = reply as Extract<AcquireReply, { length: 6 }>;
      // The earlier holder may still be running (a paused process, not a dead one): its fence
      // is now stale, which is exactly what a protected resource must be told to reject.
      this.#log.warn(
        { redisKey, node, oldFence, fence },
        `reclaimed lock ${redisKey} left by an earlier process of node ${node}: fence ${oldFence} -> ${fence}`,
      );
    }
    return { acquired: true, fence: reply[0], acquiredAtMs: reply[1], expiresAtMs: reply[2] };
  }

  readonly #fail = (err: unknown): never => {
    throw this.#conn.toError(err);
  };
}

function toRecord(name: string, reply: StatusReply): LockRecord | null {
  if (reply === NOT_FOUND) return null;
  const [owner, fence, plugin, node, host, acquiredAt, expiresAt, ttl, pttl, proclaimed] = reply;
  const holder: Holder = { plugin, node, hostname: host };
  const acquiredAtMs = Number(acquiredAt);
  const expiresAtMs = Number(expiresAt);
  // PTTL is -1 only for a key someone stripped of its TTL by hand; report no lease left.
  const ttlRemainingMs = Math.max(0, pttl);
  return {
    name,
    owner,
    fence: Number(fence),
    holder,
    acquiredAtMs,
    expiresAtMs,
    ttlMs: leaseTtl(ttl === "" ? undefined : Number(ttl), ttlRemainingMs, expiresAtMs - acquiredAtMs),
    ttlRemainingMs,
    ...(proclaimed?.[0] !== undefined && { value: proclaimed[0] }),
  };
}

/**
 * The TTL status reports: the recorded one, kept within what is certainly true of any lease
 * (at least what is left of it, at most `expires_at - acquired_at`, which adds the lock's age
 * at its last renewal), so a record an older version left half-updated (its renew did not
 * write `ttl_ms`) still gives a possible TTL. A lock an older version took has no `ttl_ms`:
 * then the remaining lease (PTTL), the lower bound, since restoring with a shorter TTL renews
 * sooner than needed while a longer one could hold the lock far past its holder's intent.
 * Never below 1 ms. The first renew by this version records the field.
 */
function leaseTtl(recorded: number | undefined, remainingMs: number, upToMs: number): number {
  const ttl = recorded !== undefined && Number.isSafeInteger(recorded) ? recorded : remainingMs;
  return Math.max(1, remainingMs, Math.min(ttl, upToMs));
}
