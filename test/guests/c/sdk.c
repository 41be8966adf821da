/*
 * The C twin of test/guests/rust/sdk (same exports, same log lines), freestanding: string
 * arguments the host passes as UTF-8 (ptr, len) from a static arena, schedules declared as
 * UTF-8, and the header's capability wrappers (config, log, a host function, capability).
 */
#include "lockhost.h"
#include "line.h" /* put, puts_, put_int into line */

LOCKHOST_EXPORT_ABI_VERSION()
LOCKHOST_STRING_ARGS_ARENA(4096)
LOCKHOST_DECLARE_SCHEDULES("# the SDK guest's jobs\ntick 5s\nreport 0 3 * * *\n")
LOCKHOST_HOST_FUNCTION(billing, echo);

/* Logs the line built so far at `level` and starts a new one. */
static void emit(int32_t level) {
  line[line_len] = 0;
  lockhost_log(level, line);
  line_len = 0;
}
/* "NAME (code)", as the Rust SDK's Error displays. */
static void put_error(int32_t code) {
  static const char *const names[] = {"OK", "CONTENDED", "TIMEOUT", "NOT_FOUND", "OWNERSHIP_MISMATCH", "ALREADY_RELEASED", "LOST", "INVALID_ARGUMENT",
                                      "INVALID_HANDLE", "INVALID_MEMORY", "PERMISSION_DENIED", "BACKEND_UNAVAILABLE", "INTERNAL", "CANCELLED",
                                      "PERMITS_MISMATCH", "CALL_FAILED", "TOO_LARGE"};
  puts_(code >= 0 && code < (int32_t)(sizeof names / sizeof names[0]) ? names[code] : "UNKNOWN");
  puts_(" (");
  put_int(code);
  puts_(")");
}

/* Logs "hello <name> x<times>"; returns the name's length in bytes. */
LOCKHOST_EXPORT(greet) int32_t greet(const char *name, size_t name_len, int32_t times) {
  puts_("hello ");
  put(name, name_len);
  puts_(" x");
  put_int(times);
  emit(LOCKHOST_LOG_INFO);
  return (int32_t)name_len;
}

/* Logs "<a>+<b>"; returns the sum of their lengths in bytes. */
LOCKHOST_EXPORT(concat) int32_t concat(const char *a, size_t a_len, const char *b, size_t b_len) {
  put(a, a_len);
  puts_("+");
  put(b, b_len);
  emit(LOCKHOST_LOG_INFO);
  return (int32_t)(a_len + b_len);
}

/* The declared jobs. */
LOCKHOST_EXPORT(tick) int32_t tick(void) { return 1; }
LOCKHOST_EXPORT(report) int32_t report(void) { return 2; }

/*
 * Calls billing.echo with msg through a 2-byte buffer, then reads the whole reply: logs
 * "echo <reply> (<len>)" and returns its length, or logs "echo failed: <error>: <last_error>" and
 * returns -code.
 */
LOCKHOST_EXPORT(echo) int32_t echo(const char *msg, size_t msg_len) {
  static uint8_t whole[1024];
  uint8_t small[2];
  int32_t n = billing_echo((const uint8_t *)msg, msg_len, small, sizeof small);
  if (n < 0) {
    char why[512];
    lockhost_last_error(why, sizeof why);
    puts_("echo failed: ");
    put_error(-n);
    puts_(": ");
    puts_(why);
    emit(LOCKHOST_LOG_WARN);
    return n;
  }
  int32_t len = lockhost_reply(n, whole, sizeof whole);
  puts_("echo ");
  put((const char *)whole, (size_t)len <= sizeof whole ? (size_t)len : 0);
  puts_(" (");
  put_int(len);
  puts_(")");
  emit(LOCKHOST_LOG_INFO);
  return n;
}

/* Reads config key `key`: logs "config <key>=<value> (length ok: true)" or "config <key>: <error>"; returns the value's length or -code. */
LOCKHOST_EXPORT(config) int32_t config(const char *key_ptr, size_t key_len) {
  char key[256], value[512], tiny[4];
  size_t k = key_len < sizeof key - 1 ? key_len : sizeof key - 1;
  for (size_t i = 0; i < k; i++) key[i] = key_ptr[i];
  key[k] = 0;
  int32_t short_len = lockhost_config(key, tiny, sizeof tiny);
  int32_t n = lockhost_config(key, value, sizeof value);
  puts_("config ");
  puts_(key);
  if (n < 0) {
    puts_(": ");
    put_error(-n);
  } else {
    puts_("=");
    puts_(value);
    puts_(short_len == n ? " (length ok: true)" : " (length ok: false)");
  }
  emit(LOCKHOST_LOG_INFO);
  return n;
}

/* Logs "capability <name>: <yes|no>"; returns 1 or 0. */
LOCKHOST_EXPORT(capability) int32_t capability(const char *name_ptr, size_t name_len) {
  char name[256];
  size_t k = name_len < sizeof name - 1 ? name_len : sizeof name - 1;
  for (size_t i = 0; i < k; i++) name[i] = name_ptr[i];
  name[k] = 0;
  int32_t yes = lockhost_has_capability(name);
  puts_("capability ");
  put(name_ptr, name_len);
  puts_(yes == 1 ? ": yes" : ": no");
  emit(LOCKHOST_LOG_INFO);
  return yes;
}

/* One line at each level. */
LOCKHOST_EXPORT(levels) void levels(void) {
  lockhost_log_debug("level debug");
  lockhost_log_info("level info");
  lockhost_log_warn("level warn");
  lockhost_log_error("level error");
}

/*
 * Leads the election `name` with "v1", campaigns again (timing out while it leads itself),
 * proclaims "v2", reads the leader's JSON, resigns, reads it again, then tries the fair mutex
 * `name`: logs "campaign again: timed out", "proclaim: ok", "leader <json>", "resign: ok",
 * "leader <json>", "fair: held"; returns the term, or -code.
 */
static int32_t elect_failed(int32_t r) {
  puts_("elect failed: ");
  put_error(-r);
  emit(LOCKHOST_LOG_WARN);
  return r;
}
LOCKHOST_EXPORT(elect) int32_t elect(const char *name_ptr, size_t name_len) {
  static char json[512];
  char name[256];
  size_t k = name_len < sizeof name - 1 ? name_len : sizeof name - 1;
  for (size_t i = 0; i < k; i++) name[i] = name_ptr[i];
  name[k] = 0;
  int32_t lead = lockhost_try_campaign(name, "v1", 10000, 0);
  if (lead == LOCKHOST_TRY_CONTENDED) {
    lockhost_log_info("try_campaign: another leads");
    return 0;
  }
  if (lead < 0) return elect_failed(lead);
  int32_t term = (int32_t)lockhost_fence(lead);
  int32_t again = lockhost_campaign(name, "v3", 10000, 20, 0);
  if (again > 0) {
    lockhost_log_info("campaign again: led");
  } else if (again == -LOCKHOST_TIMEOUT) {
    lockhost_log_info("campaign again: timed out");
  } else {
    return elect_failed(again);
  }
  int32_t r = lockhost_proclaim(lead, "v2");
  if (r < 0) return elect_failed(r);
  lockhost_log_info("proclaim: ok");
  int32_t n = lockhost_leader(name, 0, json, sizeof json);
  if (n < 0) return elect_failed(n);
  puts_("leader ");
  puts_(json);
  emit(LOCKHOST_LOG_INFO);
  r = lockhost_resign(lead);
  if (r < 0) return elect_failed(r);
  lockhost_log_info("resign: ok");
  n = lockhost_leader(name, 0, json, sizeof json);
  if (n < 0) return elect_failed(n);
  puts_("leader ");
  puts_(json);
  emit(LOCKHOST_LOG_INFO);
  int32_t fair = lockhost_try_fair(name, 1000, 0);
  if (fair < 0) return elect_failed(fair);
  if (fair > 0) {
    lockhost_log_info("fair: held");
    r = lockhost_release(fair);
    if (r < 0) return elect_failed(r);
  } else {
    lockhost_log_info("fair: contended");
  }
  return term;
}

/*
 * Sends the request `head` ("METHOD URL" then "Name: value" lines) with `body`, under the lock
 * `key`'s fence when `key` is not empty (-1000 when another holds it), reading the response into
 * a buffer of `cap` bytes, then whole through the kept reply when it is longer. Logs "http
 * <status> content-type=<value> body=<body> (<len> bytes, read <first|again>)" and returns the
 * status, or logs "http failed: <error>: <last_error>" and returns -code.
 */
LOCKHOST_EXPORT(request)
int32_t request(const char *head_ptr, size_t head_len, const char *body, size_t body_len, const char *key_ptr, size_t key_len, int32_t cap) {
  static uint8_t first[4096], whole[16384];
  char head[2048], key[256];
  size_t h = head_len < sizeof head - 1 ? head_len : sizeof head - 1, k = key_len < sizeof key - 1 ? key_len : sizeof key - 1;
  for (size_t i = 0; i < h; i++) head[i] = head_ptr[i];
  head[h] = 0;
  for (size_t i = 0; i < k; i++) key[i] = key_ptr[i];
  key[k] = 0;
  LOCKHOST_SCOPED int32_t lock = LOCKHOST_NO_FENCE;
  if (k > 0) {
    lock = lockhost_try(key, 10000, 0);
    if (lock == LOCKHOST_TRY_CONTENDED) return -1000;
    if (lock < 0) return lock;
  }
  size_t size = cap < 0 ? 0 : (size_t)cap < sizeof first ? (size_t)cap : sizeof first;
  int32_t n = lockhost_http(head, (const uint8_t *)body, body_len, lock, first, size);
  if (n < 0) {
    char why[512];
    lockhost_last_error(why, sizeof why);
    puts_("http failed: ");
    put_error(-n);
    puts_(": ");
    puts_(why);
    emit(LOCKHOST_LOG_WARN);
    return n;
  }
  int fits = (size_t)n <= size;
  const uint8_t *response = first;
  if (!fits) {
    if ((size_t)n > sizeof whole) return -LOCKHOST_TOO_LARGE;
    lockhost_reply(n, whole, sizeof whole);
    response = whole;
  }
  int32_t status = lockhost_http_status(response, n), type_len, body_len_got;
  const uint8_t *type = lockhost_http_header(response, n, "content-type", &type_len);
  const uint8_t *got = lockhost_http_body(response, n, &body_len_got);
  puts_("http ");
  put_int(status);
  puts_(" content-type=");
  if (type) put((const char *)type, (size_t)type_len);
  else puts_("none");
  puts_(" body=");
  put((const char *)got, (size_t)body_len_got);
  puts_(" (");
  put_int(n);
  puts_(fits ? " bytes, read first)" : " bytes, read again)");
  emit(LOCKHOST_LOG_INFO);
  return status;
}

/*
 * Sends the request `head` with `body` under the fence of the scheduled call's lock (handle 0):
 * logs "scheduled <status>" and returns the status, or logs "scheduled failed: <error>" and
 * returns -code.
 */
LOCKHOST_EXPORT(scheduledRequest) int32_t scheduledRequest(const char *head_ptr, size_t head_len, const char *body, size_t body_len) {
  static uint8_t buf[512];
  char head[2048];
  size_t h = head_len < sizeof head - 1 ? head_len : sizeof head - 1;
  for (size_t i = 0; i < h; i++) head[i] = head_ptr[i];
  head[h] = 0;
  int32_t n = lockhost_http(head, (const uint8_t *)body, body_len, 0, buf, sizeof buf);
  if (n < 0) {
    puts_("scheduled failed: ");
    put_error(-n);
    emit(LOCKHOST_LOG_WARN);
    return n;
  }
  puts_("scheduled ");
  put_int(lockhost_http_status(buf, (size_t)n <= sizeof buf ? n : (int32_t)sizeof buf));
  emit(LOCKHOST_LOG_INFO);
  return lockhost_http_status(buf, (size_t)n <= sizeof buf ? n : (int32_t)sizeof buf);
}
