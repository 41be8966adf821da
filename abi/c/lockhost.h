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
/** Tries the fair mutex on `key` (LOCKHOST_FLAG_FAIR: waiters queue first come, first served; contended while anyone waits). */
static inline int32_t lockhost_try_fair(const char *key, int32_t ttl_ms, int32_t flags) {
  return lock_try(LOCKHOST__KEY(key), ttl_ms, flags | LOCKHOST_FLAG_FAIR);
}
/** Takes the fair mutex on `key`, waiting up to wait_ms in its queue: handle > 0, -LOCKHOST_TIMEOUT, or -code. */
static inline int32_t lockhost_acquire_fair(const char *key, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_acquire(LOCKHOST__KEY(key), ttl_ms, wait_ms, flags | LOCKHOST_FLAG_FAIR);
}

/* ---- Leader election (abi/ABI.md "Leader election"): a leadership is a handle on the key in the kind leader ---- */

/**
 * Leads the election `key` if nobody does, proclaiming NUL-terminated `value`: a leadership
 * handle > 0 (lockhost_fence is the term; kept alive by the host), LOCKHOST_TRY_CONTENDED (0)
 * while another leads, or -code. flags: 0, LOCKHOST_FLAG_GLOBAL, LOCKHOST_FLAG_KEEP.
 */
static inline int32_t lockhost_try_campaign(const char *key, const char *value, int32_t ttl_ms, int32_t flags) {
  return lock_try_campaign(LOCKHOST__KEY(key), LOCKHOST__KEY(value), ttl_ms, flags);
}
/** Leads the election `key`, waiting up to wait_ms (woken when the leader resigns or is lost): handle > 0, -LOCKHOST_TIMEOUT, or -code. */
static inline int32_t lockhost_campaign(const char *key, const char *value, int32_t ttl_ms, int32_t wait_ms, int32_t flags) {
  return lock_campaign(LOCKHOST__KEY(key), LOCKHOST__KEY(value), ttl_ms, wait_ms, flags);
}
/** Proclaims a new NUL-terminated `value` as the leader `handle`: LOCKHOST_OK, -LOCKHOST_LOST, or -code. */
static inline int32_t lockhost_proclaim(int32_t handle, const char *value) {
  return lock_proclaim(handle, LOCKHOST__KEY(value));
}
/** Steps down (a waiting campaigner takes over at once): LOCKHOST_OK or -code (-LOCKHOST_INVALID_HANDLE for a non-leadership). */
static inline int32_t lockhost_resign(int32_t handle) { return lock_resign(handle); }

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
/**
 * The JSON of who leads the election `key` now, NUL-terminated in buf; its length, or -code.
 * {"key":…,"held":true,"node":…,"plugin":…,"value":…,"term":…,"since_ms":…} or {"key":…,"held":false}.
 * flags: 0 or LOCKHOST_FLAG_GLOBAL.
 */
static inline int32_t lockhost_leader(const char *key, int32_t flags, char *buf, size_t cap) {
  return lockhost__cstr(lock_leader(LOCKHOST__KEY(key), flags, (uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}
/** The message of the last lock call (why it failed), NUL-terminated in buf; its length. */
static inline int32_t lockhost_last_error(char *buf, size_t cap) {
  return lockhost__cstr(lock_last_error((uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}

/* ---- Strings across exports (abi/ABI.md "Strings into exports") ---- */

/**
 * Defines and exports lockhost_alloc_utf8 / lockhost_free_utf8 on a static arena of `bytes`
 * bytes (freestanding: no malloc), so the host passes every string argument as UTF-8 (ptr, len):
 * two parameters. The arena empties once every string of a call is freed; a call whose strings
 * do not fit fails like a trap (so size it for the longest call).
 *   LOCKHOST_STRING_ARGS_ARENA(4096)
 *   LOCKHOST_EXPORT(greet) int32_t greet(const char *name, size_t name_len) {…}
 */
#define LOCKHOST_STRING_ARGS_ARENA(bytes)                                                        \
  static uint8_t lockhost__arena[(bytes)];                                                       \
  static size_t lockhost__arena_used, lockhost__arena_live;                                      \
  LOCKHOST_EXPORT(lockhost_alloc_utf8) uint8_t *lockhost_alloc_utf8(size_t len) {                \
    if (len > sizeof lockhost__arena - lockhost__arena_used) return 0;                           \
    uint8_t *p = lockhost__arena + lockhost__arena_used;                                         \
    lockhost__arena_used += len;                                                                 \
    lockhost__arena_live++;                                                                      \
    return p;                                                                                    \
  }                                                                                              \
  LOCKHOST_EXPORT(lockhost_free_utf8) void lockhost_free_utf8(uint8_t *ptr, size_t len) {        \
    (void)ptr; (void)len;                                                                        \
    if (lockhost__arena_live > 0 && --lockhost__arena_live == 0) lockhost__arena_used = 0;       \
  }

/**
 * The same on malloc and free (C on wasi-libc: include <stdlib.h> first). A string argument is
 * not NUL-terminated: use its length.
 */
#define LOCKHOST_STRING_ARGS_MALLOC()                                                            \
  LOCKHOST_EXPORT(lockhost_alloc_utf8) void *lockhost_alloc_utf8(size_t len) { return malloc(len); } \
  LOCKHOST_EXPORT(lockhost_free_utf8) void lockhost_free_utf8(void *ptr, size_t len) { (void)len; free(ptr); }

/**
 * Defines and exports lockhost_schedules_utf8(), declaring the plugin's schedules: one
 * "<export> <interval or cron expression>" a line, for [[scheduled]] entries that name the
 * plugin without a schedule. LOCKHOST_DECLARE_SCHEDULES("tick 5m\nreport 0 3 * * *")
 */
#define LOCKHOST_DECLARE_SCHEDULES(text)                                                         \
  LOCKHOST_EXPORT(lockhost_schedules_utf8) int64_t lockhost_schedules_utf8(void) {               \
    static const char lockhost__schedules[] = text;                                              \
    return (int64_t)(sizeof lockhost__schedules - 1) << 32 | (int64_t)(uintptr_t)lockhost__schedules; \
  }

/* ---- Capabilities (abi/ABI.md "Capabilities"): granted per plugin by the operator ---- */

/** 1 when the plugin may use capability `name` ("http", a host function namespace, "config", "log"), else 0. */
static inline int32_t lockhost_has_capability(const char *name) {
  return lockhost_capability(LOCKHOST__KEY(name));
}
/** The value of `key` of the plugin's [plugins.config], NUL-terminated in buf; its length, or -LOCKHOST_NOT_FOUND. */
static inline int32_t lockhost_config(const char *key, char *buf, size_t cap) {
  return lockhost__cstr(config_get(LOCKHOST__KEY(key), (uint8_t *)buf, cap ? cap - 1 : 0), buf, cap);
}
/** Logs NUL-terminated `msg` at `level` (LOCKHOST_LOG_DEBUG … LOCKHOST_LOG_ERROR); below the plugin's log_level it costs nothing. */
static inline void lockhost_log(int32_t level, const char *msg) { log_write(level, LOCKHOST__KEY(msg)); }
static inline void lockhost_log_debug(const char *msg) { lockhost_log(LOCKHOST_LOG_DEBUG, msg); }
static inline void lockhost_log_info(const char *msg) { lockhost_log(LOCKHOST_LOG_INFO, msg); }
static inline void lockhost_log_warn(const char *msg) { lockhost_log(LOCKHOST_LOG_WARN, msg); }
static inline void lockhost_log_error(const char *msg) { lockhost_log(LOCKHOST_LOG_ERROR, msg); }

/** For lockhost_http: no lock's fence is sent (handle 0 is the schedule's lock, so it cannot mean none). */
#define LOCKHOST_NO_FENCE (-1)

/**
 * Sends an HTTP request: `head` is "METHOD URL" then one "Name: value" line per header. With a
 * `fence_handle` (not LOCKHOST_NO_FENCE) the host adds that lock's name and fence headers. The
 * response's length (status line, headers, body: lockhost_http_status), written into buf when it
 * fits, else read it with lockhost_reply; or -code.
 */
static inline int32_t lockhost_http(const char *head, const uint8_t *body, size_t body_len, int32_t fence_handle, uint8_t *buf, size_t cap) {
  int fenced = fence_handle != LOCKHOST_NO_FENCE;
  return http_request(LOCKHOST__KEY(head), body, body_len, fenced ? fence_handle : 0, fenced ? LOCKHOST_FLAG_FENCE : 0, buf, cap);
}
/** The status code at the start of a response of `len` bytes, or -1. */
static inline int32_t lockhost_http_status(const uint8_t *response, int32_t len) {
  int32_t code = 0, i = 0;
  for (; i < len && response[i] != '\n'; i++) {
    if (response[i] < '0' || response[i] > '9') return -1;
    code = code * 10 + (response[i] - '0');
  }
  return i > 0 && i < len ? code : -1;
}
/*
 * A response is the status line, one "name: value" line per header (names lowercase), an empty
 * line, then the body. The start of the body of a response of `len` bytes; its length in
 * *body_len (0 when it has none).
 */
static inline const uint8_t *lockhost_http_body(const uint8_t *response, int32_t len, int32_t *body_len) {
  int32_t i = 0;
  while (i < len && response[i] != '\n') i++; /* the status line */
  /* Each header line ends with '\n'; the empty line after them is the first '\n' at a line's start. */
  for (i++; i < len && response[i] != '\n'; i++)
    while (i < len && response[i] != '\n') i++;
  i = i < len ? i + 1 : len;
  *body_len = len - i;
  return response + i;
}
/* The value of the first header `name` (lowercase, NUL-terminated) of a response of `len` bytes,
 * its length in *value_len; 0 (NULL) when it has none. */
static inline const uint8_t *lockhost_http_header(const uint8_t *response, int32_t len, const char *name, int32_t *value_len) {
  size_t name_len = lockhost__strlen(name);
  int32_t i = 0;
  while (i < len && response[i] != '\n') i++; /* the status line */
  for (i++; i < len && response[i] != '\n';) {
    int32_t start = i, end = i;
    while (end < len && response[end] != '\n') end++;
    size_t k = 0;
    while (k < name_len && start + (int32_t)k < end && response[start + k] == (uint8_t)name[k]) k++;
    if (k == name_len && start + (int32_t)k + 1 < end && response[start + k] == ':' && response[start + k + 1] == ' ') {
      *value_len = end - (start + (int32_t)k + 2);
      return response + start + k + 2;
    }
    i = end + 1;
  }
  *value_len = 0;
  return 0;
}
/**
 * What a reply-returning call (a host function, lockhost_http) answered (`n`), with its reply
 * in buf whenever buf holds it (copied from the kept reply, so buf may be bigger than the
 * call's): n, or the call's -code.
 */
static inline int32_t lockhost_reply(int32_t n, uint8_t *buf, size_t cap) {
  if (n >= 0 && (size_t)n <= cap) lockhost_last_reply(buf, cap);
  return n;
}
/**
 * Declares the host function `ns.name` the embedder registers, as
 * int32_t ns_name(const uint8_t *in, size_t in_len, uint8_t *buf, size_t cap): the reply's
 * length (written into buf when it fits, else read it with lockhost_reply), or -code.
 *   LOCKHOST_HOST_FUNCTION(billing, echo)
 */
#define LOCKHOST_HOST_FUNCTION(ns, name)                                                         \
  __attribute__((import_module(#ns), import_name(#name)))                                        \
  int32_t ns##_##name(const uint8_t *in_ptr, size_t in_len, uint8_t *buf_ptr, size_t buf_cap)

static inline void lockhost__release_scoped(int32_t *handle) {
  if (*handle > 0) lock_release(*handle);
}

#endif /* LOCKHOST_H */
