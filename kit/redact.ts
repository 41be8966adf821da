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
// line, in a longer text, up to where another URL begins: startsUrl), and the password from
// the first ":" in it: a password with any
// printable character, encoded or not, is masked whole. The price is that an "@" later in the
// URL (a query value) masks a little more than the password; never less.

/** The text after `scheme://` up to the end of the line or the next `scheme://` (see startsUrl). */
const URL_START = /\b[a-z][a-z0-9+.-]*:\/\//gi;
/** What may stand before a URL that begins in a text after another one (white space, quotes, brackets, separators). */
const BEFORE_URL = /[\s"'`<>()[\]{},;]/;
/**
 * A query parameter that carries a password (`password=`, `sslpassword=`) and its value. In one
 * URL (maskUrl) the value runs to the next `&name=` or the end: an unencoded "#", "&" or space
 * in it is meant as part of the password, whatever a parser would make of it. In a longer text
 * (redactUrlSecrets) it stops at the next "&" or white space as well, so the message after a
 * URL survives; a password given there must be percent-encoded to be masked whole, as the
 * drivers need it to be read whole anyway.
 */
const PASSWORD_PARAM_TEXT = /([?&;][a-z_]*password=)[^&\s]*/gi;
const PASSWORD_PARAM_URL = /([?&;][a-z_]*password=)(?:(?!&[a-z_][a-z0-9_]*=).)*/gi;

/**
 * The masked form of the text after one `scheme://` (`rest`): its userinfo's password and its
 * password parameters' values, both found in the text as given and masked together (a password
 * may hold "@" or "password=", so neither masking may run on the other's output).
 */
function maskAfterScheme(rest: string, params: RegExp, userinfo = true): string {
  const ranges: [number, number][] = [];
  const at = userinfo ? rest.lastIndexOf("@") : -1;
  const colon = rest.indexOf(":");
  if (at >= 0 && colon >= 0 && colon < at) ranges.push([colon + 1, at]);
  for (const m of rest.matchAll(params)) ranges.push([m.index + m[1]!.length, m.index + m[0].length]);
  if (ranges.length === 0) return rest;
  ranges.sort((a, b) => a[0] - b[0]);
  let out = "";
  let from = 0;
  let end = -1;
  for (const [start, stop] of ranges) {
    if (start > end) {
      if (end >= 0) out += "***";
      out += rest.slice(from, start);
    }
    end = Math.max(end, stop);
    from = end;
  }
  return `${out}***${rest.slice(end)}`;
}

/**
 * One connection URL (a config value) with its secrets masked: the password of `user:pass@`
 * (from the first ":" after "://" to the last "@") and every `password=` parameter's value.
 */
export function maskUrl(url: string): string {
  const start = url.indexOf("://");
  if (start < 0) return maskAfterScheme(url, PASSWORD_PARAM_URL, false);
  return url.slice(0, start + 3) + maskAfterScheme(url.slice(start + 3), PASSWORD_PARAM_URL);
}

/**
 * Masks the secrets a connection URL can carry (the password of `user:pass@`, and a `password=`
 * query parameter) everywhere in `text`, for messages and logs. The user name, host, path and
 * other parameters are kept, since they are what an operator needs to tell which URL is meant.
 * Each URL is taken to run to the end of its line or the next `scheme://` that begins another
 * URL (see the file's header for why, and startsUrl).
 *
 * Shared by the config loader, the backends, the CLI and the logs: use it on any text that may
 * quote a connection URL before it leaves the process.
 */
export function redactUrlSecrets(text: string): string {
  return text
    .split(/(\r?\n)/)
    .map((line) => {
      const starts: RegExpExecArray[] = [];
      for (const m of line.matchAll(URL_START)) if (starts.length === 0 || startsUrl(line, starts[starts.length - 1]!, m)) starts.push(m);
      if (starts.length === 0) return maskAfterScheme(line, PASSWORD_PARAM_TEXT, false);
      let out = line.slice(0, starts[0]!.index);
      starts.forEach((m, i) => {
        const from = m.index + m[0].length;
        const to = i + 1 < starts.length ? starts[i + 1]!.index : line.length;
        out += m[0] + maskAfterScheme(line.slice(from, to), PASSWORD_PARAM_TEXT);
      });
      return out;
    })
    .join("");
}

/**
 * Whether `next`, a `scheme://` in `line`, begins another URL rather than lying inside the one
 * `current` begins: a password may hold "x://" ("redis://user:ab://cd@host"), and cutting the
 * URL there would mask nothing. It begins one only where a URL can begin in a text (after
 * white space, a quote, a bracket or a separator: not glued to the text before it, as inside a
 * password or a query value), and not while the current URL's userinfo may still be open: a
 * ":" after its "://" and either no "@" yet, or an "@" after `next` with no ":" before it (no
 * password of `next`'s own: the current password holds "@"); a ":" of a "://" counts for
 * neither. Two URLs on one line taken for one mask more, never less.
 */
function startsUrl(line: string, current: RegExpExecArray, next: RegExpExecArray): boolean {
  if (!BEFORE_URL.test(line[next.index - 1]!)) return false;
  const before = line.slice(current.index + current[0].length, next.index);
  if (!hasColon(before)) return true;
  if (!before.includes("@")) return false;
  const after = line.slice(next.index + next[0].length);
  const at = after.indexOf("@");
  return at < 0 || hasColon(after.slice(0, at));
}

/** Whether `text` holds a ":" other than one of a "://" (which a password may hold too). */
const hasColon = (text: string): boolean => text.replaceAll("://", "").includes(":");

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
    // Decoded once (what a driver sends), and once more: a password written percent-encoded
    // whose own text holds "%XX" would otherwise show, decoded, next to its masked forms.
    let decoded = s;
    for (let i = 0; i < 2; i++) {
      try {
        decoded = decodeURIComponent(decoded);
      } catch {
        break; // Not valid percent-encoding: the forms so far are the ones that can appear.
      }
      found.add(decoded);
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
  for (const m of url.matchAll(/[?&;][a-z_]*password=([^&]*)/gi)) add(m[1]);
  try {
    const parsed = new URL(url);
    add(parsed.password);
    for (const [key, value] of parsed.searchParams) if (/password$/i.test(key)) add(value);
  } catch {
    // Not a URL the WHATWG parser takes: the text rules above found what there is.
  }
  return [...found].sort((a, b) => b.length - a.length);
}
