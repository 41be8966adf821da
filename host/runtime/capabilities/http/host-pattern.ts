// The `allowed_hosts` rules: which entries are valid, and which URL hosts they admit. Matching
// runs on the WHATWG-parsed hostname (lowercase, punycode, IPv4 in dotted-quad form, IPv6
// compressed in brackets), so "127.1", "0x7f.0.0.1" or "[::0:1]" cannot slip past a literal.
import { isIP, isIPv6 } from "node:net";
import { tomlList } from "./toml-list.js";

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const MAX_NAME = 253;

/**
 * An entry split into its host and its port: "api.example.com:8443" → 8443, "127.0.0.1:*" →
 * any, no port → the scheme's default (80, 443). A bare IPv6 literal ("::1") has no port; with
 * one it is written in brackets ("[::1]:8080").
 */
function splitPort(pattern: string): { host: string; port: number | "*" | "default" } | string {
  const colon = pattern.lastIndexOf(":");
  // A URL or a path is no host: the host checks say so in their own words.
  if (/[/@?#\s]/.test(pattern)) return { host: pattern, port: "default" };
  if (colon < 0 || (!pattern.startsWith("[") && pattern.indexOf(":") !== colon) || (pattern.startsWith("[") && pattern.endsWith("]")))
    return { host: pattern, port: "default" };
  const host = pattern.slice(0, colon);
  const port = pattern.slice(colon + 1);
  if (port === "*") return { host, port };
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535)
    return `allowed_hosts entry ${JSON.stringify(pattern)} has port ${JSON.stringify(port)}: write 1 to 65535, or * for any port`;
  return { host, port: Number(port) };
}

/**
 * Why `pattern` is not a valid `allowed_hosts` entry, or undefined when it is: a DNS name
 * ("api.example.com"), a wildcard for its subdomains ("*.example.com", at least two labels
 * after the star) or an IP literal ("127.0.0.1", "::1", "[::1]"), each optionally with a port
 * (":8443") or ":*" for any; without one only the scheme's default port (80, 443) is admitted.
 */
export function hostPatternProblem(entry: string): string | undefined {
  const split = splitPort(entry);
  if (typeof split === "string") return split;
  const pattern = split.host;
  if (ipLiteral(pattern) !== undefined) return undefined;
  if (pattern.startsWith("[")) return `allowed_hosts entry ${JSON.stringify(pattern)} is not an IPv6 address`;
  const wildcard = pattern.startsWith("*.");
  const name = (wildcard ? pattern.slice(2) : pattern).toLowerCase();
  if (name.length === 0) return `allowed_hosts entry ${JSON.stringify(pattern)} names no host`;
  if (/[/:@?#\s]/.test(name)) {
    return `allowed_hosts entry ${JSON.stringify(entry)} must be a host name and an optional port only, without scheme or path`;
  }
  if (/[^\x00-\x7f]/.test(name)) {
    return `allowed_hosts entry ${JSON.stringify(pattern)} must be ASCII: write an international name in punycode (xn--...)`;
  }
  const labels = name.split(".");
  if (name.length > MAX_NAME || !labels.every((l) => LABEL.test(l))) {
    return `allowed_hosts entry ${JSON.stringify(pattern)} is not a valid host name (labels of letters, digits and inner hyphens; "*." only at the start)`;
  }
  // "*.com" would grant a whole top-level domain: surely not what an operator means.
  if (wildcard && labels.length < 2)
    return `allowed_hosts entry ${JSON.stringify(pattern)} is too broad: name a domain under the top level, as in "*.example.com"`;
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

/** The ports an entry admits: one, any, or the scheme's default. */
type PortRule = number | "*" | "default";

/** The compiled `allowed_hosts` of one grant. */
export class HostAllowList {
  /** Exact hosts, each with the ports its entries admit. */
  readonly #exact = new Map<string, PortRule[]>();
  /** ".example.com" for "*.example.com": a host must end with it and be longer. */
  readonly #suffixes: { suffix: string; port: PortRule }[] = [];

  constructor(readonly patterns: readonly string[]) {
    for (const entry of patterns) {
      const split = splitPort(entry);
      // The config reader refused malformed entries; one reaching here admits nothing.
      if (typeof split === "string") continue;
      const { host: pattern, port } = split;
      const literal = ipLiteral(pattern);
      if (literal !== undefined) this.#add(literal, port);
      else if (pattern.startsWith("*.")) this.#suffixes.push({ suffix: pattern.slice(1).toLowerCase(), port });
      else this.#add(pattern.toLowerCase(), port);
    }
  }

  #add(host: string, port: PortRule): void {
    const ports = this.#exact.get(host);
    if (ports) ports.push(port);
    else this.#exact.set(host, [port]);
  }

  /**
   * Whether a WHATWG URL `hostname` (already lowercase) at `port` (the URL's `port`: "" for the
   * scheme's default) is admitted. Without a port an entry admits the default port only, so an
   * allowed name does not open every service of its machine.
   */
  allows(hostname: string, port = ""): boolean {
    // "api.example.com." is the same host written fully qualified.
    const host = hostname.endsWith(".") ? hostname.slice(0, -1) : hostname;
    const fits = (rule: PortRule): boolean => rule === "*" || (rule === "default" ? port === "" : String(rule) === port);
    if (this.#exact.get(host)?.some(fits)) return true;
    for (const { suffix, port: rule } of this.#suffixes) if (host.endsWith(suffix) && host.length > suffix.length && fits(rule)) return true;
    return false;
  }

  /** The list as the operator wrote it, for messages. */
  toString(): string {
    return tomlList(this.patterns);
  }
}
