// Redirects are followed here rather than by undici, so that every hop goes through the same
// checks as the first request: allow-list, address (at connect) and method.
import { checkDestination, checkMethod, parseUrl, type Hop } from "./guest-request.js";
import type { GrantRules } from "./grant-rules.js";
import { LockhostError } from "../../../../kit/errors.js";

/** Headers that describe a body: dropped with it when a redirect turns the request into a GET. */
const BODY_HEADERS = new Set(["content-type", "content-encoding", "content-language", "content-location"]);
/** Guest credentials that fetch drops when a redirect leaves the origin; the grant's headers are the operator's to send. */
const CREDENTIAL_HEADERS = new Set(["authorization", "cookie", "proxy-authorization"]);

/** The Location of a response that is a redirect to follow, or undefined. */
export function redirectLocation(status: number, location: string | string[] | undefined): string | undefined {
  if (status !== 301 && status !== 302 && status !== 303 && status !== 307 && status !== 308) return undefined;
  return typeof location === "string" ? location : undefined;
}

/**
 * The hop a redirect leads to: 303 (and 301/302 after a POST, as fetch does) becomes a GET
 * without a body; 307/308 keep method and body. Throws as the first request would.
 */
export function nextHop(rules: GrantRules, from: Hop, status: number, location: string): Hop {
  const url = parseUrl(rules, location, from.url);
  checkDestination(rules, url, from.url.origin);
  // The grant's headers (tokens, often) would go in the clear: an https request stays https.
  if (from.url.protocol === "https:" && url.protocol === "http:") {
    throw new LockhostError(
      "PERMISSION_DENIED",
      `plugin ${rules.plugin}: a redirect from ${from.url.origin} to ${url.origin} leaves https for http, which lockhost does not follow (the ` +
        `grant's headers would travel in the clear)`,
    );
  }
  const toGet = (status === 303 && from.method !== "HEAD") || ((status === 301 || status === 302) && from.method === "POST");
  const method = toGet ? checkMethod(rules, "GET") : checkMethod(rules, from.method);
  const crossOrigin = url.origin !== from.url.origin;
  const headers = toGet || crossOrigin ? without(from.headers, toGet, crossOrigin) : from.headers;
  return { url, method, headers, body: toGet ? undefined : from.body };
}

function without(headers: readonly string[], bodyHeaders: boolean, credentials: boolean): string[] {
  const kept: string[] = [];
  for (let i = 0; i < headers.length; i += 2) {
    const name = headers[i]!.toLowerCase();
    if ((bodyHeaders && BODY_HEADERS.has(name)) || (credentials && CREDENTIAL_HEADERS.has(name))) continue;
    kept.push(headers[i]!, headers[i + 1]!);
  }
  return kept;
}
