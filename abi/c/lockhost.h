/*
 * lockhost guest SDK for C: header-only, freestanding (no libc needed).
 *
 *   #include "lockhost.h"
 *   LOCKHOST_EXPORT_ABI_VERSION();
 *
 *   LOCKHOST_EXPORT(run) int32_t run(void) {
 *     LOCKHOST_SCOPED int32_t h = lockhost_try("nightly", 10000, 0); // released at scope end
 *     if (h == LOCKHOST_TRY_CONTENDED) return 0;                     // someone else has it
 *     if (h < 0) return h;                                           // -code; lockhost_last_error says why
 *     int64_t fence = lockhost_fence(h);                              // send it with every write
 *     return fence > 0;
 *   }
 *
 * Build: clang-14 --target=wasm32 -mbulk-memory -nostdlib -O2 -I abi/c -Wl,--no-entry -Wl,--import-memory
 *        -o guest.wasm guest.c   (exports are the functions marked LOCKHOST_EXPORT)
 * The constants (LOCKHOST_INVALID_ARGUMENT, LOCKHOST_FLAG_KEEP, …) and the raw imports
 * (lock_try, lock_fence, …) come from lockhost_abi.h, generated from abi/ops.ts and abi/status.ts.
 * Every function below returns what the ABI says (see abi/ABI.md): a handle > 0, 0 when
 * contended, or a negative status code.
 */
#ifndef LOCKHOST_H
#define LOCKHOST_H

#include "lockhost_abi.h"

/** Exports the function that follows under its own name: LOCKHOST_EXPORT(run) int32_t run(void) {…} */
#define LOCKHOST_EXPORT(name) __attribute__((export_name(#name)))

/** Defines and exports lockhost_abi_version(), which every guest must have. */
#define LOCKHOST_EXPORT_ABI_VERSION() \
  LOCKHOST_EXPORT(lockhost_abi_version) int32_t lockhost_abi_version(void) { return LOCKHOST_ABI_VERSION; }

/** Defines and exports lockhost_on_lost(handle), calling fn(handle) when a held lock is lost. */
#define LOCKHOST_ON_LOST(fn) \
  LOCKHOST_EXPORT(lockhost_on_lost) void lockhost_on_lost(int32_t handle) { fn(handle); }

/** A handle variable released when it goes out of scope (a handle <= 0 is left alone). */
#define LOCKHOST_SCOPED __attribute__((cleanup(lockhost__release_scoped)))

static inline size_t lockhost__strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

#define LOCKHOST__KEY(key) (const uint8_t *)(key), lockhost__strlen(key)

/** Tries the mutex on NUL-terminated `key`: handle > 0, LOCKHOST_TRY_CONTENDED (0), or -code. */
static inline int32_t lockhost_try(const char *key, int32_t ttl_ms, int32_t flags) {
  return lock_try(LOCKHOST__KEY(key), ttl_ms, flags);
}
/** Takes the mutex on `key`, waiting up to wait_ms: handle > 0, -LOCKHOST_TIMEOUT, or -code. */
static inline int32_t lockhost_acquire(const char *key, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_acquire(LOCKHOST__KEY(key), ttl_ms, wait_ms, flags);
}
/** Tries a read lock on `key` (readers share it). */
static inline int32_t lockhost_try_read(const char *key, int32_t ttl_ms, int32_t flags) {
  return lock_try_read(LOCKHOST__KEY(key), ttl_ms, flags);
}
/** Tries the write lock on `key` (exclusive). */
static inline int32_t lockhost_try_write(const char *key, int32_t ttl_ms, int32_t flags) {
  return lock_try_write(LOCKHOST__KEY(key), ttl_ms, flags);
}
/** Takes a read lock on `key`, waiting up to wait_ms. */
static inline int32_t lockhost_acquire_read(const char *key, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_acquire_read(LOCKHOST__KEY(key), ttl_ms, wait_ms, flags);
}
/** Takes the write lock on `key`, waiting up to wait_ms. */
static inline int32_t lockhost_acquire_write(const char *key, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_acquire_write(LOCKHOST__KEY(key), ttl_ms, wait_ms, flags);
}
/** Tries one of the `permits` permits of the semaphore on `key`. */
static inline int32_t lockhost_try_permit(const char *key, int32_t permits, int32_t ttl_ms, int32_t flags) {
  return lock_try_permit(LOCKHOST__KEY(key), permits, ttl_ms, flags);
}
/** Takes one of the `permits` permits of the semaphore on `key`, waiting up to wait_ms. */
static inline int32_t lockhost_acquire_permit(const char *key, int32_t permits, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_acquire_permit(LOCKHOST__KEY(key), permits, ttl_ms, wait_ms, flags);
}
/** A handle for a lock taken elsewhere whose owner token this guest was handed. */
static inline int32_t lockhost_restore(const char *key, const char *owner, int32_t ttl_ms, int32_t flags) {
  return lock_restore(LOCKHOST__KEY(key), LOCKHOST__KEY(owner), ttl_ms, flags);
}
/** Releases a handle: LOCKHOST_OK or -code. */
static inline int32_t lockhost_release(int32_t handle) { return lock_release(handle); }
/** Renews a handle's lease to ttl_ms from now (0: the TTL it was taken with). */
static inline int32_t lockhost_renew(int32_t handle, int32_t ttl_ms) { return lock_renew(handle, ttl_ms); }
/** The lock's fencing token (> 0), or -code. */
static inline int64_t lockhost_fence(int32_t handle) { return lock_fence(handle); }
/** LOCKHOST_STATE_HELD, _LOST or _RELEASED, or -code; handle 0 is the schedule's lock in a scheduled call. */
static inline int32_t lockhost_state(int32_t handle) { return lock_state(handle); }

/**
 * Copies a string result into buf as a NUL-terminated string; returns its length, or -code.
 * When it does not fit (length >= cap) buf holds "" and the length says how much to allocate.
 */
static inline int32_t lockhost__cstr(int32_t n, char *buf, size_t cap) {
  if (cap > 0) buf[(n >= 0 && (size_t)n < cap) ? n : 0] = 0;
  return n;
}
/** The owner token of a handle, NUL-terminated in buf; its length, or -code. */
static inline int32_t lockhost_owner(int32_t handle, char *buf, size_t cap) {
  return lockhost__cstr(lock_owner(handle, (uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}
/** The status JSON of `key`, NUL-terminated in buf; its length, or -code. */
static inline int32_t lockhost_status(const char *key, int32_t flags, char *buf, size_t cap) {
  return lockhost__cstr(lock_status(LOCKHOST__KEY(key), flags, (uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}
/** The message of the last lock call (why it failed), NUL-terminated in buf; its length. */
static inline int32_t lockhost_last_error(char *buf, size_t cap) {
  return lockhost__cstr(lock_last_error((uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}

static inline void lockhost__release_scoped(int32_t *handle) {
  if (*handle > 0) lock_release(*handle);
}

#endif /* LOCKHOST_H */
