/*
 * A C guest built against wasi-libc (snprintf, printf, clock_gettime, getrandom): it loads only
 * with `wasi = true`, and its stdout and stderr reach the plugin's log.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/random.h>
#include "lockhost.h"

LOCKHOST_EXPORT_ABI_VERSION()

/* Takes "k<id>" and prints its fence with printf and snprintf; returns the fence or -code. */
LOCKHOST_EXPORT(report) int64_t report(int32_t id) {
  char key[32];
  snprintf(key, sizeof key, "k%d", (int)id);
  LOCKHOST_SCOPED int32_t h = lockhost_try(key, 10000, 0);
  if (h <= 0) return h;
  int64_t fence = lockhost_fence(h);
  printf("took %s with fence %lld, %.1f%% done\n", key, (long long)fence, 100.0);
  fprintf(stderr, "a warning from C\n");
  fflush(stdout);
  return fence;
}

/* 1 when the clock and the random source answer. */
LOCKHOST_EXPORT(sources) int32_t sources(void) {
  struct timespec ts;
  unsigned char bytes[16] = {0};
  int ok = clock_gettime(CLOCK_REALTIME, &ts) == 0 && ts.tv_sec > 1600000000;
  ok = ok && getentropy(bytes, sizeof bytes) == 0;
  int any = 0;
  for (int i = 0; i < 16; i++) any |= bytes[i];
  return ok && any;
}

/* A call outside the stubbed set (a file open) fails with ENOSYS, and the guest carries on. */
LOCKHOST_EXPORT(openFile) int32_t openFile(void) {
  FILE *f = fopen("/etc/passwd", "r");
  if (f) return 1;
  printf("fopen failed as expected\n");
  return 0;
}

/* exit(3): proc_exit ends the call as a trap. */
LOCKHOST_EXPORT(quit) void quit(void) { exit(3); }
