// What an Extism plugin (a module built with an Extism PDK) imports from lockhost: the Extism
// kernel (`extism:host/env`, the imports every PDK is built on, with their wasm signatures) and
// lockhost's lock operations as Extism host functions (`extism:host/user`), derived from the
// operation table (abi/ops.ts): one function per lock operation, named `lock_<op>`, taking the
// offset of a JSON object of its arguments and returning the offset of a JSON reply whose
// `result` is the native ABI's result (same status codes). The loader, both runtimes, the
// `lockhost/extism` entry and docs/guests-extism.md read this file.
import { ARG_FORMS, OPS, type ArgKind, type OpSpec } from "./ops.js";

/** The Extism kernel's import module. */
export const EXTISM_KERNEL_MODULE = "extism:host/env";
/** The import module of Extism host functions (the PDKs' default namespace): lockhost's lock functions live here. */
export const EXTISM_USER_MODULE = "extism:host/user";

/**
 * The kernel imports lockhost provides, with their wasm signatures as the PDKs declare them
 * (an offset or a length is an i64; a byte or a status code an i32).
 */
export const KERNEL_IMPORTS = {
  alloc: "(i64) -> i64",
  free: "(i64) -> nothing",
  length: "(i64) -> i64",
  length_unsafe: "(i64) -> i64",
  load_u8: "(i64) -> i32",
  load_u64: "(i64) -> i64",
  store_u8: "(i64, i32) -> nothing",
  store_u64: "(i64, i64) -> nothing",
  input_offset: "() -> i64",
  input_length: "() -> i64",
  input_load_u8: "(i64) -> i32",
  input_load_u64: "(i64) -> i64",
  output_set: "(i64, i64) -> nothing",
  error_set: "(i64) -> nothing",
  config_get: "(i64) -> i64",
  var_get: "(i64) -> i64",
  var_set: "(i64, i64) -> nothing",
  http_request: "(i64, i64) -> i64",
  http_status_code: "() -> i32",
  http_headers: "() -> i64",
  log_trace: "(i64) -> nothing",
  log_debug: "(i64) -> nothing",
  log_info: "(i64) -> nothing",
  log_warn: "(i64) -> nothing",
  log_error: "(i64) -> nothing",
  get_log_level: "() -> i32",
} as const;

/** A kernel import's name. */
export type KernelImport = keyof typeof KERNEL_IMPORTS;

/** The wasm signature of every lock function: the offset of its JSON arguments in, of its JSON reply out. */
export const LOCK_FUNCTION_SIGNATURE = "(i64) -> i64";

/** The JSON field an argument kind is read from. */
export const JSON_FIELD: { readonly [K in ArgKind]?: string } = {
  key: "key",
  owner: "owner",
  handle: "handle",
  ttl: "ttl_ms",
  wait: "wait_ms",
  permits: "permits",
  flags: "flags",
  value: "value",
};

/** Fields that may be left out, and what they default to. */
export const JSON_DEFAULTS: Readonly<Record<string, number>> = { flags: 0, wait_ms: 0 };

/** One lock operation as an Extism host function. */
export interface LockFunction {
  /** The import name in EXTISM_USER_MODULE: `lock_<op>`. */
  readonly name: string;
  /** The operation's row. */
  readonly op: OpSpec;
  /** Its row's index in OPS (the worker channel's operation number). */
  readonly index: number;
  /** Its JSON argument fields, in ABI order. */
  readonly fields: readonly { readonly field: string; readonly kind: ArgKind; readonly text: boolean; readonly maxBytes?: number }[];
  /** Its reply has a `value`: the operation's output (status and leader as JSON, owner as a string). */
  readonly output: "json" | "string" | undefined;
}

/** Every lock operation the host serves (module `lock`, not answered by the runtime itself), as an Extism host function. */
export const LOCK_FUNCTIONS: readonly LockFunction[] = (OPS as readonly OpSpec[]).flatMap((op, index) =>
  op.module === "lock" && !op.local
    ? [
        {
          name: `lock_${op.name}`,
          op,
          index,
          fields: op.args
            .filter((kind) => kind !== "out")
            .map((kind) => {
              const form = ARG_FORMS[kind] as { form: string; maxBytes?: number };
              const text = form.form === "text";
              return { field: JSON_FIELD[kind]!, kind, text, ...(form.maxBytes !== undefined && { maxBytes: form.maxBytes }) };
            }),
          output: op.args.includes("out") ? (op.name === "owner" ? "string" : "json") : undefined,
        },
      ]
    : [],
);

/** A lock function by its import name. */
export const LOCK_FUNCTION_BY_NAME: ReadonlyMap<string, LockFunction> = new Map(LOCK_FUNCTIONS.map((f) => [f.name, f]));

/**
 * Extism's log levels as `get_log_level` answers them (the PDKs' numbering): a line below the
 * plugin's level is not logged. OFF: the plugin logs nothing.
 */
export const EXTISM_LOG_LEVELS = { trace: 0, debug: 1, info: 2, warn: 3, error: 4, off: 0x7fffffff } as const;
