// An Extism plugin's import modules, for either runtime: the kernel (`extism:host/env`), whose
// http_request goes through the plugin's HTTP grant (lockhost's allow-list, limits and fence
// headers: the `http.request` operation), and the lock functions (`extism:host/user`), each a
// lock operation of the table. Those two kinds reach the host the way the runtime's native
// imports do (`Remote`: the inline runtime calls the lock code and suspends, the worker blocks
// on its channel), so they behave the same as a native guest's calls.
import { EXTISM_KERNEL_MODULE, EXTISM_USER_MODULE, LOCK_FUNCTIONS, type LockFunction } from "../../../abi/extism.js";
import { OPS, type OpSpec } from "../../../abi/ops.js";
import { FLAG_FENCE, MAX_INPUT_BYTES, MAX_REQUEST_HEAD_BYTES } from "../../../abi/status.js";
import { codeOfStatus } from "../../../kit/errors.js";
import type { ImportModule } from "../guest-env.js";
import { type ExtismKernel, KernelError } from "./kernel.js";
import { lockArgs, lockReply } from "./lock-json.js";

/** What a remote operation answered: its result, and its reply's bytes and text (read at once: valid until the next call). */
export interface RemoteReply {
  readonly result: number;
  readonly bytes: () => Uint8Array;
  /** The reply as text, undefined when it has none. */
  readonly text: () => string | undefined;
}

/**
 * How the runtime makes one operation of the table on the host: the row's index in OPS, its
 * number and string arguments in ABI order (lengths already checked); its reply goes to
 * `answer`, at once when the operation answers at once (no promise more than the operation's).
 */
export type Remote = <T>(index: number, numbers: readonly number[], strings: readonly Uint8Array[], answer: (reply: RemoteReply) => T) => T | Promise<T>;

/** The index of `http.request` in OPS. */
const HTTP_INDEX = (OPS as readonly OpSpec[]).findIndex((op) => op.module === "http" && op.name === "request");

const utf8 = new TextEncoder();
const lenient = new TextDecoder("utf-8");

/**
 * The import modules of an Extism plugin. `wrap` makes a function that may answer later into
 * an import (the inline runtime: WebAssembly.Suspending); the worker's answer at once.
 */
export function extismImports(kernel: ExtismKernel, remote: Remote, wrap: (fn: (...args: never[]) => unknown) => unknown): Record<string, ImportModule> {
  const user: ImportModule = Object.create(null) as ImportModule;
  for (const fn of LOCK_FUNCTIONS) user[fn.name] = wrap((addr: bigint) => lockCall(kernel, remote, fn, addr));
  return {
    [EXTISM_KERNEL_MODULE]: { ...kernel.imports(), http_request: wrap((req: bigint, body: bigint) => httpRequest(kernel, remote, req, body)) },
    [EXTISM_USER_MODULE]: user,
  };
}

/** One lock function: its JSON arguments read from the kernel, the operation made, its JSON reply stored there. */
function lockCall(kernel: ExtismKernel, remote: Remote, fn: LockFunction, addr: bigint): bigint | Promise<bigint> {
  const args = lockArgs(fn, kernel.read(addr));
  if (args instanceof Uint8Array) return kernel.store(args);
  return remote(fn.index, args.numbers, args.strings, (r) => kernel.store(lockReply(fn, r.result, r.text())));
}

/** A reply's bytes as text, undefined when empty. */
export const replyText = (bytes: Uint8Array): string | undefined => (bytes.byteLength === 0 ? undefined : lenient.decode(bytes));

/**
 * http_request: the request JSON (`method`, `url`, `headers`; lockhost's own `fence_handle`:
 * send that lock's fence headers) and the body block in; the response body's block out, its
 * status and headers kept for http_status_code and http_headers. A request the grant refuses
 * or that fails traps the call, as under Extism.
 */
function httpRequest(kernel: ExtismKernel, remote: Remote, reqAddr: bigint, bodyAddr: bigint): bigint | Promise<bigint> {
  let req: { method?: unknown; url?: unknown; headers?: unknown; header?: unknown; fence_handle?: unknown };
  try {
    req = JSON.parse(kernel.text(reqAddr, "http_request")) as typeof req;
  } catch (err) {
    throw err instanceof KernelError ? err : new KernelError(`http_request: the request is not JSON: ${(err as Error).message}`);
  }
  const method = typeof req.method === "string" ? req.method.toUpperCase() : "GET";
  if (typeof req.url !== "string") throw new KernelError('http_request: the request has no "url"');
  const headers = (req.headers ?? req.header ?? {}) as Record<string, unknown>;
  let head = `${method} ${req.url}`;
  for (const [name, value] of Object.entries(headers)) head += `\n${name}: ${String(value)}`;
  const headBytes = utf8.encode(head);
  if (headBytes.byteLength > MAX_REQUEST_HEAD_BYTES)
    throw new KernelError(`http_request: the request line and headers are over ${MAX_REQUEST_HEAD_BYTES} bytes`);
  const fence = req.fence_handle;
  if (fence !== undefined && (typeof fence !== "number" || !Number.isInteger(fence))) throw new KernelError("http_request: fence_handle must be a lock handle");
  const body = BigInt.asUintN(64, bodyAddr) === 0n || method === "GET" || method === "HEAD" ? EMPTY : (kernel.read(bodyAddr) ?? EMPTY);
  if (body.byteLength > MAX_INPUT_BYTES) throw new KernelError(`http_request: the body is over ${MAX_INPUT_BYTES} bytes`);
  const numbers = fence === undefined ? [0, 0] : [fence, FLAG_FENCE];
  return remote(HTTP_INDEX, numbers, [headBytes, body], (r) => {
    if (r.result < 0) throw new KernelError(`http_request to ${req.url as string} failed: ${codeOfStatus(r.result) ?? "INTERNAL"}: ${r.text() ?? ""}`);
    const res = parseResponse(r.bytes());
    kernel.httpStatus = res.status;
    kernel.httpHeaders = res.headers;
    return kernel.store(res.body);
  });
}

const EMPTY = new Uint8Array(0);

/** The response envelope of `http.request` (http-envelope.ts): status, header lines, a blank line, the body. */
function parseResponse(bytes: Uint8Array): { status: number; headers: Record<string, string>; body: Uint8Array } {
  let end = 0;
  while (end + 1 < bytes.byteLength && !(bytes[end] === 10 && bytes[end + 1] === 10)) end++;
  const lines = lenient.decode(bytes.subarray(0, end)).split("\n");
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon > 0) headers[line.slice(0, colon)] = line.slice(colon + 1).trim();
  }
  return { status: Number(lines[0]), headers, body: bytes.slice(end + 2) };
}
