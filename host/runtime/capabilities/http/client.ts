// One plugin's HTTP client: the grant checks, one undici Agent (its connection pool, with the
// address check in its DNS lookup), redirects followed by hand, and the time and size limits.
// undici is imported on the first request, so a host whose plugins have no http grant never
// loads it.
import type { Agent } from "undici";
import { LockhostError } from "../../../../kit/errors.js";
import { GrantRules } from "./grant-rules.js";
import { guardedLookup } from "./guarded-lookup.js";
import { checkRequest } from "./guest-request.js";
import { cancelled, timedOut, tooManyRedirects } from "./http-errors.js";
import { readBody } from "./read-body.js";
import { nextHop, redirectLocation } from "./redirects.js";
import { RequestDeadline } from "./request-deadline.js";
import { headerPairs } from "./response-headers.js";
import type { GuestHttpRequest, GuestHttpResponse, HttpClient, HttpGrant, HttpRequestOptions } from "./types.js";

/** setTimeout fires at once for longer delays. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * The HTTP client of plugin `plugin` under `grant` (already validated by the config schema).
 * One per plugin: its connections are reused across the plugin's requests; close() frees them.
 */
export function createHttpClient(plugin: string, grant: HttpGrant): HttpClient {
  return new PluginHttpClient(new GrantRules(plugin, grant));
}

class PluginHttpClient implements HttpClient {
  #agent: Agent | undefined;
  #loading: Promise<Agent> | undefined;
  #closed = false;

  constructor(readonly rules: GrantRules) {}

  async request(req: GuestHttpRequest, options: HttpRequestOptions): Promise<GuestHttpResponse> {
    if (this.#closed) throw this.#closedError();
    const rules = this.rules;
    let hop = checkRequest(rules, req);
    if (options.signal?.aborted) throw cancelled(rules, hop.url.origin, options.signal.reason);
    const ms = Math.min(options.timeoutMs ?? Infinity, rules.grant.timeoutMs, MAX_TIMER_MS);
    if (!(ms > 0)) throw timedOut(rules, hop.url.origin, 0);
    const agent = this.#agent ?? (await this.#load());
    const hostHeaders = options.hostHeaders === undefined ? [] : options.hostHeaders.flat();
    const deadline = new RequestDeadline(rules, hop.url.origin, ms, options.signal);
    try {
      for (let redirects = 0; ; redirects++) {
        const res = await agent.request({
          origin: hop.url.origin,
          path: `${hop.url.pathname}${hop.url.search}`,
          method: hop.method,
          headers: rules.headerList.concat(hop.headers, hostHeaders),
          body: hop.body ?? null,
          signal: deadline,
        });
        const location = redirectLocation(res.statusCode, res.headers.location);
        if (location === undefined) {
          const body = await readBody(rules, hop.url.origin, hop.method, res.headers, res.body);
          return { status: res.statusCode, headers: headerPairs(res.headers), body };
        }
        // Drained (up to undici's small limit) so the connection can serve the next hop.
        await res.body.dump();
        if (redirects >= rules.grant.maxRedirects) throw tooManyRedirects(rules, hop.url.origin);
        hop = nextHop(rules, hop, res.statusCode, location);
        deadline.origin = hop.url.origin;
      }
    } catch (err) {
      throw this.#closed ? this.#closedError() : deadline.explain(err);
    } finally {
      deadline.end();
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    const agent = this.#agent ?? (await this.#loading?.catch(() => undefined));
    // destroy, not close: host shutdown must not wait on a slow remote's trickling body.
    await agent?.destroy();
  }

  async #load(): Promise<Agent> {
    this.#loading ??= import("undici").then(
      ({ Agent }) =>
        new Agent({
          connect: { lookup: guardedLookup(this.rules) },
          // The request's own deadline (timeout_ms) bounds headers and body; undici's 300 s
          // defaults would turn a longer grant into a CALL_FAILED.
          headersTimeout: 0,
          bodyTimeout: 0,
        }),
    );
    const agent = await this.#loading;
    if (this.#closed) throw this.#closedError();
    this.#agent = agent;
    return agent;
  }

  #closedError(): LockhostError {
    return new LockhostError("CLOSED", `plugin ${this.rules.plugin}: its http client is closed`);
  }
}
