/*
 * The C twin of test/guests/bench.ts: a try + release pair through the raw imports, timed
 * inside the guest with env.performance.now, as the AssemblyScript bench guest does.
 */
#include "lockhost.h"

LOCKHOST_EXPORT_ABI_VERSION()

__attribute__((import_module("env"), import_name("performance.now"))) double now(void);

#define MAX_SAMPLES 1000000
/* Per-iteration durations of the last loop, in milliseconds. */
static double samples[MAX_SAMPLES];
static int32_t count;

/* "k<id>" in buf; its length. */
static size_t key_of(int32_t id, uint8_t *buf) {
  char digits[12];
  int n = 0;
  uint32_t u = id < 0 ? (uint32_t)-id : (uint32_t)id;
  do digits[n++] = (char)('0' + u % 10); while ((u /= 10) != 0);
  buf[0] = 'k';
  for (int i = 0; i < n; i++) buf[1 + i] = (uint8_t)digits[n - 1 - i];
  return (size_t)n + 1;
}

/* n times (try "k<keyId>" with TTL 10 s, release); the total time in ms. Traps on a failure. */
LOCKHOST_EXPORT(loop) double loop(int32_t n, int32_t key_id) {
  if (n < 0 || n > MAX_SAMPLES) __builtin_trap();
  uint8_t key[16];
  size_t len = key_of(key_id, key);
  double total = 0;
  for (int32_t i = 0; i < n; i++) {
    double t0 = now();
    int32_t h = lock_try(key, len, 10000, 0);
    int32_t r = lock_release(h);
    double dt = now() - t0;
    if (h <= 0 || r != 0) __builtin_trap();
    samples[i] = dt;
    total += dt;
  }
  count = n;
  return total;
}

/* Takes "k<keyId>" once, then times n fence calls on it; the total time in ms. */
LOCKHOST_EXPORT(fenceLoop) double fenceLoop(int32_t n, int32_t key_id) {
  if (n < 0 || n > MAX_SAMPLES) __builtin_trap();
  uint8_t key[16];
  size_t len = key_of(key_id, key);
  int32_t h = lock_try(key, len, 60000, 0);
  if (h <= 0) __builtin_trap();
  double total = 0;
  for (int32_t i = 0; i < n; i++) {
    double t0 = now();
    int64_t f = lock_fence(h);
    double dt = now() - t0;
    if (f <= 0) __builtin_trap();
    samples[i] = dt;
    total += dt;
  }
  count = n;
  if (lock_release(h) != 0) __builtin_trap();
  return total;
}

static void sift(double *a, int32_t root, int32_t end) {
  for (int32_t child; (child = 2 * root + 1) < end; root = child) {
    if (child + 1 < end && a[child] < a[child + 1]) child++;
    if (a[root] >= a[child]) return;
    double t = a[root]; a[root] = a[child]; a[child] = t;
  }
}

/* The quantile perMille/1000 (nearest rank) of the last loop's samples, in µs; 0 if none. */
LOCKHOST_EXPORT(pct) double pct(int32_t per_mille) {
  if (count == 0) return 0;
  for (int32_t i = count / 2 - 1; i >= 0; i--) sift(samples, i, count); /* heapsort */
  for (int32_t end = count - 1; end > 0; end--) {
    double t = samples[0]; samples[0] = samples[end]; samples[end] = t;
    sift(samples, 0, end);
  }
  double q = per_mille / 1000.0 * count;
  int32_t idx = (int32_t)q;
  if ((double)idx == q) idx--; /* ceil(q) - 1 */
  if (idx < 0) idx = 0;
  if (idx >= count) idx = count - 1;
  return samples[idx] * 1000.0;
}
