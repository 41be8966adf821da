/*
 * One output line being built, for the freestanding C test guests (no snprintf): put, puts_ and
 * put_int append to `line`; each guest sends it its own way (WASI stdout, log.write).
 */
#ifndef TEST_GUEST_LINE_H
#define TEST_GUEST_LINE_H
#include "lockhost.h"

static char line[1200];
static size_t line_len;

static void put(const char *s, size_t n) {
  for (size_t i = 0; i < n && line_len < sizeof line - 1; i++) line[line_len++] = s[i];
}
static void puts_(const char *s) { put(s, lockhost__strlen(s)); }
static void put_int(int64_t v) {
  char digits[24];
  int n = 0;
  uint64_t u = v < 0 ? (uint64_t)(-v) : (uint64_t)v;
  do digits[n++] = (char)('0' + u % 10); while ((u /= 10) != 0);
  if (v < 0) put("-", 1);
  while (n > 0) put(&digits[--n], 1);
}
#endif
