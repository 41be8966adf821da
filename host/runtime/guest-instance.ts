// The runtime-neutral face of a running guest. The worker runtime implements it today; an
// inline runtime can implement it later without any change to the lock code.

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

/** The export a guest may provide to hear that a lock it holds was lost: `(handle: i32) -> ()`. */
export const LOST_EXPORT = "lockhost_on_lost";

/** One running instance of a guest plugin. */
export interface GuestInstance {
  /** The plugin this instance runs. */
  readonly plugin: string;
  /** How many locks the instance holds right now (kept locks included). */
  readonly heldLocks: number;
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
   * string pointer, one i32, through `lockhost_alloc`. Calls are queued: one runs at a time. When the call
   * returns, its locks not taken with FLAG_KEEP are released; when it traps, times out or its
   * worker dies, the instance restarts and every lock it held is released. Rejects with
   * UNKNOWN_EXPORT, GUEST_TRAP, GUEST_TIMEOUT, GUEST_CRASHED or CLOSED. Lost-lock
   * notifications (`lockhost_on_lost`) due are delivered before the call starts.
   */
  call(exportName: string, args?: readonly GuestArg[], options?: CallOptions): Promise<GuestValue>;
  /**
   * Calls an export that returns a string, like call(), and decodes it from guest memory: an
   * AssemblyScript `string` (an i32 pointer), or UTF-8 as an i64 `len << 32 | ptr`. Rejects as
   * call() does, with INVALID_ARGUMENT for an export that returns neither, and INVALID_MEMORY
   * when what it returned is not a string in its memory (or is over 64 Ki UTF-16 units or 64 KiB
   * of UTF-8, or not UTF-8); the guest keeps running then.
   */
  callString(exportName: string, args?: readonly GuestArg[]): Promise<string>;
  /**
   * The host is shutting down: the guest's waiting lock.acquire calls, now and later, end at
   * once with -CANCELLED, so its running call can return.
   */
  cancelWaits(reason: string): void;
  /** Stops the guest and releases its locks. */
  close(): Promise<void>;
}
