// Host functions: what an embedder gives guests of its own, under a namespace a plugin's config
// grants (`functions = ["billing"]`), imported by the guest as module `billing`. Bytes in, bytes
// out; a function may be async, and the guest waits for it as it waits for a lock call.
import { FUNCTION_MODULE, OPS, type OpSpec } from "../../../abi/ops.js";
import { INTERNAL, MAX_REPLY_BYTES } from "../../../abi/status.js";
import { abiStatusOf, LockhostError } from "../../../kit/errors.js";
import type { HeldLock } from "../guest-locks.js";

export type { HeldLock } from "../guest-locks.js";

/** What a host function knows of the call that reached it. */
export interface HostFunctionContext {
  /** The plugin whose guest called. */
  readonly plugin: string;
  /** This host's node name. */
  readonly node: string;
  /** `namespace.function`, as the guest imported it. */
  readonly function: string;
  /**
   * The locks the calling guest holds now, with their names and fences (the schedule's lock as
   * handle 0 during a scheduled call): pass a fence on to the resource, so it can refuse a stale
   * holder's write.
   */
  readonly locks: readonly HeldLock[];
  /**
   * Aborted when the guest stops waiting for the answer: the host shuts down, the guest's call
   * runs past its time limit (worker runtime), or its instance is replaced or closed. The guest
   * then gets `-CANCELLED` (or its call ends), whatever the function does; stop work on it.
   */
  readonly signal: AbortSignal;
}

/** What a host function may return: bytes, a string (sent as UTF-8), or nothing (an empty reply). */
// biome-ignore lint/suspicious/noConfusingVoidType: a host function declared as returning nothing (void, or Promise<void>) must fit
export type HostFunctionResult = Uint8Array | ArrayBuffer | string | void | undefined;

/**
 * A function a guest may call. It gets the guest's bytes and the call's context; what it
 * returns (or resolves to) is the guest's reply. A thrown LockhostError reaches the guest as its
 * own code (`INVALID_ARGUMENT`, `PERMISSION_DENIED`...), anything else thrown as `CALL_FAILED`;
 * the message is the guest's `last_error` either way.
 */
export type HostFunction = (input: Uint8Array, ctx: HostFunctionContext) => HostFunctionResult | Promise<HostFunctionResult>;

/** Host functions by namespace and name: `{ billing: { charge, refund } }`. */
export type HostFunctions = Readonly<Record<string, Readonly<Record<string, HostFunction>>>>;

/** A namespace: what a guest names as its import module; never one of the ABI's own modules. */
export const NAMESPACE_PATTERN = /^[a-z][a-z0-9_-]{0,63}$/;

/**
 * Import modules a namespace may not take: the ABI's own (every module of the operation table),
 * AssemblyScript's `env`, the WebAssembly system interface's, and names every JavaScript object
 * has (an import object keyed by them would reach Object.prototype).
 */
export const RESERVED_NAMESPACES: ReadonlySet<string> = new Set([
  ...(OPS as readonly OpSpec[]).map((op) => op.module).filter((m) => m !== FUNCTION_MODULE),
  "env",
  "wasi_snapshot_preview1",
  "wasi_unstable",
  "wasi",
  "constructor",
  "prototype",
  "__proto__",
  "hasownproperty",
  "tostring",
  "valueof",
]);

const utf8 = new TextEncoder();
/** The reply of a function that returned nothing: shared, as nothing reads or writes into it. */
const NO_REPLY = new Uint8Array(0);

/**
 * Runs one host function and turns what it returned or threw into the guest's reply: bytes, or
 * a LockhostError with the code the guest gets (thrown, or the promise rejects with it). A
 * function that answers at once is answered at once (no promise: the inline guest does not even
 * suspend); one that returns a promise is never waited for past `ctx.signal`.
 */
export function runHostFunction(fn: HostFunction, input: Uint8Array, ctx: HostFunctionContext): Uint8Array | Promise<Uint8Array> {
  const { signal } = ctx;
  if (signal.aborted) throw cancelled(ctx, signal);
  let result: HostFunctionResult | Promise<HostFunctionResult>;
  try {
    result = fn(input, ctx);
  } catch (err) {
    throw thrown(ctx, err);
  }
  // Any thenable is awaited: a promise from another realm (a vm context) is no `Promise` here.
  if (!isThenable(result)) return toBytes(ctx, result);
  return settle(Promise.resolve(result), ctx);
}

function isThenable(value: unknown): value is PromiseLike<HostFunctionResult> {
  return typeof value === "object" && value !== null && typeof (value as { then?: unknown }).then === "function";
}

/** Waits for an async function's answer, or for the signal, whichever comes first. */
async function settle(pending: Promise<HostFunctionResult>, ctx: HostFunctionContext): Promise<Uint8Array> {
  const { signal } = ctx;
  let stop: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    const onAbort = (): void => reject(cancelled(ctx, signal));
    signal.addEventListener("abort", onAbort, { once: true });
    stop = () => signal.removeEventListener("abort", onAbort);
  });
  // A function that never settles must not keep the rejection above unhandled.
  aborted.catch(() => undefined);
  try {
    return toBytes(ctx, await Promise.race([pending, aborted]));
  } catch (err) {
    // Once the guest stopped waiting, how the function ended (often: aborted by the signal) is not its answer.
    throw signal.aborted ? cancelled(ctx, signal) : thrown(ctx, err);
  } finally {
    stop?.();
  }
}

function toBytes(ctx: HostFunctionContext, result: HostFunctionResult): Uint8Array {
  const bytes =
    result === undefined
      ? NO_REPLY
      : typeof result === "string"
        ? utf8.encode(result)
        : result instanceof Uint8Array
          ? result
          : result instanceof ArrayBuffer
            ? new Uint8Array(result)
            : undefined;
  if (!bytes) {
    throw new LockhostError(
      "CALL_FAILED",
      `host function ${ctx.function} returned ${describe(result)}; a host function returns a Uint8Array, an ArrayBuffer, a string or nothing`,
    );
  }
  if (bytes.byteLength > MAX_REPLY_BYTES) {
    throw new LockhostError(
      "TOO_LARGE",
      `host function ${ctx.function} returned ${bytes.byteLength} bytes; a reply may be at most ${MAX_REPLY_BYTES} (MAX_REPLY_BYTES)`,
    );
  }
  return bytes;
}

/** What the guest gets for a thrown value: a LockhostError with a code it knows keeps it, anything else is CALL_FAILED. */
function thrown(ctx: HostFunctionContext, err: unknown): LockhostError {
  if (err instanceof LockhostError && abiStatusOf(err.code) !== INTERNAL) return err;
  const why = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
  return new LockhostError("CALL_FAILED", `host function ${ctx.function} failed: ${why}`, { cause: err });
}

function cancelled(ctx: HostFunctionContext, signal: AbortSignal): LockhostError {
  const reason = signal.reason instanceof Error ? signal.reason.message : String(signal.reason ?? "aborted");
  return new LockhostError("CANCELLED", `host function ${ctx.function} was not waited for: ${reason}`);
}

function describe(value: unknown): string {
  return value === null ? "null" : Array.isArray(value) ? "an array" : `a ${typeof value}`;
}
