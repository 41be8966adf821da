// The shapes the http capability shares with the ABI glue (which decodes a guest's request and
// encodes the response) and with the config schema (which builds the grant from TOML).

/**
 * What the operator granted one plugin (`[plugins.http]`), already validated by the config
 * schema with hostPatternProblem, cidrProblem, methodProblem and headerProblem.
 */
export interface HttpGrant {
  /**
   * `allowed_hosts`: "api.example.com" (exact, case-insensitive) or "*.example.com" (any
   * subdomain at any depth, not the apex); IPv4/IPv6 literals as exact entries ("127.0.0.1",
   * "[::1]" or "::1").
   */
  readonly allowedHosts: readonly string[];
  /** `methods`: uppercase, e.g. ["GET", "POST"]. */
  readonly methods: readonly string[];
  /** `timeout_ms`: the whole request, redirects and body download included. */
  readonly timeoutMs: number;
  /** `max_request_bytes`: the request body cap. */
  readonly maxRequestBytes: number;
  /** `max_response_bytes`: the response body cap. */
  readonly maxResponseBytes: number;
  /** `headers`: sent with every request. Values are secrets: never logged or echoed in an error. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * `allow_private_ranges`: CIDRs reachable although private, loopback, link-local, etc.
   * (e.g. ["127.0.0.0/8"]). Empty: only public addresses.
   */
  readonly allowPrivateRanges: readonly string[];
  /** `max_redirects`: hops followed before the request fails (the config's default is 5). */
  readonly maxRedirects: number;
}

/** A request as the guest made it. */
export interface GuestHttpRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: readonly (readonly [string, string])[];
  /** Absent or empty: no body. */
  readonly body?: Uint8Array;
}

/** The response handed back to the guest; header names are lowercase. */
export interface GuestHttpResponse {
  readonly status: number;
  /** One pair per header; a repeated `set-cookie` is one pair per cookie, other repeats are joined by ", ". */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: Uint8Array;
}

/** How one request is bounded and what the host adds to it. */
export interface HttpRequestOptions {
  /** Aborts the request (host shutdown, the guest's call time limit): CANCELLED. */
  readonly signal?: AbortSignal;
  /** What is left of the call's time, when lower than the grant's `timeout_ms`. */
  readonly timeoutMs?: number;
  /**
   * Headers the host itself sends (the fence: `lockhost-fence`, `lockhost-lock`), on every hop.
   * Not checked against the reserved names a guest may not use, since the host owns them.
   */
  readonly hostHeaders?: readonly (readonly [string, string])[];
}

/** One plugin's HTTP client: created per plugin, closed with it. */
export interface HttpClient {
  /**
   * Sends `req` within the grant, following redirects by hand so every hop is checked again.
   * Rejects with a LockhostError: PERMISSION_DENIED, INVALID_ARGUMENT, TIMEOUT, TOO_LARGE,
   * CALL_FAILED, CANCELLED (or CLOSED after close()).
   */
  request(req: GuestHttpRequest, options: HttpRequestOptions): Promise<GuestHttpResponse>;
  /** Frees the connection pool; requests in flight fail. */
  close(): Promise<void>;
}
