// What one guest instance may do under its lock besides locking: HTTP requests through its
// plugin's grant, carrying a held lock's fence when asked, and the embedder's host functions it
// imports. Both turn every outcome into the ABI's reply (bytes, or -code and a message) and end
// when the guest stops waiting (GuestLocks.signal: shutdown, time limit, restart).
import type { Logger } from "pino";
import { FENCE_HEADER, KIND_HEADER, lockHeader } from "../../../fence/headers.js";
import { FLAG_FENCE } from "../../../abi/status.js";
import { LockhostError } from "../../../kit/errors.js";
import type { AbiReply, GuestLocks } from "../guest-locks.js";
import type { CallContext } from "../call-context.js";
import { runHostFunction, type HeldLock, type HostFunction, type HostFunctionContext } from "./functions.js";
import { encodeResponse, parseRequestHead } from "./http-envelope.js";
import { createHttpClient, type HttpClient, type HttpGrant } from "./http/index.js";
import { traceHostFunction, traceHttp } from "../../tracing/tracer.js";

// The headers a fenced request carries (the lock's full name, its fence, its kind) are the ones
// lockhost/fence reads: one definition for the sender and the resource.
export { ENCODED_LOCK_HEADER, FENCE_HEADER, KIND_HEADER, LOCK_HEADER } from "../../../fence/headers.js";

/** A host function a guest imports, bound to the embedder's implementation. */
export interface BoundFunction {
  readonly module: string;
  readonly name: string;
  readonly fn: HostFunction;
  /** `module.name`, made once. */
  readonly qualified: string;
}

/** What a guest's capabilities are made of. */
export interface GuestCapabilitiesOptions {
  readonly plugin: string;
  readonly node: string;
  readonly locks: GuestLocks;
  readonly log: Logger;
  /** Absent: the plugin may not make HTTP requests. */
  readonly http?: { readonly grant: HttpGrant; readonly client: HttpClient };
  /** The guest's host function imports, in the order its runtime numbers them. */
  readonly functions: readonly BoundFunction[];
}

/**
 * What one instance of a plugin needs for what its entry grants, made per instance and closed
 * with it (GuestCapabilities.close): its HTTP client when `[plugins.http]` is there.
 */
export function grantedServices(plugin: string, entry: { readonly http?: HttpGrant | undefined }): Pick<GuestCapabilitiesOptions, "http"> {
  return entry.http ? { http: { grant: entry.http, client: createHttpClient(plugin, entry.http) } } : {};
}

/** One guest instance's HTTP requests and host function calls. */
export class GuestCapabilities {
  readonly #o: GuestCapabilitiesOptions;

  constructor(options: GuestCapabilitiesOptions) {
    this.#o = options;
  }

  /** `http.request`: the response envelope, or -code. */
  async http(head: string, body: Uint8Array, handle: number, flags: number, ctx: CallContext): Promise<AbiReply> {
    const { locks, plugin, http } = this.#o;
    try {
      locks.checkNotCancelled();
      if (!http) {
        throw new LockhostError(
          "PERMISSION_DENIED",
          `plugin ${plugin} may not make HTTP requests: its [[plugins]] entry has no [plugins.http] table (allowed_hosts, methods, ...)`,
        );
      }
      const req = parseRequestHead(head);
      let hostHeaders: [string, string][] | undefined;
      let held: HeldLock | undefined;
      if ((flags & FLAG_FENCE) !== 0) {
        held = locks.fenceOf(handle);
        // The name exactly, whatever characters its key has: as its UTF-8 bytes, or percent-encoded
        // when a header value would lose some (`ledger ` is not `ledger`): fence/headers.ts.
        hostHeaders = [[...lockHeader(held.name)], [FENCE_HEADER, String(held.fence)], [KIND_HEADER, held.kind]];
      } else if (handle !== 0) {
        throw new LockhostError("INVALID_ARGUMENT", `handle ${handle} is given without FLAG_FENCE; pass 0, or FLAG_FENCE to send that lock's fence`);
      }
      const timeoutMs = this.#timeoutMs(http.grant.timeoutMs, ctx);
      // Under a CLIENT span whose traceparent (when a propagator is registered) goes out beside the fence.
      const res = await traceHttp(plugin, req.method, req.url, req.headers, held, (traceHeaders) => {
        const sent = traceHeaders.length > 0 ? [...(hostHeaders ?? []), ...traceHeaders] : hostHeaders;
        return http.client.request(
          { method: req.method, url: req.url, headers: req.headers, ...(body.byteLength > 0 && { body }) },
          { signal: locks.signal, timeoutMs, ...(sent && { hostHeaders: sent }) },
        );
      });
      return bytesReply(encodeResponse(res));
    } catch (err) {
      return locks.failure(err);
    }
  }

  /** A host function call: its reply, or -code; at once when the function answers at once. */
  call(index: number, input: Uint8Array, _ctx: CallContext): AbiReply | Promise<AbiReply> {
    const { locks, functions } = this.#o;
    const bound = functions[index];
    if (!bound) return locks.failure(new Error(`host function #${index} of plugin ${this.#o.plugin} does not exist`));
    const ctx = this.#context(bound);
    try {
      locks.checkNotCancelled();
      const out = traceHostFunction(this.#o.plugin, bound.module, bound.name, () => runHostFunction(bound.fn, input, ctx));
      return out instanceof Promise ? out.then(bytesReply, (err: unknown) => this.#failed(ctx, err)) : bytesReply(out);
    } catch (err) {
      return this.#failed(ctx, err);
    }
  }

  /** A function's context; the locks it names are read only if the function asks for them. */
  #context(bound: BoundFunction): HostFunctionContext {
    const { locks, plugin, node } = this.#o;
    return new CallInfo(plugin, node, bound.qualified, locks);
  }

  #failed(ctx: HostFunctionContext, err: unknown): AbiReply {
    const e = err as LockhostError;
    this.#o.log.warn({ function: ctx.function, code: e.code, err: e.message }, "a host function call failed");
    return this.#o.locks.failure(err);
  }

  /** Frees the HTTP client's connections. */
  async close(): Promise<void> {
    await this.#o.http?.client.close();
  }

  /** A request's time limit: its grant's, cut to what is left of the call's (worker runtime). */
  #timeoutMs(grantMs: number, ctx: CallContext): number {
    const limit = ctx.waitLimit();
    if (!limit) return grantMs;
    const left = Math.floor(limit.budgetMs);
    if (left <= 0) {
      throw new LockhostError("TIMEOUT", `no time is left for an HTTP request within the call's time limit of ${limit.callTimeoutMs} ms (call_timeout_ms)`);
    }
    return Math.min(grantMs, left);
  }
}

const bytesReply = (bytes: Uint8Array): AbiReply => ({ result: bytes.byteLength, bytes });

/**
 * One host function call's context: a class rather than a literal with a getter, since it is
 * made per call on the hot path, and the caller's locks are listed only when read.
 */
class CallInfo implements HostFunctionContext {
  readonly function: string;
  /**
   * The guest's signal when the call began: read once, since a restart replaces the guest's
   * controller, and a function reading it later must still see this call's end.
   */
  readonly signal: AbortSignal;
  readonly #guestLocks: GuestLocks;
  #held: readonly HeldLock[] | undefined;
  constructor(
    readonly plugin: string,
    readonly node: string,
    qualified: string,
    guestLocks: GuestLocks,
  ) {
    this.function = qualified;
    this.#guestLocks = guestLocks;
    this.signal = guestLocks.signal;
  }
  get locks(): readonly HeldLock[] {
    return (this.#held ??= this.#guestLocks.held());
  }
}
