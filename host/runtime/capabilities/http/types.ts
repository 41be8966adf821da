// The shapes the http capability shares with the ABI glue (which decodes a guest's request and
// encodes the response) and with the config schema (which builds the grant from TOML, config.ts).

export type { HttpGrant } from "./config.js";

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
