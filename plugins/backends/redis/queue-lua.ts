// The Lua scripts of the queue kinds (read/write locks, semaphores, fair mutexes: kit/steps.ts,
// queue.ts), one per step,
// registered on the client with the mutex's (mutex-lua.ts: EVALSHA, EVAL on NOSCRIPT).
//
// A queue kind's lock name has five keys, all with the name as hash tag (keys.ts QueueKeyLayout):
//   holders  ZSET  owner -> when its lease ends (server ms): pruning the ended ones is one
//                  ZRANGEBYSCORE, the earliest end (a contended reply's retryAfterMs) one ZRANGE.
//   info     HASH  `limit` and `mode` the live holders took the key with; `h:<owner>` a holder's
//                  record, JSON [mode, fence, plugin, node, hostname, instance, acquiredAt] (all
//                  strings), written once; `t:<owner>` the TTL of its current lease, which renew
//                  rewrites without touching the record.
//   queue    ZSET  owner -> arrival number: the exclusive waiters, first come first served.
//   places   ZSET  owner -> when that waiter's place lapses (server ms).
//   fence    the counter every acquisition of either mode advances; no TTL, never deleted.
//   waiters  HASH  owner -> the backend instance of a queued waiter. Every live instance keeps
//                  a subscription to its own channel (holder head + instance: loss notices),
//                  which the server drops when the host dies and its socket closes. So a place
//                  at the queue's head whose instance has no subscriber (PUBSUB NUMSUB 0) is a
//                  dead host's, and acquire drops it at once rather than when it lapses (measured
//                  before: 3.0-3.8 s of a free key nobody could take, at the default 1 s poll).
//                  Not on a cluster (NUMSUB counts one node's subscribers; a host's subscriber
//                  may be on another): there a dead waiter's place goes when it lapses.
// holders and info carry the same TTL, at least until the last lease ends, queue and places
// one until the last place lapses: a key whose holders all crashed, or whose waiters all gave
// up silently, is gone by itself. An ended lease or a lapsed place that is still stored counts
// as absent: acquire and force-release prune them first; status, renew and release only skip
// them, without writing, which keeps the renewal and release paths short.
//
// Fences are as the mutex's (mutex-lua.ts ACQUIRE): max(counter + 1, server clock in µs), so they
// never step back after a restart without persistence or a FLUSHALL.
//
// Replies are integers or arrays, never nil (see mutex-lua.ts). Release, force-release and a
// queue departure PUBLISH on the name's release channel; release by another instance and
// force-release tell each removed holder's instance on its own channel, as the mutex does.
import type { Cluster, Redis } from "ioredis";
import { defineCommands, DELETED, NOT_FOUND, type ScriptDefinition } from "./mutex-lua.js";

/**
 * Acquired: [fence, acquiredAtMs, expiresAtMs]; refused for the limit: [heldLimit]; else the
 * ms (>= 1) until the earliest live lease ends or, with no live holder (only the queue in the
 * way), until the earliest queue place lapses: a waiter retries then at the latest, so one
 * whose blocker crashed is not left to polling. NOT_FOUND only when neither is known.
 */
export type QueueAcquireReply = number | readonly [limit: number] | readonly [fence: number, acquiredAtMs: number, expiresAtMs: number];

/**
 * NOT_FOUND when the key has no live holder and no live queue place; else the server's clock
 * (ms), the live queue places, the holders' limit, then per live holder (by owner): owner,
 * expiresAt, record JSON ('' if missing), ttl ('' if missing).
 */
export type QueueStatusReply = typeof NOT_FOUND | readonly [now: number, queued: number, limit: string, ...rest: string[]];

/** The server's clock in µs and ms; KEYS[1] holders, KEYS[2] info, KEYS[3] queue, KEYS[4] places. */
const PRUNE = `
local t = redis.call('TIME')
local micros = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now = math.floor(micros / 1000)
local ended = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
if #ended > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
  for i = 1, #ended do redis.call('HDEL', KEYS[2], 'h:' .. ended[i], 't:' .. ended[i]) end
end
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now)
if #lapsed > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
  for i = 1, #lapsed do redis.call('ZREM', KEYS[3], lapsed[i]) end
end`;

/** Raises the TTL of keys a and b to `ms` when it is below (never lowers it: other entries may live longer). */
const EXTEND = `
local function extend(a, b, ms)
  local pttl = redis.call('PTTL', a)
  if pttl < ms then
    redis.call('PEXPIRE', a, ms)
    redis.call('PEXPIRE', b, ms)
  end
end`;

/**
 * KEYS: holders, info, queue, places, fence, waiters. ARGV: owner, ttlMs, mode
 * ("shared"/"exclusive"), limit, queueMs, plugin, node, hostname, instance, holder channel head
 * ('' on a cluster: no liveness check). Dead hosts' places at the queue's head go first. The order of checks is kit/steps.ts's:
 * an owner that holds the key is refused; an exclusive request needs no live holder and no
 * queue before its own place (and otherwise takes or refreshes a place when queueMs > 0); a
 * shared one needs the holders' limit, no exclusive holder, room under the limit and an empty
 * queue (writer preference).
 */
const ACQUIRE = `${PRUNE}${EXTEND}
local owner = ARGV[1]
if ARGV[10] ~= '' then
  for _ = 1, 16 do
    local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
    if not first or first == owner then break end
    local inst = redis.call('HGET', KEYS[6], first)
    if not inst then break end
    -- A server whose ACL refuses PUBSUB: every place counts as alive (places still lapse).
    local ok, subs = pcall(redis.call, 'PUBSUB', 'NUMSUB', ARGV[10] .. inst)
    if not ok or type(subs) ~= 'table' or subs[2] > 0 then break end
    redis.call('ZREM', KEYS[3], first)
    redis.call('ZREM', KEYS[4], first)
    redis.call('HDEL', KEYS[6], first)
  end
end
local function refused()
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  if not first[2] then first = redis.call('ZRANGE', KEYS[4], 0, 0, 'WITHSCORES') end
  if first[2] then return math.max(1, tonumber(first[2]) - now) end
  return ${NOT_FOUND}
end
if redis.call('ZSCORE', KEYS[1], owner) then return refused() end
local count = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[4])
local mode = ARGV[3]
if mode == 'exclusive' then
  local head = redis.call('ZRANGE', KEYS[3], 0, 0)[1]
  if count > 0 or (head and head ~= owner) then
    local queueMs = tonumber(ARGV[5])
    if queueMs > 0 then
      if not redis.call('ZSCORE', KEYS[3], owner) then
        local tail = redis.call('ZRANGE', KEYS[3], -1, -1, 'WITHSCORES')[2]
        redis.call('ZADD', KEYS[3], (tonumber(tail) or 0) + 1, owner)
      end
      redis.call('ZADD', KEYS[4], now + queueMs, owner)
      redis.call('HSET', KEYS[6], owner, ARGV[9])
      extend(KEYS[3], KEYS[4], queueMs)
      redis.call('PEXPIRE', KEYS[6], redis.call('PTTL', KEYS[3]))
    end
    return refused()
  end
  if head then
    redis.call('ZREM', KEYS[3], owner)
    redis.call('ZREM', KEYS[4], owner)
    redis.call('HDEL', KEYS[6], owner)
  end
  limit = 0
else
  if count > 0 then
    local held = redis.call('HMGET', KEYS[2], 'limit', 'mode')
    local heldLimit = tonumber(held[1]) or 0
    if heldLimit ~= limit then return {heldLimit} end
    if held[2] == 'exclusive' or (limit > 0 and count >= limit) then return refused() end
  end
  if redis.call('EXISTS', KEYS[3]) == 1 then return refused() end
end
local fence = math.max(tonumber(redis.call('GET', KEYS[5]) or '0') + 1, micros)
local fenceText = string.format('%.0f', fence)
redis.call('SET', KEYS[5], fenceText)
local ttl = tonumber(ARGV[2])
local expires = now + ttl
redis.call('ZADD', KEYS[1], expires, owner)
if count == 0 then redis.call('HSET', KEYS[2], 'limit', limit, 'mode', mode) end
redis.call('HSET', KEYS[2], 'h:' .. owner,
  cjson.encode({mode, fenceText, ARGV[6], ARGV[7], ARGV[8], ARGV[9], string.format('%.0f', now)}), 't:' .. owner, ARGV[2])
extend(KEYS[1], KEYS[2], ttl)
return {fence, now, expires}`;

/**
 * KEYS: holders and info of each request, in pairs. ARGV: owner and ttlMs of each. One reply
 * per request: the new expiresAtMs, or NOT_FOUND (no live hold: ended leases are skipped, not
 * pruned, so a renewal batch writes only what it renews).
 */
const RENEW_MANY = `${EXTEND}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #ARGV / 2 do
  local holders, info, owner, ttlText = KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i - 1], ARGV[2 * i]
  local score = redis.call('ZSCORE', holders, owner)
  if not score or tonumber(score) <= now then
    out[i] = ${NOT_FOUND}
  else
    local ttl = tonumber(ttlText)
    redis.call('ZADD', holders, now + ttl, owner)
    redis.call('HSET', info, 't:' .. owner, ttlText)
    extend(holders, info, ttl)
    out[i] = now + ttl
  end
end
return out`;

/**
 * KEYS: holders, info. ARGV: owner, release channel, releaser's instance, holder channel head.
 * DELETED or NOT_FOUND (also for a lease that ended). Prunes nothing: the
 * release path stays short (measured: pruning was a third of its server time), and whatever
 * ended is skipped by every reader and pruned by the next acquire. The keys' TTL stays (at
 * least the last lease's end); info goes with the last holder.
 */
const RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local owner = ARGV[1]
local score = redis.call('ZSCORE', KEYS[1], owner)
if not score or tonumber(score) <= now then return ${NOT_FOUND} end
local record = redis.call('HGET', KEYS[2], 'h:' .. owner)
redis.call('ZREM', KEYS[1], owner)
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('DEL', KEYS[2])
else
  redis.call('HDEL', KEYS[2], 'h:' .. owner, 't:' .. owner)
end
redis.call('PUBLISH', ARGV[2], '')
if record then
  local instance = cjson.decode(record)[6]
  if instance ~= ARGV[3] then redis.call('PUBLISH', ARGV[4] .. instance, owner) end
end
return ${DELETED}`;

/** KEYS: queue, places, waiters. ARGV: owner, release channel. Wakes the watchers when a place was dropped. */
const LEAVE_QUEUE = `
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
if removed == 1 then redis.call('PUBLISH', ARGV[2], '') end
return removed`;

/** KEYS: holders, info, queue, places. Reads only (see QueueStatusReply). */
const STATUS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local after = string.format('(%.0f', now)
local live = redis.call('ZRANGEBYSCORE', KEYS[1], after, '+inf', 'WITHSCORES')
local queued = redis.call('ZCOUNT', KEYS[4], after, '+inf')
if #live == 0 and queued == 0 then return ${NOT_FOUND} end
local out = {now, queued, '0'}
if #live > 0 then
  out[3] = redis.call('HGET', KEYS[2], 'limit') or '0'
  for i = 1, #live, 2 do
    local v = redis.call('HMGET', KEYS[2], 'h:' .. live[i], 't:' .. live[i])
    out[#out + 1] = live[i]
    out[#out + 1] = live[i + 1]
    out[#out + 1] = v[1] or ''
    out[#out + 1] = v[2] or ''
  end
end
return out`;

/**
 * KEYS: holders, info, queue, places. ARGV: release channel, holder channel head. Removes every
 * live holder, tells each one's instance, and returns how many there were. Queue and fence stay.
 */
const FORCE_RELEASE = `${PRUNE}
local owners = redis.call('ZRANGE', KEYS[1], 0, -1)
if #owners == 0 then return 0 end
for i = 1, #owners do
  local record = redis.call('HGET', KEYS[2], 'h:' .. owners[i])
  if record then redis.call('PUBLISH', ARGV[2] .. cjson.decode(record)[6], owners[i]) end
end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('PUBLISH', ARGV[1], '')
return #owners`;

/** The queue scripts as ioredis commands; see the Lua above for arguments and replies. */
export interface QueueCommands {
  lockhostQueueAcquire(
    holders: string,
    info: string,
    queue: string,
    places: string,
    fence: string,
    waiters: string,
    owner: string,
    ttlMs: number,
    mode: string,
    limit: number,
    queueMs: number,
    plugin: string,
    node: string,
    hostname: string,
    instance: string,
    holderHead: string,
  ): Promise<QueueAcquireReply>;
  /** `args`: 2n, then holders and info of each request, then owner and ttlMs of each. */
  lockhostQueueRenewMany(args: readonly (string | number)[]): Promise<readonly number[]>;
  lockhostQueueRelease(holders: string, info: string, owner: string, channel: string, instance: string, holderHead: string): Promise<number>;
  lockhostQueueLeaveQueue(queue: string, places: string, waiters: string, owner: string, channel: string): Promise<number>;
  lockhostQueueStatus(holders: string, info: string, queue: string, places: string): Promise<QueueStatusReply>;
  lockhostQueueForceRelease(holders: string, info: string, queue: string, places: string, channel: string, holderHead: string): Promise<number>;
}

const DEFINITIONS: Record<keyof QueueCommands, ScriptDefinition> = {
  lockhostQueueAcquire: { lua: ACQUIRE, numberOfKeys: 6 },
  lockhostQueueRenewMany: { lua: RENEW_MANY },
  lockhostQueueRelease: { lua: RELEASE, numberOfKeys: 2 },
  lockhostQueueLeaveQueue: { lua: LEAVE_QUEUE, numberOfKeys: 3 },
  lockhostQueueStatus: { lua: STATUS, numberOfKeys: 4 },
  lockhostQueueForceRelease: { lua: FORCE_RELEASE, numberOfKeys: 4 },
};

/** Registers the queue scripts on `client` (as mutex-lua.ts defineLockCommands does the mutex's) and returns it, typed. */
export function defineQueueCommands<C extends Redis | Cluster>(client: C): C & QueueCommands {
  return defineCommands<C, QueueCommands>(client, DEFINITIONS);
}
