// The Redis steps of lock delegation (kit/delegation.ts): one script, GRANT, takes a lock with a
// block of fences, or marks it wanted and tells its holder's host. The record it writes is the
// mutex's own (mutex-lua.ts, field for field), so renew, release, status, force-release and the
// loss notices of mutex.ts serve a delegated lock unchanged.
//
// Fences: as the mutex's acquire, the base is the larger of the counter + 1 and the server's
// clock in µs; the counter is then set to base + block − 1, so every later grant or acquisition
// of the name gets at least base + block. When Redis loses the counter (a restart without
// persistence, a failover), a later fence comes from the clock alone: it is above every fence
// the host handed out locally as long as the host hands out at most one fence per µs since the
// grant was sent, which host/locking/delegation.ts enforces.
//
// Wanted: a grant that finds the key held by another instance sets the wanted mark (a small key with
// a TTL, holding the requester's instance id) and publishes on the wanted channel, which the
// delegating host watches. While another instance's mark lasts, a grant of the free key is
// refused: the host that gave the key up for the marking one cannot take it straight back.
import type { Cluster, Redis } from "ioredis";
import type { DelegatedGrant, DelegationSteps, MutexAcquireResult, ReleaseWatch } from "../../../kit/index.js";
import type { RedisConnection } from "./client.js";
import { hashTag, type KeyLayout } from "./keys.js";
import { defineCommands, type ScriptDefinition } from "./mutex-lua.js";
import type { ReleaseWatcher } from "./watch.js";

/**
 * KEYS: lock, fence, wanted mark. ARGV: owner, ttlMs, plugin, node, hostname, instance, block,
 * from ('' for none), wanted channel, wantedMs. `{fence, acquiredAtMs, expiresAtMs}`, or
 * `-1 - remaining` ms (contended: the holder's lease, or another instance's wanted mark).
 */
const GRANT = `
local record = redis.call('HMGET', KEYS[1], 'owner', 'instance')
local held = record[1]
if held and held ~= ARGV[8] then
  -- Marked only by another instance (this one's own callers queue in its own line), and only
  -- for a waiter (wantedMs 0: a try, which does not come back for it).
  if record[2] ~= ARGV[6] and ARGV[10] ~= '0' then
    redis.call('SET', KEYS[3], ARGV[6], 'PX', ARGV[10])
    redis.call('PUBLISH', ARGV[9], ARGV[6])
  end
  return -1 - redis.call('PTTL', KEYS[1])
end
local mark = redis.call('GET', KEYS[3])
if mark and mark ~= ARGV[6] and not held then return -1 - redis.call('PTTL', KEYS[3]) end
local last = redis.call('GET', KEYS[2])
local counter = last and tonumber(last)
if last and not counter then return redis.error_reply('ERR fence counter ' .. KEYS[2] .. ' is not a number') end
if mark == ARGV[6] then redis.call('DEL', KEYS[3]) end
local t = redis.call('TIME')
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fence = micros
if counter and counter >= micros then fence = counter + 1 end
redis.call('SET', KEYS[2], string.format('%.0f', fence + tonumber(ARGV[7]) - 1))
if held then redis.call('DEL', KEYS[1]) end
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'fence', string.format('%.0f', fence), 'plugin', ARGV[3], 'node', ARGV[4],
  'hostname', ARGV[5], 'instance', ARGV[6], 'acquired_at', now, 'expires_at', expires, 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {fence, now, expires}`;

type GrantReply = number | readonly [fence: number, acquiredAtMs: number, expiresAtMs: number];

interface DelegationCommands {
  lockhostGrant(
    lockKey: string,
    fenceKey: string,
    wantedKey: string,
    owner: string,
    ttlMs: number,
    plugin: string,
    node: string,
    hostname: string,
    instance: string,
    block: number,
    from: string,
    channel: string,
    wantedMs: number,
  ): Promise<GrantReply>;
}

const DEFINITIONS: Record<keyof DelegationCommands, ScriptDefinition> = { lockhostGrant: { lua: GRANT, numberOfKeys: 3 } };

/** What the delegation steps borrow from their RedisBackend. */
export interface RedisDelegationParts {
  readonly conn: RedisConnection;
  readonly keys: KeyLayout;
  readonly watcher: ReleaseWatcher;
  readonly hostname: string;
  readonly instanceId: string;
}

/** Redis's DelegationSteps (kit/delegation.ts). */
export class RedisDelegation implements DelegationSteps {
  readonly #conn: RedisConnection;
  readonly #redis: (Redis | Cluster) & DelegationCommands;
  readonly #keys: KeyLayout;
  readonly #watcher: ReleaseWatcher;
  readonly #hostname: string;
  readonly #instanceId: string;

  constructor(parts: RedisDelegationParts) {
    this.#conn = parts.conn;
    this.#redis = defineCommands<Redis | Cluster, DelegationCommands>(parts.conn.redis, DEFINITIONS);
    this.#keys = parts.keys;
    this.#watcher = parts.watcher;
    this.#hostname = parts.hostname;
    this.#instanceId = parts.instanceId;
  }

  grant(req: DelegatedGrant): Promise<MutexAcquireResult> {
    const { name, holder, ttlMs } = req;
    return this.#conn.whenReady(() =>
      this.#redis
        .lockhostGrant(
          this.#keys.lock(name),
          this.#keys.fence(name),
          this.#wantedKey(name),
          req.owner,
          ttlMs,
          holder.plugin,
          holder.node,
          this.#hostname,
          this.#instanceId,
          req.block,
          req.from ?? "",
          this.#channel(name),
          req.wantedMs,
        )
        .then(toResult, this.#fail),
    );
  }

  wanted(name: string, listener: () => void): ReleaseWatch {
    return this.#watcher.watch(this.#channel(name), listener);
  }

  /** The wanted mark of `name` (same hash tag as its lock). */
  #wantedKey(name: string): string {
    return `${this.#keys.prefix}wanted:{${hashTag(name)}}`;
  }

  /** The channel a grant that found `name` held publishes on. */
  #channel(name: string): string {
    return `${this.#keys.prefix}wanted-notice:{${hashTag(name)}}`;
  }

  readonly #fail = (err: unknown): never => {
    throw this.#conn.toError(err);
  };
}

function toResult(reply: GrantReply): MutexAcquireResult {
  if (typeof reply === "number") return reply < 0 ? { acquired: false, retryAfterMs: -1 - reply } : { acquired: false };
  return { acquired: true, fence: reply[0], acquiredAtMs: reply[1], expiresAtMs: reply[2] };
}
