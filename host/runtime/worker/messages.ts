// Messages between a WorkerGuest (main thread) and its guest worker.
import type { AbortInfo } from "../guest-env.js";
import type { GuestValue } from "../guest-instance.js";
import type { GuestArg } from "../guest-strings.js";
import type { StringResultForm } from "../string-results.js";
import type { MessagePort } from "node:worker_threads";
import type { FunctionImport } from "../host-imports.js";
import type { GuestGrants } from "../local-imports.js";
import type { GuestAbi } from "../extism/module.js";

/** What the worker is started with. */
export interface WorkerInit {
  readonly plugin: string;
  readonly module: WebAssembly.Module;
  readonly channel: SharedArrayBuffer;
  readonly memory: { readonly initial: number; readonly maximum: number };
  /** Where what does not fit the channel's data area travels (see channel.ts). */
  readonly bulk: MessagePort;
  /** What the local operations answer. */
  readonly grants: GuestGrants;
  /** The guest's host function imports, numbered as the channel numbers them. */
  readonly functions: readonly FunctionImport[];
  /** The ABI the module is built for (an Extism plugin's kernel runs in the worker). */
  readonly abi: GuestAbi;
}

/** Main thread to worker. */
export type ToWorker = {
  readonly type: "call";
  readonly id: number;
  readonly name: string;
  readonly args: readonly GuestArg[];
  readonly stringResult?: StringResultForm;
};

/** Worker to main thread. */
export type FromWorker =
  | { readonly type: "instantiating" }
  | { readonly type: "ready"; readonly abiVersion: unknown }
  | { readonly type: "failed"; readonly message: string }
  | {
      readonly type: "return";
      readonly id: number;
      readonly value: GuestValue | string;
      /** Not a trap: a string result that is none (INVALID_MEMORY), an Extism plugin's error (CALL_FAILED). The message is whole. */
      readonly problem?: { readonly code: "INVALID_MEMORY" | "CALL_FAILED"; readonly message: string; readonly details?: Readonly<Record<string, number>> };
    }
  | { readonly type: "trap"; readonly id: number; readonly message: string; readonly abort?: AbortInfo; readonly memoryBytes: number }
  | { readonly type: "trace"; readonly level: number; readonly message: string };
