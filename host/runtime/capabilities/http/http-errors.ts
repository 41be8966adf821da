// Every error the http capability raises, worded once: each names the plugin and the option at
// fault (the TOML name), and none quotes a grant header value.
import { LockhostError } from "../../../../kit/errors.js";
import type { GrantRules } from "./grant-rules.js";
import { tomlList } from "./toml-list.js";

/** A host outside `allowed_hosts` (the first URL's or a redirect's). */
export function hostDenied(rules: GrantRules, host: string, redirectedFrom?: string): LockhostError {
  const via = redirectedFrom === undefined ? "" : ` (redirected from ${redirectedFrom})`;
  return new LockhostError("PERMISSION_DENIED", `plugin ${rules.plugin} may not reach ${JSON.stringify(host)}${via}: allowed_hosts = ${rules.hosts}`);
}

/** An allowed host at an address that is not public and not in `allow_private_ranges`. */
export function addressDenied(rules: GrantRules, host: string, addresses: readonly string[]): LockhostError {
  const at = addresses.length === 1 ? `address ${addresses[0]}` : `addresses ${addresses.join(", ")}`;
  return new LockhostError(
    "PERMISSION_DENIED",
    `plugin ${rules.plugin} may not reach ${JSON.stringify(host)} at ${at}: not a public address, and not in allow_private_ranges = ${rules.addresses}`,
  );
}

/** A method outside `methods` (the guest's or the one a redirect turns it into). */
export function methodDenied(rules: GrantRules, method: string): LockhostError {
  return new LockhostError(
    "PERMISSION_DENIED",
    `plugin ${rules.plugin} may not use method ${JSON.stringify(method)}: methods = ${tomlList(rules.grant.methods)}`,
  );
}

/** A request the guest got wrong. */
export function invalidRequest(rules: GrantRules, problem: string): LockhostError {
  return new LockhostError("INVALID_ARGUMENT", `plugin ${rules.plugin}: http request: ${problem}`);
}

/** No complete response within `ms`: the grant's `timeout_ms`, or what was left of the call's time. */
export function timedOut(rules: GrantRules, origin: string, ms: number): LockhostError {
  const source =
    ms < rules.grant.timeoutMs ? `what was left of the call's time; timeout_ms = ${rules.grant.timeoutMs}` : `timeout_ms = ${rules.grant.timeoutMs}`;
  return new LockhostError("TIMEOUT", `plugin ${rules.plugin}: http request to ${origin} got no complete response within ${ms} ms (${source})`, {
    details: { timeoutMs: ms },
  });
}

/** A response body over `max_response_bytes`; `seen` says how that was known. */
export function tooLarge(rules: GrantRules, origin: string, seen: string): LockhostError {
  return new LockhostError(
    "TOO_LARGE",
    `plugin ${rules.plugin}: the response from ${origin} is over max_response_bytes = ${rules.grant.maxResponseBytes} (${seen})`,
  );
}

/** More redirects than `max_redirects`. */
export function tooManyRedirects(rules: GrantRules, origin: string): LockhostError {
  return new LockhostError(
    "CALL_FAILED",
    `plugin ${rules.plugin}: http request to ${origin} was redirected more than max_redirects = ${rules.grant.maxRedirects} times`,
  );
}

/** The connection or the exchange failed (refused, reset, name not found, TLS). */
export function callFailed(rules: GrantRules, origin: string, cause: unknown): LockhostError {
  const why = rules.scrub(causeText(cause));
  return new LockhostError("CALL_FAILED", `plugin ${rules.plugin}: http request to ${origin} failed: ${why}`);
}

/** The caller's signal aborted the request. */
export function cancelled(rules: GrantRules, origin: string, reason: unknown): LockhostError {
  const why = reason instanceof Error ? `: ${rules.scrub(reason.message)}` : "";
  return new LockhostError("CANCELLED", `plugin ${rules.plugin}: http request to ${origin} was cancelled${why}`);
}

/**
 * A cause's message with its code and its own cause's message (Node's "connect ECONNREFUSED
 * ..." can sit one level down in undici's errors). An OpenSSL error gives its `reason` ("wrong
 * version number") rather than its message, a line of library internals.
 */
function causeText(cause: unknown): string {
  if (!(cause instanceof Error)) return String(cause);
  const { code, reason } = cause as Error & { code?: unknown; reason?: unknown };
  const message = typeof reason === "string" && /:error:[0-9A-F]+:/.test(cause.message) ? `TLS: ${reason}` : cause.message.trim();
  const inner = cause.cause instanceof Error ? ` (${causeText(cause.cause)})` : "";
  return `${message}${typeof code === "string" && !message.includes(code) ? ` [${code}]` : ""}${inner}`;
}
