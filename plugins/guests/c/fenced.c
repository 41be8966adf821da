/*
 * Example plugin in C: a scheduled job under a lock, a fenced write, read/write locks and a
 * semaphore (the Rust twin is plugins/guests/rust/fenced). Freestanding: no libc, only
 * abi/c/lockhost.h. Built by `npm run build` to plugins/guests/build/c-fenced.wasm.
 */
#include "lockhost.h"

LOCKHOST_EXPORT_ABI_VERSION()

/* Locks this guest held and lost (the host calls lockhost_on_lost between calls). */
static int32_t lost;
static void on_lost(int32_t handle) { (void)handle; lost++; }
LOCKHOST_ON_LOST(on_lost)

LOCKHOST_EXPORT(lostCount) int32_t lostCount(void) { return lost; }

/* The scheduled job: 1 when this node did the work, 0 when another holds the lock, -code. */
LOCKHOST_EXPORT(run) int32_t run(void) {
  LOCKHOST_SCOPED int32_t h = lockhost_try("daily-report", 10000, 0);
  if (h <= 0) return h; /* 0: contended; < 0: -code */
  /* the work goes here; the lock is released when h goes out of scope */
  return 1;
}

/* A resource that accepts a write only with a fence newer than any it has seen. */
static int64_t last_fence, balance;

static int ledger_write(int64_t fence, int64_t amount) {
  if (fence <= last_fence) return 0;
  last_fence = fence;
  balance += amount;
  return 1;
}

/* Adds amount under the global lock "ledger" with its fence: the balance, -1 when refused,
 * -code when the lock was not taken (-1000 contended). */
LOCKHOST_EXPORT(fencedWrite) int64_t fencedWrite(int32_t amount) {
  LOCKHOST_SCOPED int32_t h = lockhost_try("ledger", 10000, LOCKHOST_FLAG_GLOBAL);
  if (h == LOCKHOST_TRY_CONTENDED) return -1000;
  if (h < 0) return h;
  int64_t fence = lockhost_fence(h);
  if (fence < 0) return fence;
  return ledger_write(fence, amount) ? balance : -1;
}

/* A stale holder's write: replays a fence already used, which the ledger refuses (-1). */
LOCKHOST_EXPORT(staleWrite) int64_t staleWrite(int32_t fence) { return ledger_write(fence, 1) ? balance : -1; }

/* Two readers share "catalog" while a writer is refused; a 2-permit semaphore admits two
 * holders and refuses a third. 1 when all of that held. */
LOCKHOST_EXPORT(shared) int32_t shared(void) {
  int ok;
  {
    LOCKHOST_SCOPED int32_t r1 = lockhost_try_read("catalog", 10000, 0);
    LOCKHOST_SCOPED int32_t r2 = lockhost_try_read("catalog", 10000, 0);
    LOCKHOST_SCOPED int32_t w = lockhost_try_write("catalog", 10000, 0);
    ok = r1 > 0 && r2 > 0 && w == LOCKHOST_TRY_CONTENDED;
  }
  LOCKHOST_SCOPED int32_t w = lockhost_try_write("catalog", 10000, 0);
  LOCKHOST_SCOPED int32_t p1 = lockhost_try_permit("workers", 2, 10000, 0);
  LOCKHOST_SCOPED int32_t p2 = lockhost_try_permit("workers", 2, 10000, 0);
  LOCKHOST_SCOPED int32_t p3 = lockhost_try_permit("workers", 2, 10000, 0);
  return ok && w > 0 && p1 > 0 && p2 > 0 && p3 == LOCKHOST_TRY_CONTENDED;
}
