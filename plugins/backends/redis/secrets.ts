// Keeps the Redis password out of every message this backend writes. redactUrlSecrets masks
// a password inside a URL; this also masks the bare password wherever a message might quote
// it (ioredis errors carry the AUTH/HELLO arguments on `command.args`, and a future message
// might print them), so nothing that leaves the backend depends on the shape of one message.
import { redactUrlSecrets } from "../../../host/redact.js";

/** A function that masks the secrets of `url` in any text; the text unchanged when there are none. */
export type Scrubber = (text: string) => string;

/** Builds the scrubber for `url` (its password, raw and percent-decoded, and `?password=`). */
export function scrubberFor(url: string): Scrubber {
  const secrets = secretsOf(url);
  return (text: string): string => {
    let out = redactUrlSecrets(text);
    for (const secret of secrets) out = out.split(secret).join("***");
    return out;
  };
}

/** The secrets a Redis URL carries, longest first (so a secret containing another is masked whole). */
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
    const m = /^[a-z][a-z0-9+.-]*:\/\/[^/@]*?:([^/@]*)@/i.exec(url);
    add(m?.[1]);
  }
  return [...found].sort((a, b) => b.length - a.length);
}
