// One masking rule for every place a connection URL can surface (config errors, `lockhost
// check`, /readyz, the logs, the run summary), so a password hidden in one is hidden in all.
//
// Where a URL's password ends is read as the URL parsers themselves read it: the user
// information ends at the LAST "@" of the authority (WHATWG's URL and node-postgres both take
// the last one, so a password may hold "@"). WHATWG's parser itself cannot be trusted to find it:
// it ends the authority at the first "/", "?" or "#", which an unencoded password may hold too
// ("redis://user:Acl/Pass@w0rd@host" does not parse at all, and "redis://u:12/34@host" parses as
// host "u", port 12 and path "/34@host"), and a masking rule that followed it would print the
// rest. So the user information is taken to run from "://" to the last "@" of the URL (of its
// line, in a longer text), and the password from the first ":" in it: a password with any
// printable character, encoded or not, is masked whole. The price is that an "@" later in the
// URL (a query value) masks a little more than the password; never less.

/** The text after `scheme://` up to the end of the line or the next `scheme://`. */
const URL_START = /\b[a-z][a-z0-9+.-]*:\/\//gi;
/** A query parameter that carries a password (`password=`, `sslpassword=`) and its value. */
const PASSWORD_PARAM = /([?&;][a-z_]*password=)[^&#\r\n]*/gi;

/** The masked form of the text after one `scheme://` (`rest`): its userinfo's password and password parameters. */
function maskAfterScheme(rest: string): string {
  const at = rest.lastIndexOf("@");
  if (at < 0) return rest.replace(PASSWORD_PARAM, "$1***");
  const userinfo = rest.slice(0, at);
  const colon = userinfo.indexOf(":");
  const user = colon < 0 ? userinfo : `${userinfo.slice(0, colon)}:***`;
  return `${user}${rest.slice(at).replace(PASSWORD_PARAM, "$1***")}`;
}

/**
 * Masks the secrets a connection URL can carry (the password of `user:pass@`, and a `password=`
 * query parameter) everywhere in `text`, for messages and logs. The user name, host, path and
 * other parameters are kept, since they are what an operator needs to tell which URL is meant.
 * Each URL is taken to run to the end of its line or the next `scheme://` (see the file's
 * header for why).
 *
 * Shared by the config loader, the backends, the CLI and the logs: use it on any text that may
 * quote a connection URL before it leaves the process.
 */
export function redactUrlSecrets(text: string): string {
  return text
    .split(/(\r?\n)/)
    .map((line) => {
      const starts = [...line.matchAll(URL_START)];
      if (starts.length === 0) return line.replace(PASSWORD_PARAM, "$1***");
      let out = line.slice(0, starts[0]!.index);
      starts.forEach((m, i) => {
        const from = m.index + m[0].length;
        const to = i + 1 < starts.length ? starts[i + 1]!.index : line.length;
        out += m[0] + maskAfterScheme(line.slice(from, to));
      });
      return out;
    })
    .join("");
}

/** A function that masks secrets in any text; the text unchanged when there are none. */
export type Scrubber = (text: string) => string;

/** Shorter passwords are not searched for on their own: every message would be mangled. */
const MIN_BARE_SECRET = 4;

/**
 * The scrubber a backend applies to everything it writes: redactUrlSecrets, plus the password
 * of `url` itself (as written, percent-decoded, and as WHATWG's parser re-encodes it; in the
 * userinfo or a `password=` parameter) wherever a driver or server message might echo it bare
 * (ioredis errors carry the AUTH arguments, for one), so no message's shape decides whether a
 * password leaks.
 */
export function scrubberFor(url: string): Scrubber {
  const secrets = secretsOf(url).filter((s) => s.length >= MIN_BARE_SECRET);
  if (secrets.length === 0) return redactUrlSecrets;
  return (text) => {
    let out = text;
    // The bare secrets first: masking the URL first could cut one in two.
    for (const secret of secrets) out = out.split(secret).join("***");
    return redactUrlSecrets(out);
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
    found.add(encodeURIComponent(s));
  };
  const start = url.indexOf("://");
  if (start >= 0) {
    // The rule of redactUrlSecrets: from the first ":" of the userinfo to the last "@".
    const rest = url.slice(start + 3);
    const at = rest.lastIndexOf("@");
    const colon = rest.indexOf(":");
    if (at >= 0 && colon >= 0 && colon < at) add(rest.slice(colon + 1, at));
  }
  for (const m of url.matchAll(/[?&;][a-z_]*password=([^&#]*)/gi)) add(m[1]);
  try {
    const parsed = new URL(url);
    add(parsed.password);
    for (const [key, value] of parsed.searchParams) if (/password$/i.test(key)) add(value);
  } catch {
    // Not a URL the WHATWG parser takes: the text rules above found what there is.
  }
  return [...found].sort((a, b) => b.length - a.length);
}
