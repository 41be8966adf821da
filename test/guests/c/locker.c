/*
 * The C twin of test/guests/locker.ts: the same exports under the same names, so the guest
 * suite runs the same cases against each language. A key id n names the key "k<n>". Lines it
 * logs go to stdout through WASI fd_write (the plugin's log), as "error <code>: <message>".
 */
#include "lockhost.h"
#include "line.h"

LOCKHOST_EXPORT_ABI_VERSION()

/* An address far outside any memory the host will allow. */
#define BAD_PTR ((uint8_t *)0x7ffffff0)

struct iovec { const void *buf; size_t len; };
__attribute__((import_module("wasi_snapshot_preview1"), import_name("fd_write")))
int32_t fd_write(int32_t fd, const struct iovec *iovs, size_t n, size_t *written);

static void flush(void) {
  line[line_len++] = '\n';
  struct iovec iov = { line, line_len };
  size_t written;
  fd_write(1, &iov, 1, &written);
  line_len = 0;
}

/* "k<id>", in a static buffer. */
static const char *key_of(int32_t id) {
  static char key[16];
  int n = 0;
  char digits[12];
  int d = 0;
  uint32_t u = id < 0 ? (uint32_t)-id : (uint32_t)id;
  do digits[d++] = (char)('0' + u % 10); while ((u /= 10) != 0);
  key[n++] = 'k';
  if (id < 0) key[n++] = '-';
  while (d > 0) key[n++] = digits[--d];
  key[n] = 0;
  return key;
}

static char message[600];

/* Returns r; if it is an error, logs "error <code>: <message>". */
static int32_t traced(int32_t r) {
  if (r < 0) {
    lockhost_last_error(message, sizeof message);
    puts_("error "); put_int(-r); puts_(": "); puts_(message); flush();
  }
  return r;
}

/* --- acquisition and raw handle operations --- */

LOCKHOST_EXPORT(hold) int32_t hold(int32_t key_id, int32_t ttl_ms, int32_t flags) { return lockhost_try(key_of(key_id), ttl_ms, flags); }
LOCKHOST_EXPORT(release) int32_t release(int32_t handle) { return lockhost_release(handle); }
LOCKHOST_EXPORT(renew) int32_t renew(int32_t handle, int32_t ttl_ms) { return lockhost_renew(handle, ttl_ms); }
LOCKHOST_EXPORT(fence) int64_t fence(int32_t handle) { return lockhost_fence(handle); }

/* --- through the SDK's conveniences --- */

/* try: 1 acquired (then released at scope end), 2 contended, 100 + code on error (and logs it). */
LOCKHOST_EXPORT(outcome) int32_t outcome(int32_t key_id, int32_t ttl_ms, int32_t flags) {
  LOCKHOST_SCOPED int32_t h = lockhost_try(key_of(key_id), ttl_ms, flags);
  if (h > 0) return 1;
  if (h == LOCKHOST_TRY_CONTENDED) return 2;
  lockhost_last_error(message, sizeof message);
  puts_("error "); puts_(lockhost_status_name(-h)); puts_(": "); puts_(message); flush();
  return 100 - h;
}

/* try, fence, release; -code if not acquired (-1000 if contended). */
LOCKHOST_EXPORT(fenceOf) int64_t fenceOf(int32_t key_id, int32_t ttl_ms) {
  LOCKHOST_SCOPED int32_t h = lockhost_try(key_of(key_id), ttl_ms, 0);
  if (h == 0) return -1000;
  if (h < 0) return h;
  return lockhost_fence(h);
}

/* owner of a handle: logs "owner <token>", returns its length, or -code. */
LOCKHOST_EXPORT(ownerLen) int32_t ownerLen(int32_t handle) {
  char owner[64];
  int32_t n = lockhost_owner(handle, owner, sizeof owner);
  if (n < 0) return traced(n);
  puts_("owner "); puts_(owner); flush();
  return n;
}

/* status: logs "status <json>", returns its UTF-8 length, or -code. */
LOCKHOST_EXPORT(statusLen) int32_t statusLen(int32_t key_id, int32_t flags) {
  static char json[1024];
  int32_t n = lockhost_status(key_of(key_id), flags, json, sizeof json);
  if (n < 0) return traced(n);
  puts_("status "); puts_(json); flush();
  return n;
}

/* --- bad input (raw results) --- */

static uint8_t long_key[1024];

LOCKHOST_EXPORT(tryEmptyKey) int32_t tryEmptyKey(void) { return traced(lock_try((const uint8_t *)"", 0, 10000, 0)); }
LOCKHOST_EXPORT(tryLongKey) int32_t tryLongKey(int32_t len) {
  for (int i = 0; i < len && i < (int)sizeof long_key; i++) long_key[i] = 'a';
  return traced(lock_try(long_key, (size_t)len, 10000, 0));
}
LOCKHOST_EXPORT(tryInvalidUtf8) int32_t tryInvalidUtf8(void) {
  static const uint8_t bad[2] = { 0xff, 0xfe };
  return traced(lock_try(bad, 2, 10000, 0));
}
LOCKHOST_EXPORT(tryTtl) int32_t tryTtl(int32_t ttl_ms) { return traced(lockhost_try("k0", ttl_ms, 0)); }
LOCKHOST_EXPORT(tryBadPointer) int32_t tryBadPointer(void) { return traced(lock_try(BAD_PTR, 16, 10000, 0)); }
LOCKHOST_EXPORT(tryBadFlags) int32_t tryBadFlags(void) { return traced(lockhost_try("k0", 10000, 0x100)); }
LOCKHOST_EXPORT(ownerBadBuffer) int32_t ownerBadBuffer(int32_t handle) { return traced(lock_owner(handle, BAD_PTR, 64)); }
LOCKHOST_EXPORT(statusBadBuffer) int32_t statusBadBuffer(void) { return traced(lock_status((const uint8_t *)"k0", 2, 0, BAD_PTR, 256)); }
LOCKHOST_EXPORT(lastErrorBadBuffer) int32_t lastErrorBadBuffer(void) { return traced(lock_last_error(BAD_PTR, 256)); }
LOCKHOST_EXPORT(releaseForged) int32_t releaseForged(void) { return traced(lockhost_release(0x12345)); }
LOCKHOST_EXPORT(releaseZero) int32_t releaseZero(void) { return traced(lockhost_release(0)); }
LOCKHOST_EXPORT(releaseNegative) int32_t releaseNegative(void) { return traced(lockhost_release(-5)); }

/* --- plumbing --- */

LOCKHOST_EXPORT(noop) void noop(void) {}
LOCKHOST_EXPORT(add) int32_t add(int32_t a, int32_t b) { return a + b; }
