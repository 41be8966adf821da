// A guest's request checked against its grant before anything leaves the host: a refused
// request opens no connection.
import { isIPv4 } from "node:net";
import { addressDenied, hostDenied, invalidRequest, methodDenied } from "./http-errors.js";
import type { GrantRules } from "./grant-rules.js";
import { headerProblem } from "./header-rules.js";
import type { GuestHttpRequest } from "./types.js";

/** More than this many guest headers is refused: a guest cannot grow a request without bound. */
export const MAX_GUEST_HEADERS = 64;

/** One request as it goes out: the first, or one after a redirect. */
export interface Hop {
  readonly url: URL;
  readonly method: string;
  /** The guest's headers, checked, flat: [name, value, ...]. */
  readonly headers: readonly string[];
  readonly body: Uint8Array | undefined;
}

/** `req` as its first hop; throws INVALID_ARGUMENT or PERMISSION_DENIED. */
export function checkRequest(rules: GrantRules, req: GuestHttpRequest): Hop {
  const url = parseUrl(rules, req.url);
  checkDestination(rules, url);
  const method = checkMethod(rules, req.method);
  const body = req.body !== undefined && req.body.byteLength > 0 ? req.body : undefined;
  if (body !== undefined) {
    if (method === "GET" || method === "HEAD") throw invalidRequest(rules, `a ${method} request cannot have a body`);
    if (body.byteLength > rules.grant.maxRequestBytes) {
      throw invalidRequest(rules, `the body is ${body.byteLength} bytes, over max_request_bytes = ${rules.grant.maxRequestBytes}`);
    }
  }
  return { url, method, headers: checkHeaders(rules, req.headers), body };
}

/** `text` as an absolute http(s) URL without userinfo; throws INVALID_ARGUMENT. */
export function parseUrl(rules: GrantRules, text: string, base?: URL): URL {
  let url: URL;
  try {
    url = new URL(text, base);
  } catch {
    throw invalidRequest(rules, `${JSON.stringify(text)} is not a valid URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw invalidRequest(rules, `scheme ${JSON.stringify(url.protocol.slice(0, -1))} is not allowed: use http or https`);
  }
  // Credentials in a URL end up in logs and Referer-like places; the grant's headers carry auth.
  if (url.username !== "" || url.password !== "") throw invalidRequest(rules, `a URL must not carry a user name or password`);
  return url;
}

/**
 * Throws PERMISSION_DENIED unless `url`'s host is in `allowed_hosts` and, when it is an IP
 * literal (which no lookup will see), its address is allowed too.
 */
export function checkDestination(rules: GrantRules, url: URL, redirectedFrom?: string): void {
  const host = url.hostname;
  if (!rules.hosts.allows(host, url.port)) throw hostDenied(rules, url.host, redirectedFrom);
  const ip = host.startsWith("[") ? host.slice(1, -1) : isIPv4(host) ? host : undefined;
  if (ip !== undefined && !rules.addresses.allows(ip)) throw addressDenied(rules, host, [ip]);
}

/** The method uppercased, if granted; throws PERMISSION_DENIED. */
export function checkMethod(rules: GrantRules, method: string): string {
  const upper = method.toUpperCase();
  if (!rules.methods.has(upper)) throw methodDenied(rules, method);
  return upper;
}

function checkHeaders(rules: GrantRules, headers: GuestHttpRequest["headers"]): string[] {
  if (headers.length > MAX_GUEST_HEADERS) throw invalidRequest(rules, `${headers.length} headers, more than the ${MAX_GUEST_HEADERS} allowed`);
  const flat: string[] = [];
  for (const [name, value] of headers) {
    const problem = headerProblem(name, value);
    if (problem !== undefined) throw invalidRequest(rules, problem);
    if (rules.headerNames.has(name.toLowerCase())) {
      throw invalidRequest(rules, `header ${JSON.stringify(name)} is set by the operator's grant (headers)`);
    }
    flat.push(name, value);
  }
  return flat;
}
