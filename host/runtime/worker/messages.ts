// Messages between a WorkerGuest (main thread) and its guest worker.
import type { AbortInfo, TraceLevel } from "../guest-env.js";
import type { GuestValue } from "../guest-instance.js";
import type { GuestArg } from "../guest-strings.js";

/** What the worker is started with. */
export interface WorkerInit {
  readonly plugin: string;
  readonly module: WebAssembly.Module;
  readonly channel: SharedArrayBuffer;
  readonly memory: { readonly initial: number; readonly maximum: number };
}

/** Main thread to worker. */
export type ToWorker = { readonly type: "call"; readonly id: number; readonly name: string; readonly args: readonly GuestArg[]; readonly asString?: boolean };


/** Worker to main thread. */
export type FromWorker =
  | { readonly type: "instantiating" }
  | { readonly type: "ready"; readonly abiVersion: unknown }
  | { readonly type: "failed"; readonly message: string }
  | { readonly type: "return"; readonly id: number; readonly value: GuestValue | string; readonly problem?: { readonly code: "INVALID_MEMORY"; readonly message: string } }
  | { readonly type: "trap"; readonly id: number; readonly message: string; readonly abort?: AbortInfo; readonly memoryBytes: number }
  | { readonly type: "trace"; readonly message: string; readonly level?: TraceLevel };
