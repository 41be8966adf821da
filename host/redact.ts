// One masking rule for every place a connection URL can surface (config errors, the Redis and
// PostgreSQL backends' errors, the logs), so a password hidden in one is hidden in all.

/**
 * Masks the secrets a connection URL can carry (`user:pass@` and a `password=` query
 * parameter) anywhere in `text`, for messages and logs. The user name, host, path and other
 * parameters are kept, since they are what an operator needs to tell which URL is meant.
 *
 * Shared by the config loader, the Redis and PostgreSQL backends and the logs: use it on any
 * text that may quote a connection URL before it leaves the process.
 */
export function redactUrlSecrets(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/@:"'`]*):[^\s/"'`]*@/gi, "$1:***@")
    .replace(/([?&]password=)[^&#\s"'`]*/gi, "$1***");
}
