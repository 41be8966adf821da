// The runtime-neutral face of a running guest: one instance (either runtime, guest-shell.ts) or
// a plugin's pool of them (guest-pool.ts, `instances = N`), alike to the host and the scheduler.

import type { Lease } from "../locking/lease.js";
import type { FuncSignature } from "./wasm-binary.js";
import type { GuestArg } from "./guest-strings.js";

export type { GuestArg } from "./guest-strings.js";

/** A value an export returned: i32/f32/f64 as number, i64 as bigint, nothing as undefined. */
export type GuestValue = number | bigint | undefined;

/** Options of one export call. */
export interface CallOptions {
  /**
   * The lock a scheduled call runs under (the scheduler's). While the call runs the guest
   * sees it as handle 0 (`lock.state(0)`), and if it is lost then the guest's
   * `lockhost_on_lost(0)` is called once the call has returned.
   */
  readonly scheduleLease?: Lease;
}

/**
 * One call's claim on a free guest instance (GuestInstance.reserve): nothing else starts on that
 * instance until the call made through it has ended, or the claim is given back.
 */
export interface GuestReservation {
  /** Makes the reserved call (as GuestInstance.call); once only. */
  call(exportName: string, args?: readonly GuestArg[], options?: CallOptions): Promise<GuestValue>;
  /** Makes the reserved call of a string-returning export (as GuestInstance.callString); once only. */
  callString(exportName: string, args?: readonly GuestArg[]): Promise<string>;
  /** Gives the instance back without calling it (a no-op once a call was made). */
  cancel(): void;
}

/** The export a guest may provide to hear that a lock it holds was lost: `(handle: i32) -> ()`. */
export const LOST_EXPORT = "lockhost_on_lost";

/** One running instance of a guest plugin. */
export interface GuestInstance {
  /** The plugin this instance runs. */
  readonly plugin: string;
  /** How many locks the instance holds right now (kept locks included; a pool: all of its instances'). */
  readonly heldLocks: number;
  /** How many calls it can run at once: 1 for one instance, N for a pool (`instances = N`). */
  readonly size: number;
  /** Whether the module exports a callable function of that name. */
  hasExport(name: string): boolean;
  /** The parameter and result types of a callable export, or undefined. */
  exportSignature(name: string): FuncSignature | undefined;
  /** The names of its callable exports (for messages: "did you mean", what it exports). */
  exportNames(): string[];
  /**
   * Calls an export with its arguments: numbers as the export's i32/f32/f64, and strings written
   * into guest memory through the guest's allocator export: as UTF-8 `(ptr, len)`, two i32
   * parameters, to a guest exporting `lockhost_alloc_utf8` (Rust, C), else as an AssemblyScript
   * string pointer, one i32, through `lockhost_alloc`. Calls are queued: one runs at a time on an
   * instance (a pool runs each on a free instance, in order of arrival). When the call
   * returns, its locks not taken with FLAG_KEEP are released; when it traps, times out or its
   * worker dies, the instance restarts and every lock it held is released. Rejects with
   * UNKNOWN_EXPORT, GUEST_TRAP, GUEST_TIMEOUT, GUEST_CRASHED or CLOSED, and with LOST (details
   * `entered` = 0) when `options.scheduleLease` is no longer held, or has no time left, at the
   * moment the export would be entered: the export is not called then. Lost-lock
   * notifications (`lockhost_on_lost`) due are delivered before the call starts. An Extism
   * plugin's export (docs/guests-extism.md) takes its input as one string argument (or none)
   * and resolves to its return code; an error it sets rejects with CALL_FAILED and its message.
   */
  call(exportName: string, args?: readonly GuestArg[], options?: CallOptions): Promise<GuestValue>;
  /**
   * Calls an export that returns a string, like call(), and decodes it from guest memory: an
   * AssemblyScript `string` (an i32 pointer), or UTF-8 as an i64 `len << 32 | ptr`. Rejects as
   * call() does, with INVALID_ARGUMENT for an export that returns neither, and INVALID_MEMORY
   * when what it returned is not a string in its memory (or is over 64 Ki UTF-16 units or 64 KiB
   * of UTF-8, or not UTF-8); the guest keeps running then. An Extism plugin's export resolves to
   * its output, decoded as UTF-8 (empty when it set none).
   */
  callString(exportName: string, args?: readonly GuestArg[]): Promise<string>;
  /**
   * Claims an instance that is free now (no call running or queued on it) for one call, so that
   * nothing else starts on it in between (the scheduler reserves one before it takes a tick's
   * lock); undefined when every instance is busy or the plugin is closed.
   */
  reserve(): GuestReservation | undefined;
  /**
   * Calls `listener` each time an instance becomes free (its last queued call ended); returns
   * what stops it. A pool waits on this for its queued calls.
   */
  onFree(listener: () => void): () => void;
  /**
   * The host is shutting down: the guest's waiting lock.acquire calls, now and later, end at
   * once with -CANCELLED, so its running call can return.
   */
  cancelWaits(reason: string): void;
  /** Stops the guest and releases its locks. */
  close(): Promise<void>;
}
