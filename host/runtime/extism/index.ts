// `lockhost/extism`: lockhost's lock functions for an app that already embeds Extism through
// @extism/extism, backed by a LockService. The functions are the ones lockhost gives the Extism
// plugins it runs itself (extism:host/user lock_<op>, abi/extism.ts: JSON in, JSON out, the
// native ABI's results and status codes), so a plugin runs the same under either host. Loads the
// lock service's guest side only, not the host (no config, scheduler, admin or runtimes).
import pino, { type Logger } from "pino";
import { EXTISM_USER_MODULE, LOCK_FUNCTIONS, type LockFunction } from "../../../abi/extism.js";
import { OPS, type OpSpec } from "../../../abi/ops.js";
import type { LockService } from "../../locking/service.js";
import { globalKeyMatcher } from "../../locking/scope.js";
import { GuestCapabilities } from "../capabilities/guest-capabilities.js";
import { GuestLocks } from "../guest-locks.js";
import type { AbiReply } from "../guest-reply.js";
import { runOp, type CallContext, type GuestCalls } from "../lock-ops.js";
import { lockArgs, lockReply } from "./lock-json.js";

export { EXTISM_USER_MODULE } from "../../../abi/extism.js";

/** The part of @extism/extism's CallContext the lock functions use: reading a block, storing one. */
export interface ExtismCallContext {
  read(address: bigint): { bytes(): Uint8Array } | null;
  store(input: Uint8Array | string): bigint;
}

/** A host function as @extism/extism takes it: its CallContext, then the plugin's arguments (one offset), an offset back. */
export type ExtismHostFunction = (context: ExtismCallContext, offset: bigint) => Promise<bigint>;

/** Options of extismLockFunctions. */
export interface ExtismLockOptions {
  /** The plugin's name: its keys are namespaced under it, as a lockhost plugin's are (`{prefix}{plugin}:{key}`). */
  readonly plugin: string;
  /** The global keys it may use with FLAG_GLOBAL (`*` matches anything), as `[[plugins]] global_keys`; default none. */
  readonly globalKeys?: readonly string[];
  /** Where failed lock calls are logged; default nowhere. */
  readonly log?: Logger;
}

/** lockhost's lock functions for one @extism/extism plugin, and the lifecycle of the locks it takes. */
export interface ExtismLockFunctions {
  /** For createPlugin's `functions` option: `{ "extism:host/user": { lock_try, lock_acquire, … } }`. */
  readonly functions: { readonly [EXTISM_USER_MODULE]: Readonly<Record<string, ExtismHostFunction>> };
  /**
   * Runs one plugin call (`() => plugin.call(name, input)`) and then releases the locks it took
   * without FLAG_KEEP, as lockhost does when a call returns; also when the call throws.
   */
  call<T>(run: () => Promise<T>): Promise<T>;
  /** Releases the locks taken without FLAG_KEEP: what call() does after each call, for an app that calls the plugin itself. */
  endCall(): Promise<void>;
  /** How many locks the plugin holds now (kept ones included). */
  readonly heldLocks: number;
  /** Releases every lock the plugin holds; a wait (acquire, campaign) started afterwards answers CANCELLED. Close it with the plugin. */
  close(): Promise<void>;
}

/** An acquire waits as long as it asks: an @extism/extism call has no time limit of lockhost's to leave room for. */
const NO_LIMIT: CallContext = { waitLimit: () => undefined };
const utf8 = new TextDecoder();

/**
 * lockhost's lock functions for @extism/extism, backed by `service`. The plugin must run with
 * `runInWorker: true` (the functions answer asynchronously, which only @extism/extism's worker
 * mode allows):
 *
 * ```ts
 * const locks = extismLockFunctions(service, { plugin: "billing" });
 * const plugin = await createPlugin(wasm, { runInWorker: true, functions: locks.functions });
 * const out = await locks.call(() => plugin.call("charge", input));
 * ```
 */
export function extismLockFunctions(service: LockService, options: ExtismLockOptions): ExtismLockFunctions {
  const log = options.log ?? pino({ level: "silent" });
  const locks = new GuestLocks(service, { plugin: options.plugin, allowsGlobal: globalKeyMatcher(options.globalKeys ?? []) }, log);
  // Lock operations only: no HTTP grant, no host functions.
  const calls: GuestCalls = { locks, caps: new GuestCapabilities({ plugin: options.plugin, node: service.node, locks, log, functions: [] }) };
  const fn =
    (f: LockFunction): ExtismHostFunction =>
    async (context, offset) => {
      const args = lockArgs(f, context.read(offset)?.bytes());
      if (args instanceof Uint8Array) return context.store(args);
      const reply = await runOp(
        calls,
        (OPS as readonly OpSpec[])[f.index]!,
        (i) => args.numbers[i]!,
        (i) => args.strings[i]!,
        NO_LIMIT,
        (r: AbiReply) => r,
      );
      const text = reply.text ?? (reply.bytes ? utf8.decode(reply.bytes) : undefined);
      return context.store(lockReply(f, reply.result, text));
    };
  const user: Record<string, ExtismHostFunction> = {};
  for (const f of LOCK_FUNCTIONS) user[f.name] = fn(f);
  return {
    functions: { [EXTISM_USER_MODULE]: Object.freeze(user) },
    async call<T>(run: () => Promise<T>): Promise<T> {
      try {
        return await run();
      } finally {
        await locks.endCall();
      }
    },
    endCall: () => locks.endCall(),
    get heldLocks() {
      return locks.heldCount;
    },
    async close() {
      locks.cancelWaits("the plugin's lock functions were closed");
      await locks.reset("the plugin's lock functions were closed");
    },
  };
}
