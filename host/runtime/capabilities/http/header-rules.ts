// What a header or a method may be, for the operator's grant and the guest's request alike.
// A value is never quoted in a message: grant header values are secrets.
import { ENCODED_LOCK_HEADER, FENCE_HEADER, KIND_HEADER, LOCK_HEADER } from "../../../../fence/headers.js";

/** RFC 9110 token: the characters of a header name or a method. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible Latin-1 text, spaces and tabs: no CR, LF, NUL or other control characters. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Headers the host sets itself: framing ones undici derives from the request, and the fence
 * headers, so that a guest cannot forge the fence a resource checks.
 */
export const HOST_CONTROLLED_HEADERS: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "upgrade",
  "expect",
  "te",
  "trailer",
  "proxy-connection",
  // The fence headers are the host's to send (FLAG_FENCE): a guest must not forge any of them.
  FENCE_HEADER,
  LOCK_HEADER,
  ENCODED_LOCK_HEADER,
  KIND_HEADER,
]);

/** Methods a plugin never gets: tunnels and request echo (which would reflect grant headers). */
const NEVER_METHODS = new Set(["CONNECT", "TRACE", "TRACK"]);

/**
 * Why `name: value` may not be sent, or undefined when it may: the name a token and not one
 * the host controls, the value visible Latin-1 text (no CR, LF or NUL). The value is never
 * quoted back.
 */
export function headerProblem(name: string, value: string): string | undefined {
  if (!TOKEN.test(name)) {
    return `header ${JSON.stringify(name)} has an invalid name: use letters, digits and !#$%&'*+-.^_\`|~`;
  }
  if (HOST_CONTROLLED_HEADERS.has(name.toLowerCase())) return `header ${JSON.stringify(name)} is set by the host, not by a plugin`;
  if (!FIELD_VALUE.test(value)) {
    return `header ${JSON.stringify(name)} has an invalid value: only visible Latin-1 text, spaces and tabs (no CR, LF, NUL or other control characters)`;
  }
  return undefined;
}

/** Why `method` may not be granted, or undefined when it may: an uppercase token, not CONNECT or TRACE. */
export function methodProblem(method: string): string | undefined {
  if (!TOKEN.test(method)) return `methods entry ${JSON.stringify(method)} is not an HTTP method`;
  if (method !== method.toUpperCase()) return `methods entry ${JSON.stringify(method)} must be uppercase: ${JSON.stringify(method.toUpperCase())}`;
  if (NEVER_METHODS.has(method)) return `methods entry ${JSON.stringify(method)} is not allowed for plugins`;
  return undefined;
}
