// What a guest can do under its lock besides locking: ask what it was granted,
// read its config, log at a level, call the embedder's host functions and make
// HTTP requests that carry a lock's fence to the resource (see abi/ABI.md,
// "Capabilities").
//
//     import { configValue, log, httpRequest, Lock } from "lockhost";
//
//     const url = configValue("ledger_url");            // null when not set
//     log.info("posting to " + url!);
//     const r = httpRequest("POST", url! + "/entries", ["content-type: application/json"],
//                           String.UTF8.encode('{"amount":100}'), lock);   // lock's fence goes along
//     if (r.error) log.warn(r.error!.toString());
//     else if (r.status == 409) log.warn("refused: a newer holder wrote first");

import { FLAG_FENCE, LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARN, INTERNAL } from "../status";
import { config_get, http_request, lockhost_capability, lockhost_last_reply, log_write } from "./bindings";
import { Lock, LockError, errorFromCode } from "./lock";

/** Whether the operator granted this plugin `name`: `"http"`, a host function namespace; `"config"` and `"log"` always. */
export function capability(name: string): bool {
  const n = String.UTF8.encode(name);
  return lockhost_capability(changetype<usize>(n), n.byteLength) == 1;
}

/** The plugin's config value `key` ([plugins.config] in the operator's TOML), or null when it has none. */
export function configValue(key: string): string | null {
  const k = String.UTF8.encode(key);
  let buf = new ArrayBuffer(128);
  for (let attempt = 0; attempt < 2; attempt++) {
    const n = config_get(changetype<usize>(k), k.byteLength, changetype<usize>(buf), buf.byteLength);
    if (n < 0) return null;
    if (n <= buf.byteLength) return String.UTF8.decodeUnsafe(changetype<usize>(buf), <usize>n);
    buf = new ArrayBuffer(n);
  }
  return null;
}

/** Log lines through the host's logger, tagged with the plugin; below the plugin's log_level they cost nothing. */
export namespace log {
  export function debug(message: string): void {
    write(LOG_DEBUG, message);
  }
  export function info(message: string): void {
    write(LOG_INFO, message);
  }
  export function warn(message: string): void {
    write(LOG_WARN, message);
  }
  export function error(message: string): void {
    write(LOG_ERROR, message);
  }
  export function write(level: i32, message: string): void {
    const m = String.UTF8.encode(message);
    log_write(level, changetype<usize>(m), m.byteLength);
  }
}

/** The reply of a call with effects (a host function, an HTTP request): bytes, or the error. */
export class BytesResult {
  /** The reply; empty when `error` is set. */
  readonly bytes: ArrayBuffer;
  readonly error: LockError | null;
  constructor(bytes: ArrayBuffer, error: LockError | null) {
    this.bytes = bytes;
    this.error = error;
  }
  get ok(): bool {
    return this.error === null;
  }
  /** The reply as UTF-8 text. */
  text(): string {
    return String.UTF8.decode(this.bytes);
  }
}

/**
 * The reply of a host function or raw `http_request` call that returned `n`
 * into `buf`: the bytes written there, the kept reply when it was longer than
 * `buf` (read with `last_reply`, the call is not made again), or the error when
 * `n < 0`.
 */
export function reply(n: i32, buf: ArrayBuffer): BytesResult {
  if (n < 0) return new BytesResult(new ArrayBuffer(0), errorFromCode(n));
  if (n <= buf.byteLength) return new BytesResult(buf.slice(0, n), null);
  const all = new ArrayBuffer(n);
  const m = lockhost_last_reply(changetype<usize>(all), n);
  if (m != n) return new BytesResult(new ArrayBuffer(0), new LockError(INTERNAL, "lockhost SDK: the kept reply changed size"));
  return new BytesResult(all, null);
}

/** An HTTP response, or the error that stopped the request. */
export class HttpResponse {
  /** The status code; 0 when `error` is set. */
  readonly status: i32;
  /** The header lines, `name: value` each (names lowercase). */
  readonly headers: string[];
  readonly body: ArrayBuffer;
  readonly error: LockError | null;
  constructor(status: i32, headers: string[], body: ArrayBuffer, error: LockError | null) {
    this.status = status;
    this.headers = headers;
    this.body = body;
    this.error = error;
  }
  /** The body as UTF-8 text. */
  text(): string {
    return String.UTF8.decode(this.body);
  }
  /** The first value of header `name` (lowercase), or null. */
  header(name: string): string | null {
    const prefix = name.toLowerCase() + ": ";
    for (let i = 0; i < this.headers.length; i++) if (this.headers[i].startsWith(prefix)) return this.headers[i].substring(prefix.length);
    return null;
  }
}

/**
 * Sends an HTTP request through the host, within what the operator's
 * [plugins.http] allows. `headers` are `"Name: value"` lines; `body` may be
 * null. With `fence` (a lock this guest holds) the host adds the
 * `lockhost-lock` and `lockhost-fence` headers so the resource can refuse a
 * stale holder; `scheduleFence` sends the fence of the scheduled call's lock
 * instead.
 */
export function httpRequest(
  method: string,
  url: string,
  headers: string[] = [],
  body: ArrayBuffer | null = null,
  fence: Lock | null = null,
  scheduleFence: bool = false,
): HttpResponse {
  let head = method + " " + url;
  for (let i = 0; i < headers.length; i++) head += "\n" + headers[i];
  const h = String.UTF8.encode(head);
  const bodyPtr = body ? changetype<usize>(body) : 0;
  const bodyLen = body ? body.byteLength : 0;
  const handle = fence ? fence.handle : 0;
  const flags = fence || scheduleFence ? FLAG_FENCE : 0;
  const buf = new ArrayBuffer(4096);
  const n = http_request(changetype<usize>(h), h.byteLength, bodyPtr, bodyLen, handle, flags, changetype<usize>(buf), buf.byteLength);
  const r = reply(n, buf);
  if (r.error) return new HttpResponse(0, [], new ArrayBuffer(0), r.error);
  return parseResponse(r.bytes);
}

/** `status\nname: value\n...\n\nbody` into its parts. */
function parseResponse(bytes: ArrayBuffer): HttpResponse {
  const view = Uint8Array.wrap(bytes);
  let end = -1;
  for (let i = 0; i + 1 < view.length; i++) {
    if (view[i] == 10 && view[i + 1] == 10) {
      end = i;
      break;
    }
  }
  if (end < 0) return new HttpResponse(0, [], new ArrayBuffer(0), new LockError(INTERNAL, "lockhost SDK: a response without its blank line"));
  const lines = String.UTF8.decodeUnsafe(changetype<usize>(bytes), <usize>end).split("\n");
  const status = I32.parseInt(lines[0]);
  return new HttpResponse(status, lines.slice(1), bytes.slice(end + 2), null);
}
