// The mutex's Lua scripts as lockhost wrote them before the lean scripts (commit 744189b,
// then in plugins/backends/redis/scripts.ts, now mutex-lua.ts), verbatim, with the reply constants filled in: what a host
// of that version runs against the same Redis during a rolling upgrade. Tests call them with
// EVAL to check that the two versions never both hold one name (test/backend-redis.test.ts).

/**
 * KEYS: lock, fence. ARGV: owner, ttlMs, plugin, node, hostname, instance, reclaim ("1"/"0").
 * Acquired: [fence, now, expires(, oldFence, lockKey, node)]; contended: the PTTL.
 */
export const V1_ACQUIRE = `
local clockMicros
local function clock()
  if not clockMicros then
    local t = redis.call('TIME')
    clockMicros = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clockMicros
end
local function acquire(lockKey, fenceKey, owner, ttlText, plugin, node, hostname, instance, reclaim)
  local reclaimed
  local pttl = redis.call('PTTL', lockKey)
  if pttl ~= -2 then
    if reclaim ~= '1' then return pttl end
    local held = redis.call('HMGET', lockKey, 'node', 'instance', 'fence')
    if held[1] ~= node or held[2] == instance then return pttl end
    reclaimed = held
    -- The earlier process's proclamation is not the new holder's (leader election).
    redis.call('HDEL', lockKey, 'value')
  end
  local micros = clock()
  local now = math.floor(micros / 1000)
  local fence = math.max(tonumber(redis.call('GET', fenceKey) or '0') + 1, micros)
  local fenceText = string.format('%.0f', fence)
  redis.call('SET', fenceKey, fenceText)
  local ttl = tonumber(ttlText)
  local expires = now + ttl
  redis.call('HSET', lockKey, 'owner', owner, 'fence', fenceText, 'plugin', plugin, 'node', node,
    'hostname', hostname, 'instance', instance, 'acquired_at', now, 'expires_at', expires, 'ttl_ms', ttlText)
  redis.call('PEXPIRE', lockKey, ttl)
  if reclaimed then
    return {fence, now, expires, tonumber(reclaimed[3]) or 0, lockKey, reclaimed[1]}
  end
  return {fence, now, expires}
end
return acquire(KEYS[1], KEYS[2], ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7])`;

/** KEYS: lock. ARGV: owner, release channel, releaser's instance id, holder channel head. 1, -1 not found, -2 mismatch. */
export const V1_RELEASE = `
local function release(lockKey, owner, channel, instance, holderHead)
  local held = redis.call('HMGET', lockKey, 'owner', 'instance')
  local heldOwner = held[1]
  if not heldOwner then return -1 end
  if heldOwner ~= owner then return -2 end
  redis.call('DEL', lockKey)
  redis.call('PUBLISH', channel, '')
  if held[2] and held[2] ~= instance then redis.call('PUBLISH', holderHead .. held[2], owner) end
  return 1
end
return release(KEYS[1], ARGV[1], ARGV[2], ARGV[3], ARGV[4])`;

/** KEYS: lock. ARGV: owner, ttlMs. The new expiresAt, -1 or -2. */
export const V1_RENEW = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return -1 end
if owner ~= ARGV[1] then return -2 end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expires = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'expires_at', expires, 'ttl_ms', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return expires`;

/** KEYS: lock. -1, or the record's fields as strings, then the PTTL and [value]. */
export const V1_STATUS = `
local v = redis.call('HMGET', KEYS[1], 'owner', 'fence', 'plugin', 'node', 'hostname', 'acquired_at', 'expires_at', 'ttl_ms', 'value')
if not v[1] then return -1 end
return {v[1], v[2], v[3] or '', v[4] or '', v[5] or '', v[6] or '0', v[7] or '0', v[8] or '', redis.call('PTTL', KEYS[1]), v[9] and {v[9]} or {}}`;

/** KEYS: lock. ARGV: release channel, holder channel head. 1 when deleted. */
export const V1_FORCE_RELEASE = `
local held = redis.call('HMGET', KEYS[1], 'owner', 'instance')
local deleted = redis.call('DEL', KEYS[1])
if deleted == 1 then
  redis.call('PUBLISH', ARGV[1], '')
  if held[1] and held[2] then redis.call('PUBLISH', ARGV[2] .. held[2], held[1]) end
end
return deleted`;

/** KEYS: lock. ARGV: owner, value, release channel. 1, -1 or -2. */
export const V1_PROCLAIM = `
local owner = redis.call('HGET', KEYS[1], 'owner')
if not owner then return -1 end
if owner ~= ARGV[1] then return -2 end
redis.call('HSET', KEYS[1], 'value', ARGV[2])
redis.call('PUBLISH', ARGV[3], '')
return 1`;
