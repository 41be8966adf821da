// The Redis backend: a single-node Redlock variant. Each LockBackend step is one Lua script
// (scripts.ts) on one connection (client.ts) to one server or, with cluster = true, to the
// Redis Cluster node that owns the lock's slot, over keys that Redis Cluster keeps in one slot
// per lock name (keys.ts). This file maps steps to scripts and replies to results. On the
// lock path (acquire, renew, release while connected): one EVALSHA per call, reply handlers
// bound once, no per-call closures, shared results for the outcomes that carry no data.
import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Logger } from "pino";
import type { RedisConfig } from "../../../host/config/types.js";
import { LockhostError } from "../../../host/errors.js";
import type {
  AcquireRequest,
  AcquireResult,
  Holder,
  LockBackend,
  LockRecord,
  ReleaseResult,
  RenewResult,
} from "../../../host/locking/backend.js";
import { RedisConnection } from "./client.js";
import type { LockClient } from "./connect.js";
import { KeyLayout } from "./keys.js";
import {
  DELETED, MISMATCH, NOT_FOUND,
  type AcquireReply, type ReleaseReply, type RenewReply, type StatusReply,
} from "./scripts.js";

// Results that carry nothing per call are shared, frozen, so the lock path allocates none.
const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });
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
export class RedisBackend implements LockBackend {
  /** Always "redis". */
  readonly kind = "redis";
  /** Always true: every host on the same server (or cluster) and key prefix shares these locks. */
  readonly distributed = true;
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
  /** Set by close(): the client may still say "ready" while QUIT is under way. */
  #closed = false;

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
  }

  /** Takes `req.key` if it is free, with the next fence (LockBackend.acquire). */
  acquire(req: AcquireRequest): Promise<AcquireResult> {
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

  /** Deletes the lock if `owner` still holds `key` (LockBackend.release). */
  release(key: string, owner: string): Promise<ReleaseResult> {
    if (this.#redis.status !== "ready" || this.#closed) return this.#conn.whenReady(() => this.#release(key, owner));
    return this.#release(key, owner);
  }

  /** The live holder of `key`, or null (LockBackend.status); the holder includes the hostname. */
  status(key: string): Promise<LockRecord | null> {
    return this.#conn.whenReady(() =>
      this.#redis.lockhostStatus(this.#keys.lock(key)).then((reply) => toRecord(key, reply), this.#fail),
    );
  }

  /** Deletes the lock whoever holds it; the fence counter stays (LockBackend.forceRelease). */
  forceRelease(key: string): Promise<boolean> {
    return this.#conn.whenReady(() => this.#redis.lockhostForceRelease(this.#keys.lock(key)).then(isDeleted, this.#fail));
  }

  /** Quits the connection (bounded by commandTimeoutMs even when Redis is down). Locks stay until their TTL. */
  close(): Promise<void> {
    this.#closed = true;
    return this.#conn.close();
  }

  #acquire(req: AcquireRequest): Promise<AcquireResult> {
    const { key, holder } = req;
    return this.#redis
      .lockhostAcquire(
        this.#keys.lock(key), this.#keys.fence(key), req.owner, req.ttlMs,
        holder.plugin, holder.node, this.#hostname, this.instanceId, this.#reclaim,
      )
      .then(this.#onAcquire, this.#fail);
  }

  #renew(key: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#redis.lockhostRenew(this.#keys.lock(key), owner, ttlMs).then(toRenewResult, this.#fail);
  }

  #release(key: string, owner: string): Promise<ReleaseResult> {
    return this.#redis.lockhostRelease(this.#keys.lock(key), owner).then(toReleaseResult, this.#fail);
  }

  readonly #onAcquire = (reply: AcquireReply): AcquireResult => {
    if (typeof reply === "number") return NOT_ACQUIRED;
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
  };

  readonly #fail = (err: unknown): never => {
    throw this.#conn.toError(err);
  };
}

function toRecord(key: string, reply: StatusReply): LockRecord | null {
  if (reply === NOT_FOUND) return null;
  const [owner, fence, plugin, node, host, acquiredAt, expiresAt, pttl] = reply;
  const holder: Holder = { plugin, node, hostname: host };
  return {
    key,
    owner,
    fence: Number(fence),
    holder,
    acquiredAtMs: Number(acquiredAt),
    expiresAtMs: Number(expiresAt),
    // PTTL is -1 only for a key someone stripped of its TTL by hand; report no lease left.
    ttlRemainingMs: Math.max(0, pttl),
  };
}

export { KeyLayout, hashTag } from "./keys.js";
