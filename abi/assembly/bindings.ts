// Raw imports of the lockhost guest ABI, version 1 (see abi/ABI.md).
//
// These are the host functions exactly as the ABI defines them: pointers and
// lengths into this module's memory, results encoded as integers (negative =
// -status code). Most plugins should use the idiomatic wrapper in `index.ts`
// (`tryLock`, `Lock`, `withLock`, ...); these are exported for advanced use,
// e.g. benchmarks or code that manages its own buffers.
//
// Pointers are `usize` (i32 on wasm32); lengths, capacities, TTLs, flags and
// handles are `i32`.

/**
 * `lock.try(key_ptr, key_len, ttl_ms, flags) -> i32`: try to take the lock on
 * the UTF-8 key at `[keyPtr, keyPtr + keyLen)` for `ttlMs` milliseconds.
 * Returns a handle `> 0` when acquired, `TRY_CONTENDED` (0) when someone else
 * holds the key, `-code` on error (see `lock_last_error` for the message).
 * `flags` is a bitwise OR of `FLAG_GLOBAL`, `FLAG_KEEP` and `FLAG_KEEPALIVE`.
 */
// @ts-ignore: decorator
@external("lock", "try")
export declare function lock_try(keyPtr: usize, keyLen: i32, ttlMs: i32, flags: i32): i32;

/**
 * `lock.renew(handle, ttl_ms) -> i32`: extend the lease to `ttlMs` from now on
 * the server's clock (`0` reuses the TTL the lock was taken with).
 * Returns `OK` (0) or `-code` (`-LOST` if the lease already ended).
 */
// @ts-ignore: decorator
@external("lock", "renew")
export declare function lock_renew(handle: i32, ttlMs: i32): i32;

/**
 * `lock.release(handle) -> i32`: release the lock. Returns `OK` (0) or `-code`
 * (`-ALREADY_RELEASED`, `-INVALID_HANDLE`, `-LOST` when the lease had already ended).
 */
// @ts-ignore: decorator
@external("lock", "release")
export declare function lock_release(handle: i32): i32;

/**
 * `lock.fence(handle) -> i64`: the fencing token of this acquisition (`> 0`,
 * strictly increasing per key across holders), or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "fence")
export declare function lock_fence(handle: i32): i64;

/**
 * `lock.owner(handle, buf_ptr, buf_cap) -> i32`: writes the owner token (a UUID,
 * UTF-8) into `[bufPtr, bufPtr + bufCap)` if it fits. Returns the length the
 * token needs (nothing is written when it exceeds `bufCap`), or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "owner")
export declare function lock_owner(handle: i32, bufPtr: usize, bufCap: i32): i32;

/**
 * `lock.status(key_ptr, key_len, flags, buf_ptr, buf_cap) -> i32`: writes the
 * status JSON of the key into the buffer if it fits. Returns the length the
 * JSON needs (nothing is written when it exceeds `bufCap`), or `-code`.
 * `flags` may contain `FLAG_GLOBAL`.
 */
// @ts-ignore: decorator
@external("lock", "status")
export declare function lock_status(keyPtr: usize, keyLen: i32, flags: i32, bufPtr: usize, bufCap: i32): i32;

/**
 * `lock.last_error(buf_ptr, buf_cap) -> i32`: writes the message about this
 * guest instance's last lock call into the buffer if it fits: its error when it
 * failed, whose key it was when `lock_try` found it contended, nothing (length 0)
 * after any other success. Returns the length the message needs, or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "last_error")
export declare function lock_last_error(bufPtr: usize, bufCap: i32): i32;

/**
 * `lock.acquire(key_ptr, key_len, ttl_ms, wait_ms, flags) -> i32`: take the lock
 * on the key, waiting up to `waitMs` (0 to `MAX_WAIT_MS`) for its holder to let
 * go; the wait ends as soon as the key is released. Returns a handle `> 0`,
 * `-TIMEOUT` when the key stayed held (`lock_last_error` says how long this
 * guest waited), or `-code`. Never returns 0. A wait longer than what is left of
 * the call's time limit is cut short so the guest still gets `-TIMEOUT` in time.
 * `flags` as for `lock_try`.
 */
// @ts-ignore: decorator
@external("lock", "acquire")
export declare function lock_acquire(keyPtr: usize, keyLen: i32, ttlMs: i32, waitMs: i32, flags: i32): i32;

/**
 * `lock.state(handle) -> i32`: `STATE_HELD`, `STATE_LOST` or `STATE_RELEASED`,
 * or `-INVALID_HANDLE`. Handle 0 is the schedule's lock during a scheduled call.
 */
// @ts-ignore: decorator
@external("lock", "state")
export declare function lock_state(handle: i32): i32;

/**
 * `lock.restore(key_ptr, key_len, owner_ptr, owner_len, ttl_ms, flags) -> i32`:
 * a handle for a lock taken elsewhere (another process, another guest), given
 * its owner token, so this guest can renew or release it. `ttlMs` 0 keeps the
 * TTL the lock's current lease was set with. Returns a handle `> 0` or `-code`
 * (`-NOT_FOUND`, `-OWNERSHIP_MISMATCH`, `-ALREADY_RELEASED`, ...).
 * `flags` as for `lock_try`.
 */
// @ts-ignore: decorator
@external("lock", "restore")
export declare function lock_restore(keyPtr: usize, keyLen: i32, ownerPtr: usize, ownerLen: i32, ttlMs: i32, flags: i32): i32;

// Read/write locks and semaphores. Their handles work with every handle
// operation above (renew, release, fence, owner, state); `lock_status` with
// `FLAG_RW` or `FLAG_SEMAPHORE` describes them.

/**
 * `lock.try_read(key_ptr, key_len, ttl_ms, flags) -> i32`: a read lock on the
 * key (readers share it). A handle `> 0`, `TRY_CONTENDED` (0) while a writer
 * holds the key or waits for it, or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "try_read")
export declare function lock_try_read(keyPtr: usize, keyLen: i32, ttlMs: i32, flags: i32): i32;

/**
 * `lock.try_write(key_ptr, key_len, ttl_ms, flags) -> i32`: the write lock on
 * the key (no reader, no other writer). A handle `> 0`, `TRY_CONTENDED` (0), or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "try_write")
export declare function lock_try_write(keyPtr: usize, keyLen: i32, ttlMs: i32, flags: i32): i32;

/** `lock.acquire_read(key_ptr, key_len, ttl_ms, wait_ms, flags) -> i32`: `try_read`, waiting up to `waitMs`; `-TIMEOUT` when it stayed unavailable. */
// @ts-ignore: decorator
@external("lock", "acquire_read")
export declare function lock_acquire_read(keyPtr: usize, keyLen: i32, ttlMs: i32, waitMs: i32, flags: i32): i32;

/**
 * `lock.acquire_write(key_ptr, key_len, ttl_ms, wait_ms, flags) -> i32`:
 * `try_write`, waiting up to `waitMs` in the key's writer queue (readers
 * arriving later wait behind it); `-TIMEOUT` when it stayed held.
 */
// @ts-ignore: decorator
@external("lock", "acquire_write")
export declare function lock_acquire_write(keyPtr: usize, keyLen: i32, ttlMs: i32, waitMs: i32, flags: i32): i32;

/**
 * `lock.try_permit(key_ptr, key_len, permits, ttl_ms, flags) -> i32`: one of
 * the `permits` permits of the semaphore on the key. A handle `> 0`,
 * `TRY_CONTENDED` (0) when all are taken, `-PERMITS_MISMATCH` when its holders
 * took it with another number, or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "try_permit")
export declare function lock_try_permit(keyPtr: usize, keyLen: i32, permits: i32, ttlMs: i32, flags: i32): i32;

/** `lock.acquire_permit(key_ptr, key_len, permits, ttl_ms, wait_ms, flags) -> i32`: `try_permit`, waiting up to `waitMs`; `-TIMEOUT` when none came. */
// @ts-ignore: decorator
@external("lock", "acquire_permit")
export declare function lock_acquire_permit(keyPtr: usize, keyLen: i32, permits: i32, ttlMs: i32, waitMs: i32, flags: i32): i32;

// --- Capabilities (modules lockhost, config, log, http): what a guest can do
// under its lock. Host functions are the embedder's: declare them yourself,
// `@external("billing", "charge") declare function charge(inPtr: usize, inLen: i32, bufPtr: usize, bufCap: i32): i32;`
// and read their reply with `reply()` (capabilities.ts).

/** `lockhost.capability(name_ptr, name_len) -> i32`: `1` when this plugin was granted `name` (`http`, a function namespace), `0` when not. */
// @ts-ignore: decorator
@external("lockhost", "capability")
export declare function lockhost_capability(namePtr: usize, nameLen: i32): i32;

/** `lockhost.last_reply(buf_ptr, buf_cap) -> i32`: the kept reply of the last `http.request` or host function call, written when it fits; its length. */
// @ts-ignore: decorator
@external("lockhost", "last_reply")
export declare function lockhost_last_reply(bufPtr: usize, bufCap: i32): i32;

/** `config.get(name_ptr, name_len, buf_ptr, buf_cap) -> i32`: the length of the plugin's config value `name` (written when it fits), or `-NOT_FOUND`. */
// @ts-ignore: decorator
@external("config", "get")
export declare function config_get(namePtr: usize, nameLen: i32, bufPtr: usize, bufCap: i32): i32;

/** `log.write(level, msg_ptr, msg_len) -> i32`: logs the UTF-8 message at `LOG_DEBUG`..`LOG_ERROR`; `OK` or `-INVALID_ARGUMENT`. */
// @ts-ignore: decorator
@external("log", "write")
export declare function log_write(level: i32, msgPtr: usize, msgLen: i32): i32;

/**
 * `http.request(req_ptr, req_len, body_ptr, body_len, handle, flags, buf_ptr, buf_cap) -> i32`:
 * the request head (`METHOD URL\nName: value...`) and body; with `FLAG_FENCE` the
 * fence of lock `handle` goes along. The length of the response (`status\nname:
 * value\n...\n\nbody`), written when it fits (else `lockhost_last_reply`), or `-code`.
 */
// @ts-ignore: decorator
@external("http", "request")
export declare function http_request(reqPtr: usize, reqLen: i32, bodyPtr: usize, bodyLen: i32, handle: i32, flags: i32, bufPtr: usize, bufCap: i32): i32;

// --- Leader election: the leader holds the key in the lock kind `leader`, kept alive;
// its handle works with every handle binding (`lock_fence` is the term).

/**
 * `lock.try_campaign(key_ptr, key_len, value_ptr, value_len, ttl_ms, flags) -> i32`:
 * a leadership handle `> 0` when this guest now leads the election `key`,
 * proclaiming `value`; `TRY_CONTENDED` (0) while another leads; or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "try_campaign")
export declare function lock_try_campaign(keyPtr: usize, keyLen: i32, valuePtr: usize, valueLen: i32, ttlMs: i32, flags: i32): i32;

/**
 * `lock.campaign(key_ptr, key_len, value_ptr, value_len, ttl_ms, wait_ms, flags) -> i32`:
 * `try_campaign`, waiting up to `waitMs` to lead; `-TIMEOUT` when another led all along.
 */
// @ts-ignore: decorator
@external("lock", "campaign")
export declare function lock_campaign(keyPtr: usize, keyLen: i32, valuePtr: usize, valueLen: i32, ttlMs: i32, waitMs: i32, flags: i32): i32;

/** `lock.proclaim(handle, value_ptr, value_len) -> i32`: `OK` once the leader's value is `value`; `-LOST` when this guest no longer leads. */
// @ts-ignore: decorator
@external("lock", "proclaim")
export declare function lock_proclaim(handle: i32, valuePtr: usize, valueLen: i32): i32;

/** `lock.resign(handle) -> i32`: `OK` once the leadership is released; `-code` as `lock_release`. */
// @ts-ignore: decorator
@external("lock", "resign")
export declare function lock_resign(handle: i32): i32;

/**
 * `lock.leader(key_ptr, key_len, flags, buf_ptr, buf_cap) -> i32`: writes the JSON
 * of who leads the election `key` (`held`, `node`, `plugin`, `value`, `term`,
 * `since_ms`) into the buffer if it fits; its length, or `-code`.
 */
// @ts-ignore: decorator
@external("lock", "leader")
export declare function lock_leader(keyPtr: usize, keyLen: i32, flags: i32, bufPtr: usize, bufCap: i32): i32;
