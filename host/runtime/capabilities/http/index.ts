// PLACEHOLDER until the i23-http branch lands: the API the guarded client exports.
export interface HttpGrant {
  readonly allowedHosts: readonly string[];
  readonly methods: readonly string[];
  readonly timeoutMs: number;
  readonly maxRequestBytes: number;
  readonly maxResponseBytes: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly allowPrivateRanges: readonly string[];
  readonly maxRedirects: number;
}
export interface GuestHttpRequest { readonly method: string; readonly url: string; readonly headers: readonly (readonly [string, string])[]; readonly body?: Uint8Array }
export interface GuestHttpResponse { readonly status: number; readonly headers: readonly (readonly [string, string])[]; readonly body: Uint8Array }
export function hostPatternProblem(_pattern: string): string | undefined { return undefined; }
export function cidrProblem(_cidr: string): string | undefined { return undefined; }
export function methodProblem(_method: string): string | undefined { return undefined; }
export function headerProblem(_name: string, _value: string): string | undefined { return undefined; }
export function createHttpClient(_plugin: string, _grant: HttpGrant): HttpClient { throw new Error("placeholder"); }
export interface HttpClient {
  request(req: GuestHttpRequest, options: { signal?: AbortSignal; timeoutMs?: number }): Promise<GuestHttpResponse>;
  close(): Promise<void>;
}
