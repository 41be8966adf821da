// Loads a guest's .wasm and checks, before any guest code runs, that it fits the ABI: an
// env.memory import (so the host owns the memory cap), only imports the host provides,
// and the version marker export. The version number itself is read in the guest's worker.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { FUNCTION_OP, OPS, PARAMS_OF, type OpSpec } from "../../abi/ops.js";
import { ABI_VERSION } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import { readModuleFacts, type FuncSignature } from "./wasm-binary.js";
import type { FunctionImport } from "./host-imports.js";
import { WASI_KEY, WASI_MODULE } from "./wasi.js";
import { checkExtismImport, EXTISM_EXPORT_SIGNATURE, importsExtism, ownMemoryToImport, type AbiChoice, type GuestAbi } from "./extism/module.js";

/** WebAssembly pages are 64 KiB. */
export const PAGE_BYTES = 65536;

/** The export every guest must have, returning its ABI version. */
export const VERSION_EXPORT = "lockhost_abi_version";

/** The ABI versions this host can run. */
export const SUPPORTED_ABI_VERSIONS: readonly number[] = [ABI_VERSION];

/** Imports the host provides to every guest, by module: the table's rows, and what AssemblyScript asks of `env`. */
export const PROVIDED_IMPORTS: Readonly<Record<string, ReadonlySet<string>>> = {
  ...providedByTable(),
  env: new Set(["memory", "abort", "trace", "seed", "Date.now", "performance.now"]),
};

function providedByTable(): Record<string, Set<string>> {
  const modules: Record<string, Set<string>> = {};
  // Every operation some runtime serves; a runtime refuses the rest of its own at instantiation.
  for (const op of OPS as readonly OpSpec[]) if (op !== FUNCTION_OP && op.runtimes.length > 0) (modules[op.module] ??= new Set()).add(op.name);
  return modules;
}

/** A host function's wasm signature: `(in_ptr, in_len, buf_ptr, buf_cap) -> i32`. */
const FUNCTION_SIGNATURE = `(${FUNCTION_OP.args
  .flatMap((a) => PARAMS_OF[a])
  .map(() => "i32")
  .join(", ")}) -> ${FUNCTION_OP.result}`;

/** What a plugin may import besides the ABI's own modules. */
export interface ImportGrants {
  /** Host function namespaces its config grants, each with the names the embedder registered in it. */
  readonly functions: ReadonlyMap<string, ReadonlySet<string>>;
  /** The plugin's granted namespaces as its config lists them, for messages. */
  readonly granted: readonly string[];
}

const NO_GRANTS: ImportGrants = { functions: new Map(), granted: [] };

/** A compiled guest module that passed the static ABI checks. */
export interface GuestModule {
  readonly plugin: string;
  readonly path: string;
  readonly module: WebAssembly.Module;
  /** Exported functions and their signatures. */
  readonly exports: ReadonlyMap<string, FuncSignature>;
  /** The host functions it imports (each granted and registered), in the order the runtimes number them. */
  readonly functions: readonly FunctionImport[];
  /** Pages the guest's memory starts with and may grow to. */
  readonly memory: { readonly initial: number; readonly maximum: number };
  /** The SHA-256 of the bytes compiled (hex): what a reload compares, and `sha256` pins. */
  readonly sha256: string;
  /** The ABI it is built for: lockhost's, or Extism's (host/runtime/extism/). */
  readonly abi: GuestAbi;
}

/** What a plugin's config allows its module beyond the ABI: host functions (ImportGrants) and WASI. */
export interface GuestModuleOptions extends Partial<ImportGrants> {
  /** The plugin may import WASI basics (host/runtime/wasi.ts). */
  readonly wasi?: boolean;
  /** The SHA-256 (hex) the module's bytes must have ([[plugins]] sha256); other bytes are refused. */
  readonly sha256?: string;
  /** The ABI the module is built for ([[plugins]] abi); `auto`: Extism when it imports from `extism:host/`. */
  readonly abi?: AbiChoice;
}

/** Compiles and checks `path` for `plugin`, with a memory cap of `memoryLimitBytes`. */
export async function loadGuestModule(plugin: string, path: string, memoryLimitBytes: number, options: GuestModuleOptions = {}): Promise<GuestModule> {
  const where = `plugin ${plugin} (${path})`;
  let bytes: Uint8Array;
  try {
    bytes = await readFile(path);
  } catch (err) {
    // A path that leads nowhere is the config's fault, not the module's.
    const code = (err as NodeJS.ErrnoException).code;
    const missing = code === "ENOENT" || code === "EISDIR" || code === "ENOTDIR";
    throw new LockhostError(
      missing ? "CONFIG_INVALID" : "ABI_UNSUPPORTED",
      missing
        ? `[[plugins]] "${plugin}": wasm = ${JSON.stringify(path)} ${code === "EISDIR" ? "is a folder" : "does not exist"} (a relative path is read ` +
            `from the config file's folder)`
        : `${where}: cannot read the module: ${(err as Error).message}`,
      { cause: err },
    );
  }
  // Of the very bytes compiled: a file replaced between a check and the load cannot slip through.
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  if (options.sha256 !== undefined && options.sha256.toLowerCase() !== sha256) {
    throw new LockhostError(
      "CONFIG_INVALID",
      `[[plugins]] "${plugin}": sha256 pins the module to ${options.sha256.toLowerCase()}, but wasm = ${JSON.stringify(path)} has sha256 ${sha256}; ` +
        `the module was not loaded (update the pin to load these bytes)`,
    );
  }
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile(bytes);
  } catch (err) {
    throw new LockhostError("ABI_UNSUPPORTED", `${where}: not a valid WebAssembly module: ${(err as Error).message}`, { cause: err });
  }

  const abi = options.abi ?? "auto";
  if (abi === "extism" || (abi === "auto" && importsExtism(WebAssembly.Module.imports(module)))) {
    return loadExtismModule(plugin, path, bytes, sha256, memoryLimitBytes, options);
  }
  const exports = WebAssembly.Module.exports(module);
  // The module compiled, so its binary is well-formed: reading it cannot fail.
  const facts = readModuleFacts(bytes);
  if (!facts.exports.has(VERSION_EXPORT)) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} does not export ${VERSION_EXPORT}() (the ABI version marker); an AssemblyScript guest adds: export { ${VERSION_EXPORT} } from "lockhost"`,
    );
  }
  if (exports.some((e) => e.kind === "memory") || !WebAssembly.Module.imports(module).some((i) => i.kind === "memory")) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} must import its memory as env.memory so the host can cap it (AssemblyScript: --importMemory) and must not define its own`,
    );
  }
  const grants: ImportGrants = { functions: options.functions ?? NO_GRANTS.functions, granted: options.granted ?? NO_GRANTS.granted };
  const functions: FunctionImport[] = [];
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === WASI_MODULE && imp.kind === "function") {
      if (options.wasi) continue; // the stub answers what it does not provide with ENOSYS
      throw new LockhostError(
        "ABI_UNSUPPORTED",
        `${where} imports ${imp.module}.${imp.name} (WASI), which lockhost provides only to a plugin that allows it: set ${WASI_KEY} = true in its ` +
          `[[plugins]] entry`,
      );
    }
    // Own keys only: a module named "constructor" or "__proto__" is no ABI module.
    const provided = Object.hasOwn(PROVIDED_IMPORTS, imp.module) ? PROVIDED_IMPORTS[imp.module] : undefined;
    if (!provided) {
      functions.push(functionImport(where, imp, facts.imports.get(`${imp.module}.${imp.name}`), grants));
      continue;
    }
    const ok = provided.has(imp.name) && (imp.kind === "memory") === (imp.name === "memory");
    if (!ok) {
      throw new LockhostError("ABI_UNSUPPORTED", `${where} imports ${imp.kind} ${imp.module}.${imp.name}, which lockhost does not provide`);
    }
  }

  const limits = facts.memoryImport;
  if (!limits) throw new LockhostError("ABI_UNSUPPORTED", `${where} must import its memory as env.memory`);
  if (limits.shared) throw new LockhostError("ABI_UNSUPPORTED", `${where} imports a shared memory; lockhost gives each guest its own`);
  const capPages = Math.floor(memoryLimitBytes / PAGE_BYTES);
  const maximum = Math.min(capPages, limits.maximum ?? capPages);
  if (limits.initial > maximum) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} needs ${limits.initial} pages (${(limits.initial * PAGE_BYTES) / 2 ** 20} MiB) of memory at start, more than its limit of ${maximum} ` +
        `pages; raise memory_limit_mib`,
    );
  }
  return { plugin, path, module, exports: facts.exports, functions, memory: { initial: limits.initial, maximum }, sha256, abi: "lockhost" };
}

/**
 * An Extism plugin (host/runtime/extism/): its imports checked against the kernel and the lock
 * functions (WASI when granted), its own memory made an import so the host caps it, and only
 * its exports of Extism's convention (`() -> i32`) callable.
 */
async function loadExtismModule(
  plugin: string,
  path: string,
  original: Uint8Array,
  sha256: string,
  memoryLimitBytes: number,
  options: GuestModuleOptions,
): Promise<GuestModule> {
  const where = `plugin ${plugin} (${path}, an Extism plugin)`;
  const moved = ownMemoryToImport(original);
  const bytes = moved?.bytes ?? original;
  const facts = readModuleFacts(bytes);
  let module: WebAssembly.Module;
  try {
    module = await WebAssembly.compile(bytes);
  } catch (err) {
    throw new LockhostError("ABI_UNSUPPORTED", `${where}: its memory could not be given a cap: ${(err as Error).message}`, { cause: err });
  }
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.module === "env" && imp.name === "memory" && imp.kind === "memory") continue;
    if (imp.module === WASI_MODULE && imp.kind === "function") {
      if (options.wasi) continue;
      throw new LockhostError(
        "ABI_UNSUPPORTED",
        `${where} imports ${imp.module}.${imp.name} (WASI), which lockhost provides only to a plugin that allows it: set ${WASI_KEY} = true in its ` +
          `[[plugins]] entry`,
      );
    }
    checkExtismImport(where, imp, facts.imports.get(`${imp.module}.${imp.name}`));
  }
  const limits = facts.memoryImport;
  if (!limits) throw new LockhostError("ABI_UNSUPPORTED", `${where} has no memory`);
  if (limits.shared) throw new LockhostError("ABI_UNSUPPORTED", `${where} has a shared memory; lockhost gives each guest its own`);
  const capPages = Math.floor(memoryLimitBytes / PAGE_BYTES);
  const declared = moved ? moved.maximum : limits.maximum;
  const maximum = Math.min(capPages, declared ?? capPages);
  if (limits.initial > maximum) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} needs ${limits.initial} pages (${(limits.initial * PAGE_BYTES) / 2 ** 20} MiB) of memory at start, more than its limit of ${maximum} ` +
        `pages; raise memory_limit_mib`,
    );
  }
  // Only exports of Extism's convention are callable: what a reactor's runtime exports is not.
  const exports = new Map([...facts.exports].filter(([, sig]) => `(${sig.params.join(", ")}) -> ${sig.results.join(", ")}` === EXTISM_EXPORT_SIGNATURE));
  return { plugin, path, module, exports, functions: [], memory: { initial: limits.initial, maximum }, sha256, abi: "extism" };
}

/** A host function import, checked against the plugin's grant, the embedder's functions and the ABI's signature. */
function functionImport(where: string, imp: WebAssembly.ModuleImportDescriptor, sig: FuncSignature | undefined, grants: ImportGrants): FunctionImport {
  const names = grants.functions.get(imp.module);
  const what = `${imp.kind} ${imp.module}.${imp.name}`;
  if (!names && grants.granted.includes(imp.module)) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} imports ${what}: its [[plugins]] entry grants namespace "${imp.module}", but no host functions are registered under it (the embedder ` +
        `registers them: Host.start(config, { functions }); lockhost run has none)`,
    );
  }
  if (!names) {
    const granted = grants.granted.length > 0 ? `functions = [${grants.granted.map((g) => JSON.stringify(g)).join(", ")}]` : "no functions";
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} imports ${what}, which lockhost does not provide: module "${imp.module}" is no ABI module, and its [[plugins]] entry grants ${granted}`,
    );
  }
  if (imp.kind !== "function" || !names.has(imp.name)) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} imports ${what}, which the embedder did not register (namespace "${imp.module}" has: ${[...names].join(", ") || "nothing"})`,
    );
  }
  const got = sig && `(${sig.params.join(", ")}) -> ${sig.results.join(", ") || "nothing"}`;
  if (got !== FUNCTION_SIGNATURE) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `${where} imports host function ${imp.module}.${imp.name} as ${got ?? imp.kind}; a host function is ${FUNCTION_SIGNATURE} (in_ptr, in_len, ` +
        `buf_ptr, buf_cap)`,
    );
  }
  return { module: imp.module, name: imp.name };
}

/** Refuses an ABI version this host does not support. */
export function checkAbiVersion(mod: Pick<GuestModule, "plugin" | "path">, version: unknown): void {
  if (typeof version !== "number" || !SUPPORTED_ABI_VERSIONS.includes(version)) {
    throw new LockhostError(
      "ABI_UNSUPPORTED",
      `plugin ${mod.plugin} (${mod.path}) declares lockhost ABI version ${String(version)}; this host supports version ${SUPPORTED_ABI_VERSIONS.join(", ")}`,
    );
  }
}
