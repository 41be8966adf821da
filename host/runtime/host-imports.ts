// The ABI's import modules of a guest (lock, lockhost, http, config, log, and the host function
// namespaces it was granted), one function per row of the operation table, for every runtime: a
// row's parameters are read off in ABI order, pointers checked against guest memory (a bad one
// costs no trip to the host), and its output buffer filled from the reply when that fits (ABI:
// else nothing is written). The local rows are served right here (local-imports.ts); how the
// other rows' checked arguments reach the host is the runtime's part: the worker copies them
// into its channel, the inline runtime hands them to the host's code directly.
import { ARG_FORMS, FUNCTION_OP, isString, OPS, PARAMS_OF, type ArgForm, type OpSpec, type Runtime } from "../../abi/ops.js";
import { INVALID_ARGUMENT } from "../../abi/status.js";
import type { GuestMemory, ImportModule } from "./guest-env.js";
import { localImports, type LocalServices } from "./local-imports.js";

/** Where a runtime puts one call's checked arguments, in ABI order within each kind. */
export interface ParamSink {
  number(index: number, value: number): void;
  /** A view of guest memory: valid until the guest runs again, so read or copy it at once. */
  string(index: number, bytes: Uint8Array): void;
}

/** A lock import's function: wasm parameters in, the result (i64 as bigint) out. */
export type ImportFn = (...params: number[]) => number | bigint | Promise<number | bigint>;

/** One operation as an import: its row, its index in OPS, and where its parameters lie. */
export class OpImport {
  /** Where the output buffer's (ptr, cap) stand among the wasm params, or -1. */
  readonly #bufAt: number;

  constructor(
    readonly op: OpSpec,
    readonly index: number,
  ) {
    const out = op.args.indexOf("out");
    this.#bufAt = out < 0 ? -1 : op.args.slice(0, out).reduce((n, kind) => n + PARAMS_OF[kind].length, 0);
  }

  /**
   * Checks the call's pointers and hands its arguments to `sink`. Returns 0, or -code when a
   * pointer is bad (the output buffer is checked first: a call that could not deliver its
   * answer does nothing), or when `serving` is false (the module is instantiating).
   */
  read(mem: GuestMemory, params: readonly number[], sink: ParamSink, serving = true): number {
    const bad = this.#read(mem, params, sink, serving);
    // ABI: a call that failed leaves no reply to read back, also one that never reached the host.
    if (bad < 0 && this.op.keepsReply) mem.lastReply = NO_TEXT;
    return bad;
  }

  #read(mem: GuestMemory, params: readonly number[], sink: ParamSink, serving: boolean): number {
    if (!serving) {
      return mem.fail(
        INVALID_ARGUMENT,
        "lock calls are not available while the module instantiates (top-level code or start function); call them from an export",
      );
    }
    const at = this.#bufAt;
    if (at >= 0 && !mem.inBounds(params[at]!, params[at + 1]!)) return mem.outOfBounds("buffer", params[at]!, params[at + 1]!);
    let p = 0;
    let numbers = 0;
    let strings = 0;
    for (const kind of this.op.args) {
      if (kind === "out") {
        p += 2;
      } else if (isString(kind)) {
        const ptr = params[p++]!;
        const len = params[p++]!;
        const form: ArgForm = ARG_FORMS[kind];
        const bad = mem.checkBytes(kind, ptr, len, form.maxBytes, form.form === "text");
        if (bad < 0) return bad;
        sink.string(strings++, new Uint8Array(mem.memory.buffer, ptr >>> 0, len >>> 0));
      } else {
        sink.number(numbers++, params[p++]!);
      }
    }
    return 0;
  }

  /**
   * Delivers a successful reply's text (`result` bytes of it) into the call's output buffer,
   * when the operation has one and the text fits its capacity.
   */
  deliver(mem: GuestMemory, params: readonly number[], result: number, text: () => Uint8Array): void {
    const at = this.#bufAt;
    if (at >= 0 && result >= 0 && result <= params[at + 1]! >>> 0) mem.write(params[at]!, text());
  }

  /**
   * Whether a successful reply's text is the call's output (written to the guest's buffer)
   * rather than a note about the call (a contended try's), which becomes its last_error.
   */
  get hasOutput(): boolean {
    return this.#bufAt >= 0;
  }

  /**
   * The guest's last_error after this call (ABI: it describes the last call): a failure's
   * message, a note a successful reply carries (contention), or empty for a plain success.
   */
  lastErrorAfter(result: number, text: () => Uint8Array): Uint8Array {
    return result < 0 || !this.hasOutput ? text() : NO_TEXT;
  }

  /** The result as the wasm signature wants it: i64 results travel as bigint. */
  wasmResult(result: number): number | bigint {
    return this.op.result === "i64" ? BigInt(result) : result;
  }
}

const NO_TEXT = new Uint8Array(0);

/** A host function the guest imports (and its plugin was granted): module and name as the guest wrote them. */
export interface FunctionImport {
  readonly module: string;
  readonly name: string;
}

/**
 * The channel number of a guest's i-th host function import: past every row of the table, so
 * one number names a row or a function.
 */
export const functionIndex = (i: number): number => OPS.length + i;

/**
 * The import modules of `runtime` (all but `env`): the local operations served here, every
 * other one through `remote`, which the runtime builds from the operation's OpImport; the
 * guest's host function imports (`functions`) go through `remote` too, numbered by functionIndex.
 */
export function hostImports(
  runtime: Runtime,
  mem: GuestMemory,
  services: LocalServices,
  functions: readonly FunctionImport[],
  remote: (op: OpImport) => ImportFn | object,
): Record<string, ImportModule> {
  const local = localImports(mem, services);
  // No prototype: a module or import name can never reach Object.prototype's members.
  const modules: Record<string, Record<string, unknown>> = Object.create(null) as Record<string, Record<string, unknown>>;
  (OPS as readonly OpSpec[]).forEach((op, i) => {
    if (!op.runtimes.includes(runtime) || op === FUNCTION_OP) return;
    const served = local[`${op.module}.${op.name}`];
    if (op.local && !served) throw new Error(`abi/ops.ts: ${op.module}.${op.name} is local, but no runtime serves it`);
    (modules[op.module] ??= Object.create(null) as Record<string, unknown>)[op.name] = served ?? remote(new OpImport(op, i));
  });
  functions.forEach((f, i) => {
    (modules[f.module] ??= Object.create(null) as Record<string, unknown>)[f.name] = remote(new OpImport(FUNCTION_OP, functionIndex(i)));
  });
  return modules;
}
