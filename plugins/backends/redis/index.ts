// The Redis backend: a single-node Redlock variant, in Redis or a Redis Cluster. This file wires
// the parts: the connection (client.ts) and the subscriber with its watched flags (watch.ts),
// the mutex's steps (mutex.ts: one Lua script each, mutex-lua.ts; LockBackend.steps serves them
// through MutexSteps for the mutex and the leader kind) and the queue kinds' (queue.ts, their
// scripts in queue-lua.ts), each kind in its own key namespace (keys.ts) on the same two
// connections. It is the package entry (`lockhost/redis`).
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { RedisConfig } from "./config.js";
import { isPermanent, LockhostError, markPermanent, scrubberFor } from "../../../kit/index.js";
import type {
  ListRequest,
  LockBackend,
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
  KindSteps,
  LockKind,
} from "../../../kit/index.js";
import { LOCK_KINDS, StepsByKind } from "../../../kit/index.js";
import { createSubscriber, RECONNECTING, RedisConnection, type LockClient } from "./client.js";
import { REDIS_PERMANENT } from "./errors.js";
import { RedisDelegation } from "./delegation.js";
import { KeyLayout } from "./keys.js";
import { RedisMutex } from "./mutex.js";
import { RedisQueueSteps } from "./queue.js";
import { FLAG_REFRESH_MS, ReleaseWatcher, WatchFlags } from "./watch.js";

/** The lock name whose (absent) record ping's first check reads: any name under the prefix would do. */
const GRANT_CHECK_NAME = "lockhost-grant-check";

/**
 * Locks in Redis (ioredis), shared by every host that points at the same server (or the same
 * Redis Cluster) and key prefix. It implements LockBackend (see kit/steps.ts for each
 * step's contract); the mutex's steps are also callable on it (the MutexStore methods below,
 * which are mutex.ts's), as tests and benchmarks do. Every time it reports comes from the clock
 * of the server that holds the lock (on a cluster: the node owning its slot), in whole ms.
 *
 * Failures (server unreachable, command timeout, a refused command) reject with a
 * LockhostError BACKEND_UNAVAILABLE within about commandTimeoutMs, at once while the
 * connection is known to be down; the connection recovers by itself when the server is back.
 */
export class RedisBackend implements LockBackend, MutexStore {
  /** Always "redis". */
  readonly name = "redis";
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
  /** Lock delegation's steps (delegation.ts): grants with fence blocks, wanted notices. */
  readonly delegation: RedisDelegation;
  readonly #conn: RedisConnection;
  readonly #redis: LockClient;
  readonly #keys: KeyLayout;
  readonly #hostname = hostname();
  readonly #watcher: ReleaseWatcher;
  /** The watched flags of this backend's mutex watches (watch.ts). */
  readonly #flags: WatchFlags;
  /** The mutex's steps (mutex.ts). */
  readonly #mutex: RedisMutex;
  #renewCalls = 0;
  /**
   * Each kind's steps, made on first use: the single-record kinds from the mutex's (mutex.ts,
   * its one-key scripts, called through this class's methods below, so a caller that wraps one
   * of them on the backend wraps it for the steps too), the queue kinds in RedisQueueSteps on
   * this backend's connection and subscriber, each in its own key namespace (keys.ts
   * QueueKeyLayout).
   */
  readonly #steps: StepsByKind<RedisQueueSteps>;
  /** Whether this instance's liveness channel is confirmed subscribed (cached once it is): the sign of life its queue places rely on (queue-lua.ts). */
  #present: Promise<boolean> | undefined;

  /**
   * Connects in the background: an unreachable server fails calls, never the constructor.
   * @throws LockhostError CONFIG_INVALID for a key prefix with braces or a malformed URL.
   */
  constructor(config: RedisConfig, log: Logger) {
    this.#keys = new KeyLayout(config.keyPrefix);
    this.#conn = new RedisConnection(config, log);
    this.#redis = this.#conn.redis;
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
    const countRenewCalls = (calls: number): void => void (this.#renewCalls += calls);
    this.#mutex = new RedisMutex({
      conn: this.#conn,
      keys: this.#keys,
      log,
      watcher: this.#watcher,
      flags: this.#flags,
      hostname: this.#hostname,
      instanceId: this.instanceId,
      reclaimOwnLocks: config.reclaimOwnLocks,
      cluster: config.cluster,
      countRenewCalls,
    });
    this.delegation = new RedisDelegation({
      conn: this.#conn,
      keys: this.#keys,
      watcher: this.#watcher,
      hostname: this.#hostname,
      instanceId: this.instanceId,
    });
    this.#steps = new StepsByKind(
      this,
      (kind) =>
        new RedisQueueSteps(kind, {
          conn: this.#conn,
          keys: this.#keys,
          watcher: this.#watcher,
          hostname: this.#hostname,
          instanceId: this.instanceId,
          countRenewCalls,
          present: () => (this.#present ??= this.#confirmPresence()),
        }),
    );
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

  /** Script calls that set watched flags so far (first watches of a name, refreshes, reconnects). */
  get flagCalls(): number {
    return this.#flags.setCalls;
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

  /**
   * Quits the connection (bounded by commandTimeoutMs even when Redis is down) and drops the
   * subscriber. Locks stay until their TTL.
   */
  async close(): Promise<void> {
    // Calls made before close() and still waiting for their tick's batch go ahead of QUIT.
    this.#mutex.close();
    await Promise.all([this.#conn.close(), this.#watcher.close()]);
  }

  // The mutex's steps (mutex.ts RedisMutex, where each is documented), on the backend itself:
  // MutexSteps calls them here, as do tests and benchmarks.

  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return this.#mutex.acquire(req);
  }

  renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#mutex.renew(name, owner, ttlMs);
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#mutex.renewMany(reqs);
  }

  release(name: string, owner: string): Promise<ReleaseResult> {
    return this.#mutex.release(name, owner);
  }

  handoff(name: string, owner: string, next: MutexAcquireRequest): Promise<MutexHandoffResult> {
    return this.#mutex.handoff(name, owner, next);
  }

  status(name: string): Promise<LockRecord | null> {
    return this.#mutex.status(name);
  }

  list(req: ListRequest): Promise<LockPage> {
    return this.#mutex.list(req);
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#mutex.watch(name, listener);
  }

  proclaim(name: string, owner: string, value: string): Promise<boolean> {
    return this.#mutex.proclaim(name, owner, value);
  }

  forceRelease(name: string): Promise<boolean> {
    return this.#mutex.forceRelease(name);
  }

  readonly #fail = (err: unknown): never => {
    throw this.#conn.toError(err);
  };
}

export { KeyLayout, hashTag } from "./keys.js";

export { redisConfigSchema, redisDefaults, type RedisConfig } from "./config.js";
