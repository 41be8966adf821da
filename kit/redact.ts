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

/** A function that masks secrets in any text; the text unchanged when there are none. */
export type Scrubber = (text: string) => string;

/** Shorter passwords are not searched for on their own: every message would be mangled. */
const MIN_BARE_SECRET = 4;

/**
 * The scrubber a backend applies to everything it writes: redactUrlSecrets, plus the password
 * of `url` itself (raw and percent-decoded, in the userinfo or a `password=` parameter)
 * wherever a driver or server message might echo it bare (ioredis errors carry the AUTH
 * arguments, for one), so no message's shape decides whether a password leaks.
 */
export function scrubberFor(url: string): Scrubber {
  const secrets = secretsOf(url).filter((s) => s.length >= MIN_BARE_SECRET);
  if (secrets.length === 0) return redactUrlSecrets;
  return (text) => {
    let out = redactUrlSecrets(text);
    for (const secret of secrets) out = out.split(secret).join("***");
    return out;
  };
}

/** The secrets a connection URL carries, longest first (so one containing another is masked whole). */
function secretsOf(url: string): string[] {
  const found = new Set<string>();
  const add = (s: string | null | undefined): void => {
    if (!s) return;
    found.add(s);
    try {
      found.add(decodeURIComponent(s));
    } catch {
      // Not valid percent-encoding: the raw form is the one that can appear.
    }
  };
  try {
    const parsed = new URL(url);
    add(parsed.password);
    add(parsed.searchParams.get("password"));
  } catch {
    // Not a URL the WHATWG parser takes: fall back to the userinfo between "://" and "@".
    add(/^[a-z][a-z0-9+.-]*:\/\/[^/@]*?:([^/@]*)@/i.exec(url)?.[1]);
  }
  return [...found].sort((a, b) => b.length - a.length);
}
