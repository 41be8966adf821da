// The `allowed_hosts` rules: which entries are valid, and which URL hosts they admit. Matching
// runs on the WHATWG-parsed hostname (lowercase, punycode, IPv4 in dotted-quad form, IPv6
// compressed in brackets), so "127.1", "0x7f.0.0.1" or "[::0:1]" cannot slip past a literal.
import { isIP, isIPv6 } from "node:net";
import { tomlList } from "./toml-list.js";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_NAME = 253;

/**
 * Why `pattern` is not a valid `allowed_hosts` entry, or undefined when it is: a DNS name
 * ("api.example.com"), a wildcard for its subdomains ("*.example.com", at least two labels
 * after the star) or an IP literal ("127.0.0.1", "::1", "[::1]").
 */
export function hostPatternProblem(pattern: string): string | undefined {
  if (ipLiteral(pattern) !== undefined) return undefined;
  if (pattern.startsWith("[")) return `allowed_hosts entry ${JSON.stringify(pattern)} is not an IPv6 address`;
  const wildcard = pattern.startsWith("*.");
  const name = (wildcard ? pattern.slice(2) : pattern).toLowerCase();
  if (name.length === 0) return `allowed_hosts entry ${JSON.stringify(pattern)} names no host`;
  if (/[/:@?#\s]/.test(name)) {
    return `allowed_hosts entry ${JSON.stringify(pattern)} must be a host name only, without scheme, port or path`;
  }
  if (/[^\x00-\x7f]/.test(name)) {
    return `allowed_hosts entry ${JSON.stringify(pattern)} must be ASCII: write an international name in punycode (xn--...)`;
  }
  const labels = name.split(".");
  if (name.length > MAX_NAME || !labels.every((l) => LABEL.test(l))) {
    return `allowed_hosts entry ${JSON.stringify(pattern)} is not a valid host name (labels of letters, digits and inner hyphens; "*." only at the start)`;
  }
  // "*.com" would grant a whole top-level domain: surely not what an operator means.
  if (wildcard && labels.length < 2) return `allowed_hosts entry ${JSON.stringify(pattern)} is too broad: name a domain under the top level, as in "*.example.com"`;
  // A URL parser reads a name whose last label is numeric as an IPv4 address: never a DNS name.
  if (/^\d+$/.test(labels[labels.length - 1]!)) {
    return wildcard
      ? `allowed_hosts entry ${JSON.stringify(pattern)}: a wildcard takes a domain name, not an IP address`
      : `allowed_hosts entry ${JSON.stringify(pattern)} is not a valid IPv4 address`;
  }
  return undefined;
}

/** The URL-hostname form of an IP literal entry ("[::1]" for "::1" or "[0::1]"), or undefined. */
function ipLiteral(pattern: string): string | undefined {
  const bare = pattern.startsWith("[") && pattern.endsWith("]") ? pattern.slice(1, -1) : pattern;
  const family = isIP(bare);
  if (family === 0 || (family === 4 && bare !== pattern)) return undefined;
  return new URL(`http://${isIPv6(bare) ? `[${bare}]` : bare}/`).hostname;
}

/** The compiled `allowed_hosts` of one grant. */
export class HostAllowList {
  readonly #exact = new Set<string>();
  /** ".example.com" for "*.example.com": a host must end with it and be longer. */
  readonly #suffixes: string[] = [];

  constructor(readonly patterns: readonly string[]) {
    for (const pattern of patterns) {
      const literal = ipLiteral(pattern);
      if (literal !== undefined) this.#exact.add(literal);
      else if (pattern.startsWith("*.")) this.#suffixes.push(pattern.slice(1).toLowerCase());
      else this.#exact.add(pattern.toLowerCase());
    }
  }

  /** Whether a WHATWG URL `hostname` (already lowercase) is admitted. */
  allows(hostname: string): boolean {
    // "api.example.com." is the same host written fully qualified.
    const host = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
    if (this.#exact.has(host)) return true;
    for (const suffix of this.#suffixes) if (host.endsWith(suffix) && host.length > suffix.length) return true;
    return false;
  }

  /** The list as the operator wrote it, for messages. */
  toString(): string {
    return tomlList(this.patterns);
  }
}
