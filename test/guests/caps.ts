// Test guest for what a guest can do under its lock: host functions (module "billing"),
// fenced HTTP, config values, log levels and the capability query. Results are traced (or
// returned) so the guest suite can read them in both runtimes.
import {
  Lock,
  GLOBAL,
  KEEP,
  tryLock,
  lastError,
  capability,
  configValue,
  log,
  reply,
  httpRequest,
  http_request,
  FLAG_FENCE,
} from "../../abi/assembly/index";

export { lockhost_abi_version, lockhost_alloc, lockhost_free } from "../../abi/assembly/index";

// @ts-ignore: decorator
@external("billing", "echo")
declare function billing_echo(inPtr: usize, inLen: i32, bufPtr: usize, bufCap: i32): i32;
// @ts-ignore: decorator
@external("billing", "wait")
declare function billing_wait(inPtr: usize, inLen: i32, bufPtr: usize, bufCap: i32): i32;
// @ts-ignore: decorator
@external("billing", "charge")
declare function billing_charge(inPtr: usize, inLen: i32, bufPtr: usize, bufCap: i32): i32;

/** 1 when granted, 0 when not. */
export function hasCapability(name: string): i32 {
  return capability(name) ? 1 : 0;
}

/** Traces `config <key> = <value>` (or `null`); returns the value's length, or -1. */
export function configOf(key: string): i32 {
  const v = configValue(key);
  trace("config " + key + " = " + (v === null ? "null" : v!));
  return v === null ? -1 : v!.length;
}

/** One line at every level, and a trace. */
export function logAll(): void {
  log.debug("a debug line");
  log.info("an info line");
  log.warn("a warn line");
  log.error("an error line");
  trace("a trace line");
}

/** log.write with a level that is none: returns its code. */
export function logBadLevel(): i32 {
  const m = String.UTF8.encode("x");
  return log_write_raw(9, changetype<usize>(m), m.byteLength);
}

// @ts-ignore: decorator
@external("log", "write")
declare function log_write_raw(level: i32, msgPtr: usize, msgLen: i32): i32;

/** Calls billing.echo with `text` into a buffer of `cap` bytes; traces the reply; returns its length or -code. */
export function echo(text: string, cap: i32): i32 {
  const input = String.UTF8.encode(text);
  const buf = new ArrayBuffer(cap);
  const n = billing_echo(changetype<usize>(input), input.byteLength, changetype<usize>(buf), cap);
  const r = reply(n, buf);
  if (r.error) {
    trace("echo failed: " + r.error!.toString());
    return n;
  }
  const t = r.text();
  trace("echo " + (t.length > 40 ? t.substring(0, 20) + "…(" + t.length.toString() + ")" : t));
  return r.bytes.byteLength;
}

/** Takes global lock `key` (kept) and calls billing.charge: the function sees the lock and its fence. Returns the reply's length or -code. */
export function charge(key: string, amount: i32): i32 {
  const r = tryLock(key, 10_000, GLOBAL | KEEP);
  const lock = r.lock;
  if (!lock) return -100;
  const input = String.UTF8.encode(amount.toString());
  const buf = new ArrayBuffer(64);
  const n = billing_charge(changetype<usize>(input), input.byteLength, changetype<usize>(buf), 64);
  const res = reply(n, buf);
  if (res.error) trace("charge failed: " + res.error!.toString());
  else trace("charge " + res.text() + " fence " + lock.fence().toString());
  lock.release();
  return n;
}

/** billing.echo with an input pointer outside memory: the code. */
export function echoBadPointer(): i32 {
  const buf = new ArrayBuffer(16);
  const n = billing_echo(<usize>0x7fff0000, 10, changetype<usize>(buf), 16);
  trace("bad pointer: " + lastError());
  return n;
}

/** GET `url`; traces `status <n> <body>` or the error; returns the status or -code. */
export function get(url: string): i32 {
  const r = httpRequest("GET", url);
  if (r.error) {
    trace("get failed: " + r.error!.toString());
    return -r.error!.code;
  }
  const type = r.header("content-type");
  const shown = r.body.byteLength > 60 ? "(" + r.body.byteLength.toString() + " bytes)" : r.text();
  trace("status " + r.status.toString() + " " + (type === null ? "" : type!) + " " + shown);
  return r.status;
}

/** POST `body` to `url` with `header` ("Name: value", or "" for none), under global lock `key` when given (its fence sent). */
export function post(url: string, body: string, header: string, key: string): i32 {
  let lock: Lock | null = null;
  if (key.length > 0) {
    const t = tryLock(key, 10_000, GLOBAL);
    lock = t.lock;
    if (!lock) return -100;
  }
  const headers: string[] = header.length > 0 ? [header] : [];
  const r = httpRequest("POST", url, headers, String.UTF8.encode(body), lock);
  if (r.error) {
    trace("post failed: " + r.error!.toString());
    return -r.error!.code;
  }
  trace("status " + r.status.toString() + " " + r.text() + (lock ? " fence " + lock!.fence().toString() : ""));
  return r.status;
}

/** POST with the scheduled call's lock (handle 0) as its fence. */
export function postScheduleFenced(url: string): i32 {
  const r = httpRequest("POST", url, [], String.UTF8.encode("tick"), null, true);
  if (r.error) {
    trace("post failed: " + r.error!.toString());
    return -r.error!.code;
  }
  trace("status " + r.status.toString() + " " + r.text());
  return r.status;
}

/** A raw request whose head is `head` exactly (bad input cases); returns the code; traces last_error. */
export function rawRequest(head: string, handle: i32, flags: i32): i32 {
  const h = String.UTF8.encode(head);
  const buf = new ArrayBuffer(64);
  const n = http_request(changetype<usize>(h), h.byteLength, 0, 0, handle, flags, changetype<usize>(buf), 64);
  if (n < 0) trace("request failed: " + lastError());
  return n;
}

/** A request head with invalid UTF-8 (a lone 0xff byte in a header). */
export function badUtf8Request(): i32 {
  const h = new Uint8Array(20);
  const text = "GET http://a/\nX: ";
  for (let i = 0; i < text.length; i++) h[i] = <u8>text.charCodeAt(i);
  h[text.length] = 0xff;
  const buf = new ArrayBuffer(16);
  const n = http_request(h.dataStart, text.length + 1, 0, 0, 0, 0, changetype<usize>(buf), 16);
  trace("request failed: " + lastError());
  return n;
}

/** A request whose fence handle this guest was never given. */
export function fencedBadHandle(url: string): i32 {
  const h = String.UTF8.encode("GET " + url);
  const buf = new ArrayBuffer(16);
  const n = http_request(changetype<usize>(h), h.byteLength, 0, 0, 12345, FLAG_FENCE, changetype<usize>(buf), 16);
  trace("request failed: " + lastError());
  return n;
}

/** Calls billing.wait, which answers only when its signal aborts; traces and returns the code. */
export function waitForHost(): i32 {
  const buf = new ArrayBuffer(16);
  const n = billing_wait(0, 0, changetype<usize>(buf), 16);
  trace("wait ended: " + n.toString() + " " + lastError());
  return n;
}
