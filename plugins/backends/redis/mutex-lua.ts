// The mutex's Lua scripts (one per MutexStore step of mutex.ts, and the watched flag's of
// watch.ts), and their typed ioredis commands; queue-lua.ts registers the queue kinds' the same
// way (defineCommands). Each step is one script so it is atomic on the server and costs one
// round trip. ioredis sends EVALSHA and falls back to EVAL on NOSCRIPT (a restarted or SCRIPT
// FLUSHed server), per connection.
//
// The lock record is a hash with a TTL: owner, fence, plugin, node, hostname, instance,
// acquired_at, expires_at, ttl_ms (and value, a leader's proclamation). Renew and release
// compare one field (owner) without parsing, status reads the fields it shows, and an operator
// can read a lock with HGETALL. The layout is the one every earlier version wrote and reads,
// field for field, so hosts of this and earlier versions can share a server during a rolling
// upgrade: each sees the other's locks as held, can status, release by owner, force-release and
// reclaim them (README, Redis: "Rolling upgrade"). A packed string with SET NX PX measured 1.6 µs
// of server time per try+release cheaper (7.1 vs 8.7 µs, below), but an earlier version's
// acquire with reclaimOwnLocks, its status and its listing fail on a string key (WRONGTYPE)
// instead of treating it as held, and a string under another key name is not seen at all.
// The fence is stored in the record too (the counter holds the same number while the lock
// lives) so that one read of one key shows the whole lock. `ttl_ms` is the TTL the current
// lease was set with (acquire, then every renew, which may pass another): `expires_at -
// acquired_at` is not it once a lock was renewed, since acquired_at never moves. Locks written
// before this field existed lack it (see toRecord in mutex.ts for what status reports then).
//
// What the acquire script does, and why (measured: server µs per try+release pair, one pair at
// a time on a private Redis, INFO commandstats, 9 interleaved rounds, medians: before 9.7, now
// 8.7, of which the nine-field HSET 1.8 and the fence counter 1.0; empty scripts 2.0; raw SET NX
// PX + compare-and-delete ~2.2):
// HSETNX of the owner is the first command, both the test and the claim, so an uncontended
// acquire reads no PTTL first (a contended one reads it after, for retryAfterMs); the times and
// the fence are the digits of TIME, never string.format (only a fence taken from the counter,
// a clock behind it, is formatted); the usual reply is one integer, the fence (mutex.ts derives
// acquiredAt and expiresAt from it, see AcquireReply).
//
// Times come from the server's TIME inside the script, never from the host: the lease must
// end by the clock that expires the key. Scripts that call TIME and then write need effects
// replication, the default since Redis 5 (the oldest version this backend supports).
//
// Replies are integers wherever possible (the cheapest reply to parse) and never nil: Lua's
// false turns into a different reply type depending on RESP2 or RESP3.
//
// Acquire and release have a batch form besides (ACQUIRE_MANY, RELEASE_MANY): the calls of one
// tick in one script run (batch.ts says what that buys). Each runs the same Lua function
// as the single form, once per lock, so the two cannot drift apart.
//
// Release, force-release and proclaim PUBLISH on the lock's release channel (keys.ts) in the
// same script, so a watcher on any host hears of it exactly when it happened (watch.ts), but
// only when someone watches: every watch flags the name (keys.ts watched: a small key with a
// TTL its watchers refresh, watch.ts WatchFlags), and the scripts publish only while the flag exists.
// The flag is set before a watch is ready, and a waiter tries once more after that, so no
// release between its failed attempt and its flag goes unnoticed (watch.ts WatchFlags). PUBLISH is not a
// key access: on a cluster it is broadcast to every node, which an unwatched release now skips.
import type { Cluster, Redis } from "ioredis";

/** Integer replies for "no lock" and "another owner's lock" (renew and release). */
export const NOT_FOUND = -1;
/** See NOT_FOUND. */
export const MISMATCH = -2;
/** release's and forceRelease's reply when a lock was deleted. */
export const DELETED = 1;

/**
 * A number: > 0, acquired, and the fence is the server's clock in µs (the usual case), so
 * acquiredAtMs is the fence's whole ms and expiresAtMs that + ttlMs (mutex.ts acquiredOrNot); <= 0,
 * contended, `-1 - PTTL`: the holder's remaining lease is `-1 - reply` ms, and 0 is a lock
 * someone stripped of its TTL (PTTL -1). An array: acquired with a fence from the counter (the
 * server's clock was behind it), `{fence, acquiredAtMs, expiresAtMs}`, plus `oldFence, lockKey,
 * node` when a stale lock was reclaimed.
 */
export type AcquireReply =
  | number
  | readonly [fence: number, acquiredAtMs: number, expiresAtMs: number]
  | readonly [fence: number, acquiredAtMs: number, expiresAtMs: number, oldFence: number, lockKey: string, node: string];

/** The new expiresAtMs (> 0), NOT_FOUND or MISMATCH. */
export type RenewReply = number;

/** DELETED, NOT_FOUND or MISMATCH. */
export type ReleaseReply = number;

/** One RenewReply per lock, in KEYS order. */
export type RenewManyReply = readonly RenewReply[];

/** NOT_FOUND, or the record: hash fields as strings ('' for a missing one), then the PTTL. */
export type StatusReply =
  | typeof NOT_FOUND
  | readonly [
      owner: string,
      fence: string,
      plugin: string,
      node: string,
      hostname: string,
      acquiredAt: string,
      expiresAt: string,
      ttlMs: string,
      pttl: number,
      /** [value] when the holder proclaimed one, else []; absent from an earlier version's script. */
      value?: readonly string[],
    ];

/** Shared by renew and renewMany: the server's clock in whole ms. */
const NOW_MS = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * One acquisition, as a Lua function that ACQUIRE calls once and ACQUIRE_MANY once per lock.
 * HSETNX of the owner field tests and claims the key in one command: 1, the key was free (or an
 * expired one, which Redis deletes on access) and now has this owner; 0, it is held, and PTTL
 * then says for how long. Nothing can fail after the claim except reading the fence counter (a
 * key of another type, or not a number), so that read is a pcall, and on failure the claim is
 * undone (DEL) and the error returned, never leaving a lock without a TTL.
 * Reclaim: a lock left by an earlier process of the same node (same node name, another
 * instance id) is taken over at once instead of waiting for its TTL; the new fence fences it.
 *
 * The fence is the larger of the counter + 1 and the server's clock in microseconds, so it
 * exceeds every fence issued before even when the counter is gone or behind: a restart without
 * persistence, a FLUSHALL, a failover to a replica that had not caught up. That holds as long
 * as the server's clock never runs backwards (across servers: a promoted replica's clock is not
 * behind the old master's by more than the time since the last acquisition of the key), and
 * each acquisition takes at least a microsecond of server time, which any script run does.
 * The clock is read once per script run (the first acquisition that needs it): the locks of one
 * batch are other names, and the counter + 1 keeps a name's fences apart anyway. Its digits are
 * the fence's and the record's text as they are (seconds, then microseconds padded to six):
 * Lua would print a number this large in exponent form, and string.format costs more. Only a
 * fence from the counter (the clock behind it) is formatted, with %.0f.
 * Fences stay below 2^53 (a JS number, an i64) until the year 2255.
 */
const ACQUIRE_STEP = `
local micros, microsText, nowText
local function clock()
  if not micros then
    local t = redis.call('TIME')
    local us = t[2]
    if #us < 6 then us = string.rep('0', 6 - #us) .. us end
    microsText = t[1] .. us
    nowText = t[1] .. string.sub(us, 1, 3)
    micros = tonumber(microsText)
  end
end
local function acquire(lockKey, fenceKey, owner, ttlText, plugin, node, hostname, instance, reclaim)
  local claimed = redis.call('HSETNX', lockKey, 'owner', owner) == 1
  local reclaimed
  if not claimed then
    local pttl = redis.call('PTTL', lockKey)
    if reclaim ~= '1' then return -1 - pttl end
    local held = redis.call('HMGET', lockKey, 'node', 'instance', 'fence')
    if held[1] ~= node or held[2] == instance then return -1 - pttl end
    reclaimed = held
  end
  local last = redis.pcall('GET', fenceKey)
  local counter = last and tonumber(last)
  if type(last) == 'table' or (last and not counter) then
    if claimed then redis.call('DEL', lockKey) end
    if type(last) == 'table' then return last end
    return redis.error_reply('ERR fence counter ' .. fenceKey .. ' is not a number')
  end
  clock()
  local fence, fenceText = micros, microsText
  if counter and counter >= micros then
    fence = counter + 1
    fenceText = string.format('%.0f', fence)
  end
  redis.call('SET', fenceKey, fenceText)
  -- The earlier process's proclamation is not the new holder's (leader election).
  if reclaimed then redis.call('HDEL', lockKey, 'value') end
  local now = tonumber(nowText)
  local expires = now + tonumber(ttlText)
  redis.call('HSET', lockKey, 'owner', owner, 'fence', fenceText, 'plugin', plugin, 'node', node,
    'hostname', hostname, 'instance', instance, 'acquired_at', nowText, 'expires_at', expires, 'ttl_ms', ttlText)
  redis.call('PEXPIRE', lockKey, ttlText)
  if reclaimed then
    return {fence, now, expires, tonumber(reclaimed[3]) or 0, lockKey, reclaimed[1]}
  end
  if fence == micros then return fence end
  return {fence, now, expires}
end`;

/** KEYS: lock, fence. ARGV: owner, ttlMs, plugin, node, hostname, instance, reclaim ("1"/"0"). */
const ACQUIRE = `${ACQUIRE_STEP}
return acquire(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])`;

/**
 * A call of a batch that failed on its own (a key of the wrong type...): its error message, as
 * a string reply, so the others of the batch still get theirs. Errors raised by redis.call are
 * tables with an `err` field, and so are the ones acquire returns (a pcall's). `settle` turns a
 * pcall of a step into the batch's reply for it.
 */
const FAILED = `
local function failed(e)
  if type(e) == 'table' and e.err then return e.err end
  return tostring(e)
end
local function settle(ok, reply)
  if not ok or (type(reply) == 'table' and reply.err) then return failed(reply) end
  return reply
end`;

/**
 * n acquisitions in one script run (the calls of one tick: batch.ts). KEYS: lock and
 * fence of each. ARGV: hostname, instance, reclaim, then owner, ttlMs, plugin and node of
 * each, in KEYS order. Per lock, in order: an ACQUIRE reply, or an error message (a string).
 */
const ACQUIRE_MANY = `${ACQUIRE_STEP}${FAILED}
local out = {}
for i = 1, #KEYS / 2 do
  local a = 4 * i
  out[i] = settle(pcall(acquire, KEYS[2 * i - 1], KEYS[2 * i], ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[1], ARGV[2], ARGV[3]))
end
return out`;

/** KEYS: lock. ARGV: owner, ttlMs. */
const RENEW = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return ${NOT_FOUND} end
if owner ~= ARGV[1] then return ${MISMATCH} end
${NOW_MS}
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'expires_at', expires, 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return expires`;

/**
 * One release, as a Lua function that RELEASE calls once and RELEASE_MANY once per lock. The
 * fence counter is another key and stays. The release channel hears of it only while the
 * name's watched flag exists (someone waits or observes). Released by another instance than
 * the one that took it (restore by owner token): that instance is told on its own channel,
 * with the owner.
 */
const RELEASE_STEP = `
local function release(lockKey, watchedKey, owner, channel, instance, holderHead)
  local held = redis.call('HMGET', lockKey, 'owner', 'instance')
  local heldOwner = held[1]
  if not heldOwner then return ${NOT_FOUND} end
  if heldOwner ~= owner then return ${MISMATCH} end
  redis.call('DEL', lockKey)
  if redis.call('EXISTS', watchedKey) == 1 then redis.call('PUBLISH', channel, '') end
  if held[2] and held[2] ~= instance then redis.call('PUBLISH', holderHead .. held[2], owner) end
  return ${DELETED}
end`;

/** KEYS: lock, watched flag. ARGV: owner, release channel, releaser's instance id, holder channel head. */
const RELEASE = `${RELEASE_STEP}
return release(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4])`;

/**
 * n releases in one script run (batch.ts). KEYS: lock and watched flag of each. ARGV:
 * releaser's instance id, holder channel head, then owner and release channel of each, in KEYS
 * order. Per lock, in order: a RELEASE reply, or an error message (a string).
 */
const RELEASE_MANY = `${RELEASE_STEP}${FAILED}
local out = {}
for i = 1, #KEYS / 2 do
  out[i] = settle(pcall(release, KEYS[2 * i - 1], KEYS[2 * i], ARGV[2 * i + 1], ARGV[2 * i + 2], ARGV[1], ARGV[2]))
end
return out`;

/**
 * KEYS: lock, fence. ARGV: owner, next owner, ttlMs, plugin, node, hostname, instance, holder
 * channel head. A handoff (KindSteps.handoff): releases `owner`'s lock and takes it for the next
 * owner in one script, so the key is never free in between and its watchers are not told (it
 * was not free): nothing is published on its release channel, and the holder's instance hears
 * of it only when another instance took it, as release tells it. The fence counter is checked
 * before anything changes, so the acquisition after the DEL cannot fail: it claims the key
 * (HSETNX on a deleted key), with a fence above the released one. NOT_FOUND / MISMATCH (nothing
 * changed), else an ACQUIRE reply for the next owner.
 */
const HANDOFF = `${ACQUIRE_STEP}
local held = redis.call('HMGET', KEYS[1], 'owner', 'instance')
if not held[1] then return ${NOT_FOUND} end
if held[1] ~= ARGV[1] then return ${MISMATCH} end
local last = redis.call('GET', KEYS[2])
if last and not tonumber(last) then return redis.error_reply('ERR fence counter ' .. KEYS[2] .. ' is not a number') end
if held[2] and held[2] ~= ARGV[7] then redis.call('PUBLISH', ARGV[8] .. held[2], ARGV[1]) end
redis.call('DEL', KEYS[1])
return acquire(KEYS[1], KEYS[2], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7], '0')`;

/**
 * KEYS: n locks. ARGV: owner and ttlMs of each, in KEYS order. RENEW for each lock, against
 * one reading of the clock, in one round trip; one reply per lock.
 */
const RENEW_MANY = `${NOW_MS}
local out = {}
for i = 1, #KEYS do
  local owner = redis.call('HGET', KEYS[i], 'owner')
  if not owner then
    out[i] = ${NOT_FOUND}
  elseif owner ~= ARGV[2 * i - 1] then
    out[i] = ${MISMATCH}
  else
    local ttl = ARGV[2 * i]
    local expires = now + tonumber(ttl)
    redis.call('HSET', KEYS[i], 'expires_at', expires, 'ttl_ms', ttl)
    redis.call('PEXPIRE', KEYS[i], ttl)
    out[i] = expires
  end
end
return out`;

/** KEYS: lock. PTTL in the same script, so the record and its remaining lease agree. */
const STATUS = `
local v = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'plugin', 'node', 'hostname', 'acquired_at', 'expires_at', 'ttl_ms', 'value')
if not v[1] then return ${NOT_FOUND} end
return {v[1], v[2], v[3] or '', v[4] or '', v[5] or '', v[6] or '0', v[7] or '0', v[8] or '', redis.call('PTTL', KEYS[1]), v[9] and {v[9]} or {}}`;

/**
 * KEYS: lock, watched flag. ARGV: owner, value, release channel. Leader election's
 * proclamation: the value goes into the record only while `owner` holds it, and the key's
 * release channel hears of it (an empty message, as a release sends) while anyone watches, so
 * observers re-read the record: a new leader or a new value. 1, or NOT_FOUND / MISMATCH.
 */
const PROCLAIM = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return ${NOT_FOUND} end
if owner ~= ARGV[1] then return ${MISMATCH} end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[3], '') end
return 1`;

/**
 * KEYS: lock, watched flag. ARGV: release channel, holder channel head. Deletes whoever holds
 * it; the fence counter stays. The holder's instance is always told; watchers while any watch.
 */
const FORCE_RELEASE = `
local held = redis.call('HMGET', KEYS[1], 'owner', 'instance')
local deleted = redis.call('DEL', KEYS[1])
if deleted == 1 then
  if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PUBLISH', ARGV[1], '') end
  if held[1] and held[2] then redis.call('PUBLISH', ARGV[2] .. held[2], held[1]) end
end
return deleted`;

/**
 * KEYS: watched flags. ARGV: their TTL in ms. Sets (or refreshes) each flag: its watchers, one
 * script call per refresh (per slot on a cluster). n.
 */
const FLAG = `
for i = 1, #KEYS do redis.call('SET', KEYS[i], '1', 'PX', ARGV[1]) end
return #KEYS`;

/** The scripts as ioredis commands on a client; see the Lua above for arguments and replies. */
export interface LockCommands {
  lockhostAcquire(
    lockKey: string,
    fenceKey: string,
    owner: string,
    ttlMs: number,
    plugin: string,
    node: string,
    hostname: string,
    instance: string,
    reclaim: "1" | "0",
  ): Promise<AcquireReply>;
  /** `args`: the number of keys 2n, lock and fence key of each, hostname, instance, reclaim, then owner, ttlMs, plugin and node of each. */
  lockhostAcquireMany(args: readonly (string | number)[]): Promise<readonly (AcquireReply | string)[]>;
  lockhostRenew(lockKey: string, owner: string, ttlMs: number): Promise<RenewReply>;
  /** `args`: the number of locks n, their n keys, then owner and ttlMs of each (ioredis flattens the array). */
  lockhostRenewMany(args: readonly (string | number)[]): Promise<RenewManyReply>;
  lockhostRelease(lockKey: string, watchedKey: string, owner: string, channel: string, instance: string, holderHead: string): Promise<ReleaseReply>;
  /** `args`: the number of keys 2n, lock and watched key of each, instance, holder channel head, then owner and release channel of each. */
  lockhostReleaseMany(args: readonly (string | number)[]): Promise<readonly (ReleaseReply | string)[]>;
  lockhostHandoff(
    lockKey: string,
    fenceKey: string,
    owner: string,
    nextOwner: string,
    ttlMs: number,
    plugin: string,
    node: string,
    hostname: string,
    instance: string,
    holderHead: string,
  ): Promise<AcquireReply>;
  lockhostStatus(lockKey: string): Promise<StatusReply>;
  lockhostForceRelease(lockKey: string, watchedKey: string, channel: string, holderHead: string): Promise<number>;
  lockhostProclaim(lockKey: string, watchedKey: string, owner: string, value: string, channel: string): Promise<number>;
  /** `args`: the number of keys n, the watched keys, then their TTL in ms. */
  lockhostFlag(args: readonly (string | number)[]): Promise<number>;
}

/** numberOfKeys absent: the caller passes the count first (renewMany's varies per call). */
const DEFINITIONS: Record<keyof LockCommands, ScriptDefinition> = {
  lockhostAcquire: { lua: ACQUIRE, numberOfKeys: 2 },
  lockhostAcquireMany: { lua: ACQUIRE_MANY },
  lockhostRenew: { lua: RENEW, numberOfKeys: 1 },
  lockhostRenewMany: { lua: RENEW_MANY },
  lockhostRelease: { lua: RELEASE, numberOfKeys: 2 },
  lockhostReleaseMany: { lua: RELEASE_MANY },
  lockhostHandoff: { lua: HANDOFF, numberOfKeys: 2 },
  lockhostStatus: { lua: STATUS, numberOfKeys: 1 },
  lockhostForceRelease: { lua: FORCE_RELEASE, numberOfKeys: 2 },
  lockhostProclaim: { lua: PROCLAIM, numberOfKeys: 2 },
  lockhostFlag: { lua: FLAG },
};

/**
 * Registers the scripts on `client` once (ioredis hashes them there) and returns it, typed. On a
 * Cluster, ioredis sends each script to the node that owns the slot of its first key; every
 * script here touches only keys of one lock name, which share a slot (keys.ts), except
 * renewMany's and flag's, whose callers pass them the keys of one slot at a time.
 */
export function defineLockCommands<C extends Redis | Cluster>(client: C): C & LockCommands {
  return defineCommands<C, LockCommands>(client, DEFINITIONS);
}

/** A command's script; numberOfKeys absent: the caller passes the count first. */
export interface ScriptDefinition {
  readonly lua: string;
  readonly numberOfKeys?: number;
}

/** Registers `definitions` on `client` (EVALSHA, EVAL on NOSCRIPT) and returns it typed with them. */
export function defineCommands<C extends Redis | Cluster, T>(client: C, definitions: Record<keyof T, ScriptDefinition>): C & T {
  for (const [name, definition] of Object.entries<ScriptDefinition>(definitions)) client.defineCommand(name, definition);
  // defineCommand adds the methods at runtime; ioredis cannot type them.
  return client as C & T;
}
