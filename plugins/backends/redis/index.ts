// The Redis backend: a single-node Redlock variant. Each LockBackend step is one Lua script
// (scripts.ts) on one connection (client.ts) to one server or, with cluster = true, to the
// Redis Cluster node that owns the lock's slot, over keys that Redis Cluster keeps in one slot
// per lock name (keys.ts). This file maps steps to scripts and replies to results. On the
// lock path (acquire, renew, release while connected): one EVALSHA per call, reply handlers
// bound once (but acquire's, a closure over the TTL its reply's expiry is derived from), shared
// results for the outcomes that carry no data (a contended acquire allocates its result only to
// carry the holder's remaining lease).
// Batched renewals are cut into script calls by batch.ts; release notifications come over a
// second, subscriber connection (watcher.ts), published only for names someone watches
// (watched.ts). The mutex's steps are this class's methods
// (MutexSteps serves them, and the leader kind's, through LockBackend.steps); the kinds with a
// queue (read/write locks, semaphores, fair mutexes) are queue.ts, with their own scripts and
// keys on the same two connections.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { RedisConfig } from "./config.js";
import { isPermanent, LockhostError, markPermanent, scrubberFor, TLS_REFUSED_PATTERN } from "../../../kit/index.js";

/** The lock name whose (absent) record ping's first check reads: any name under the prefix would do. */
const GRANT_CHECK_NAME = "lockhost-grant-check";

/**
 * Connection errors that retrying cannot cure: credentials refused, a TLS handshake refused (a
 * certificate does not fix itself); not a name that does not resolve yet.
 */
const REDIS_PERMANENT = new RegExp(`WRONGPASS|NOAUTH|invalid password|invalid username|NOPERM|${TLS_REFUSED_PATTERN.source}`, "i");
import type {
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexHandoffResult,
  Holder,
  ListRequest,
  LockBackend,
  LockPage,
  LockRecord,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
  KindSteps,
  LockKind,
  MutexStore,
} from "../../../kit/index.js";
import { LOCK_KINDS, StepsByKind } from "../../../kit/index.js";
import { renewCalls } from "./batch.js";
import { RECONNECTING, RedisConnection } from "./client.js";
import { createSubscriber, type LockClient } from "./connect.js";
import { KeyLayout } from "./keys.js";
import { scanNames } from "./list.js";
import {
  DELETED, MISMATCH, NOT_FOUND,
  type AcquireReply, type ReleaseReply, type RenewReply, type StatusReply,
} from "./scripts.js";
import { RedisQueueSteps } from "./queue.js";
import { TickBatcher } from "./tick-batch.js";
import { ReleaseWatcher } from "./watcher.js";
import { FLAG_REFRESH_MS, WatchFlags } from "./watched.js";

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
 * The result of an acquire whose reply was one number (scripts.ts AcquireReply): > 0, acquired,
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
  readonly key: string;
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
  return Promise.reject(
    new LockhostError("INVALID_ARGUMENT", `ttlMs must be a positive integer number of milliseconds, got ${String(ttlMs)}`),
  );
}

/**
 * Locks in Redis (ioredis), shared by every host that points at the same server (or the same
 * Redis Cluster) and key prefix. Its methods implement LockBackend (see
 * host/locking/backend.ts for each step's contract); every time it reports comes from the
 * clock of the server that holds the lock (on a cluster: the node owning its slot), in whole ms.
 *
 * Failures (server unreachable, command timeout, a refused command) reject with a
 * LockhostError BACKEND_UNAVAILABLE within about commandTimeoutMs, at once while the
 * connection is known to be down; the connection recovers by itself when the server is back.
 */
export class RedisBackend implements LockBackend, MutexStore {
  /** Always "redis". */
  readonly kind = "redis";
  /** Always true: every host on the same server (or cluster) and key prefix shares these locks. */
  readonly distributed = true;
  /** Always true: a lock lasts until its key's TTL, whatever becomes of its holder. */
  readonly endsOnlyAtExpiry = true;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  /**
   * Random per backend instance, stored with each lock it takes: a lock of this node with
   * another instance id was taken by an earlier process, which reclaimOwnLocks may take over.
   */
  readonly instanceId: string = randomUUID();
  readonly #conn: RedisConnection;
  readonly #redis: LockClient;
  readonly #keys: KeyLayout;
  readonly #log: Logger;
  readonly #hostname = hostname();
  readonly #reclaim: "1" | "0";
  readonly #watcher: ReleaseWatcher;
  /** The watched flags of this backend's mutex watches (watched.ts). */
  readonly #flags: WatchFlags;
  /** Set by close(): the client may still say "ready" while QUIT is under way. */
  #closed = false;
  #renewCalls = 0;
  /**
   * Each kind's steps, made on first use: the single-record kinds from this class's mutex
   * methods (their one-key scripts), the queue kinds in RedisQueueSteps on this backend's
   * connection and subscriber, each in its own key namespace (keys.ts QueueKeyLayout).
   */
  readonly #steps = new StepsByKind(this, (kind) =>
    new RedisQueueSteps(kind, {
      conn: this.#conn,
      keys: this.#keys,
      watcher: this.#watcher,
      hostname: this.#hostname,
      instanceId: this.instanceId,
      countRenewCalls: (calls) => void (this.#renewCalls += calls),
      present: () => (this.#present ??= this.#confirmPresence()),
    }),
  );
  /** Settles once this instance's own channel is subscribed: the sign of life its queue places rely on (queue-scripts.ts). */
  /** Whether this instance's liveness channel is confirmed subscribed (cached once it is). */
  #present: Promise<boolean> | undefined;
  /**
   * Acquires and releases of one tick, sent together (tick-batch.ts); undefined on a cluster,
   * where one script may only touch keys of one slot.
   */
  readonly #acquires: TickBatcher<MutexAcquireRequest, MutexAcquireResult> | undefined;
  readonly #releases: TickBatcher<Releasing, ReleaseResult> | undefined;

  /**
   * Connects in the background: an unreachable server fails calls, never the constructor.
   * @throws LockhostError CONFIG_INVALID for a key prefix with braces or a malformed URL.
   */
  constructor(config: RedisConfig, log: Logger) {
    this.#keys = new KeyLayout(config.keyPrefix);
    this.#log = log;
    this.#reclaim = config.reclaimOwnLocks ? "1" : "0";
    this.#conn = new RedisConnection(config, log);
    this.#redis = this.#conn.redis;
    if (!config.cluster) {
      this.#releases = new TickBatcher((r) => this.#releaseOne(r.key, r.owner), (rs) => this.#releaseMany(rs));
      this.#acquires = new TickBatcher((req) => this.#acquireOne(req), (reqs) => this.#acquireMany(reqs), this.#releases);
    }
    const shown = this.#conn.url;
    this.#flags = new WatchFlags(this.#conn, this.#keys, log);
    this.#watcher = new ReleaseWatcher({
      create: () => createSubscriber(config, shown, this.#conn.tls),
      commandTimeoutMs: config.commandTimeoutMs,
      log,
      url: shown,
      scrub: scrubberFor(config.url),
      // Woken once the flags are back (or after a refresh period without: polls cover the rest).
      beforeWake: () => this.#flags.restored(FLAG_REFRESH_MS),
    });
  }

  /**
   * Script calls renewMany has sent so far: one per chunk of up to 1,000 renewals on one
   * server, one per slot (and chunk) on a cluster. The calls of one batch are sent together,
   * so they share one network round trip per connection: this counts them one by one, an
   * upper bound (for benchmarks and metrics).
   */
  get renewRoundTrips(): number {
    return this.#renewCalls;
  }

  /** Takes `req.key` if it is free, with the next fence (LockBackend.acquire). */
  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    if (!validTtl(req.ttlMs)) return ttlError(req.ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#acquire(req));
    return this.#acquire(req);
  }

  /** Sets the lease to `ttlMs` from now if `owner` still holds `key` (LockBackend.renew). */
  renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    if (!validTtl(ttlMs)) return ttlError(ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#renew(key, owner, ttlMs));
    return this.#renew(key, owner, ttlMs);
  }

  /**
   * Renews each lock as renew() would, in one round trip (LockBackend.renewMany): one script
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
   * Calls `listener` when `key` is released or force-released by any host on this server or
   * cluster, or its holder proclaims (LockBackend.watch), over a subscriber connection opened
   * on the first watch. The name is flagged as watched while the watch is open (watched.ts:
   * release, force-release and proclaim publish only then). `ready` settles once SUBSCRIBE is
   * confirmed and the flag is set, or after commandTimeoutMs if they are not. After the
   * subscriber reconnects every listener is called once (a release may have been missed
   * meanwhile). A lease that merely expires is not signalled.
   */
  watch(key: string, listener: () => void): ReleaseWatch {
    const watch = this.#watcher.watch(this.#keys.released(key), listener);
    if (this.#closed) return watch;
    const flag = this.#flags.hold(key);
    return {
      ready: Promise.all([watch.ready, flag.ready]).then(noop),
      close: () => {
        watch.close();
        flag.close();
      },
    };
  }

  /** Script calls that set watched flags so far (first watches of a name, refreshes, reconnects). */
  get flagCalls(): number {
    return this.#flags.setCalls;
  }

  /** Deletes the lock if `owner` still holds `key` (LockBackend.release). */
  release(key: string, owner: string): Promise<ReleaseResult> {
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#release(key, owner));
    return this.#release(key, owner);
  }

  /**
   * Releases `owner`'s lock on `key` and takes it for `next.owner` in one script (KindSteps.handoff):
   * one round trip, the key never free in between, nothing published on its release channel.
   * Sent at once, not with the tick's batch: a handoff is the next waiter's whole wait.
   */
  handoff(key: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    if (!validTtl(next.ttlMs)) return ttlError(next.ttlMs);
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#handoff(key, owner, next));
    return this.#handoff(key, owner, next);
  }

  /** The live holder of `key`, or null (LockBackend.status); the holder includes the hostname. */
  status(key: string): Promise<LockRecord | null> {
    return this.#conn.whenReady(() =>
      this.#redis.lockhostStatus(this.#keys.lock(key)).then((reply) => toRecord(key, reply), this.#fail),
    );
  }

  /**
   * Hears, on this instance's own channel, of its locks released or force-released by someone
   * else (LockBackend.onLost): one subscription for the whole instance, however many locks;
   * `missed` once it is subscribed again after the subscriber connection came back.
   */
  onLost(listener: (owner: string) => void, missed?: () => void): void {
    this.#watcher.watchMessages(this.#keys.holderHead + this.instanceId, listener, missed);
  }

  /** The steps of `kind` (LockBackend.steps). */
  steps(kind: LockKind): KindSteps {
    return this.#steps.get(kind);
  }

  /**
   * PING (LockBackend.ping); a refused password is permanent. Until it once passed, also the
   * status script on a name under the key prefix (a read): a user whose ACL lacks EVAL, EVALSHA
   * or the prefix's key pattern fails the host's start naming what it lacks, instead of its
   * first lock call.
   */
  ping(): Promise<void> {
    return this.#conn
      .whenReady(() => this.#redis.ping().then(() => this.#checkGrants(), this.#fail))
      .catch((err: unknown) => {
        const e = markPermanent(err, REDIS_PERMANENT);
        // Refused for good (credentials): the client's "reconnecting in the background" is no hope to offer.
        throw isPermanent(e) ? new LockhostError(e.code, e.message.replace(RECONNECTING, "retrying cannot help"), { details: e.details }) : e;
      });
  }

  /** Set once the status script ran as this user (ping). */
  #granted = false;

  async #checkGrants(): Promise<void> {
    if (this.#granted) return;
    // Twice: ioredis sends a script's first call on a connection as EVAL, every later one as EVALSHA.
    for (let i = 0; i < 2; i++) await this.#redis.lockhostStatus(this.#keys.lock(GRANT_CHECK_NAME)).catch(this.#fail);
    this.#granted = true;
  }

  /** A page of held locks: SCAN over the prefix, then each one's status (LockBackend.list). */
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
   * Stores a leader's `value` in the lock's hash if `owner` still holds `key`, and publishes on
   * the key's release channel in the same script, so watchers re-read it (LockBackend.proclaim).
   */
  proclaim(key: string, owner: string, value: string): Promise<boolean> {
    return this.#conn.whenReady(() =>
      this.#redis
        .lockhostProclaim(this.#keys.lock(key), this.#keys.watched(key), owner, value, this.#keys.released(key))
        .then((reply) => reply === 1, this.#fail),
    );
  }

  /** Deletes the lock whoever holds it; the fence counter stays (LockBackend.forceRelease). */
  forceRelease(key: string): Promise<boolean> {
    return this.#conn.whenReady(() =>
      this.#redis
        .lockhostForceRelease(this.#keys.lock(key), this.#keys.watched(key), this.#keys.released(key), this.#keys.holderHead)
        .then(isDeleted, this.#fail),
    );
  }

  /**
   * Quits the connection (bounded by commandTimeoutMs even when Redis is down) and drops the
   * subscriber. Locks stay until their TTL.
   */
  /**
   * Subscribes this instance's liveness channel (held for the instance's life: onLost subscribes
   * the same one) and confirms with the server that it is subscribed. Only a confirmed channel
   * may be recorded beside a queue place: other hosts drop a place whose channel has no
   * subscriber, so a subscription that failed (an ACL, a slow server) would cost a live waiter
   * its place at every attempt. Unconfirmed, the place is written without it (kept until it
   * lapses, as before), and the next queued attempt asks again.
   */
  async #confirmPresence(): Promise<boolean> {
    const channel = this.#keys.holderHead + this.instanceId;
    await this.#watcher.watch(channel, () => undefined).ready;
    try {
      const reply = (await this.#redis.call("PUBSUB", "NUMSUB", channel)) as [string, number | string];
      if (Number(reply[1]) > 0) return true;
    } catch {
      // Refused (an ACL without PUBSUB) or down: unconfirmed.
    }
    this.#present = undefined;
    return false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    // Calls made before close() and still waiting for their tick's batch go ahead of QUIT.
    this.#acquires?.flush();
    this.#releases?.flush();
    this.#flags.close();
    await Promise.all([this.#conn.close(), this.#watcher.close()]);
  }

  #acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return this.#acquires ? this.#acquires.add(req) : this.#acquireOne(req);
  }

  #acquireOne(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    const { key, holder, ttlMs } = req;
    return this.#redis
      .lockhostAcquire(
        this.#keys.lock(key), this.#keys.fence(key), req.owner, ttlMs,
        holder.plugin, holder.node, this.#hostname, this.instanceId, this.#reclaim,
      )
      .then((reply) => this.#onAcquire(reply, ttlMs), this.#fail);
  }

  #acquireMany(reqs: readonly MutexAcquireRequest[]): Promise<(MutexAcquireResult | Error)[]> {
    const n = reqs.length;
    const args = new Array<string | number>(4 + 6 * n);
    args[0] = 2 * n;
    const head = 1 + 2 * n;
    args[head] = this.#hostname;
    args[head + 1] = this.instanceId;
    args[head + 2] = this.#reclaim;
    for (let j = 0; j < n; j++) {
      const req = reqs[j]!;
      args[1 + 2 * j] = this.#keys.lock(req.key);
      args[2 + 2 * j] = this.#keys.fence(req.key);
      const a = head + 3 + 4 * j;
      args[a] = req.owner;
      args[a + 1] = req.ttlMs;
      args[a + 2] = req.holder.plugin;
      args[a + 3] = req.holder.node;
    }
    return this.#redis
      .lockhostAcquireMany(args)
      .then((replies) => this.#perCall(replies, (reply, j) => this.#onAcquire(reply, reqs[j]!.ttlMs)), this.#fail);
  }

  #handoff(key: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    const { ttlMs, holder } = next;
    return this.#redis
      .lockhostHandoff(
        this.#keys.lock(key), this.#keys.fence(key), owner, next.owner, ttlMs,
        holder.plugin, holder.node, this.#hostname, this.instanceId, this.#keys.holderHead,
      )
      .then((reply) => (typeof reply === "number" && reply <= 0 ? handoffRefused(reply) : { released: "released" as const, next: this.#onAcquire(reply, ttlMs) }), this.#fail);
  }

  #renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#redis.lockhostRenew(this.#keys.lock(key), owner, ttlMs).then(toRenewResult, this.#fail);
  }

  #release(key: string, owner: string): Promise<ReleaseResult> {
    return this.#releases ? this.#releases.add({ key, owner }) : this.#releaseOne(key, owner);
  }

  #releaseOne(key: string, owner: string): Promise<ReleaseResult> {
    return this.#redis
      .lockhostRelease(this.#keys.lock(key), this.#keys.watched(key), owner, this.#keys.released(key), this.instanceId, this.#keys.holderHead)
      .then(toReleaseResult, this.#fail);
  }

  #releaseMany(rs: readonly Releasing[]): Promise<(ReleaseResult | Error)[]> {
    const n = rs.length;
    const args = new Array<string | number>(3 + 4 * n);
    args[0] = 2 * n;
    const head = 1 + 2 * n;
    args[head] = this.instanceId;
    args[head + 1] = this.#keys.holderHead;
    for (let j = 0; j < n; j++) {
      const { key, owner } = rs[j]!;
      args[1 + 2 * j] = this.#keys.lock(key);
      args[2 + 2 * j] = this.#keys.watched(key);
      args[head + 2 + 2 * j] = owner;
      args[head + 3 + 2 * j] = this.#keys.released(key);
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
    this.#renewCalls += calls.length;
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

function toRecord(key: string, reply: StatusReply): LockRecord | null {
  if (reply === NOT_FOUND) return null;
  const [owner, fence, plugin, node, host, acquiredAt, expiresAt, ttl, pttl, proclaimed] = reply;
  const holder: Holder = { plugin, node, hostname: host };
  const acquiredAtMs = Number(acquiredAt);
  const expiresAtMs = Number(expiresAt);
  // PTTL is -1 only for a key someone stripped of its TTL by hand; report no lease left.
  const ttlRemainingMs = Math.max(0, pttl);
  return {
    key,
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

export { KeyLayout, hashTag } from "./keys.js";

export { redisConfigSchema, redisDefaults, type RedisConfig } from "./config.js";
