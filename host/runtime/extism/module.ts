// How the loader takes an Extism plugin: told by `abi = "extism"` or by its imports (the
// kernel's or the Extism host function module), its imports checked against what lockhost
// provides (the kernel, the lock functions, WASI when granted), its exports against Extism's
// call convention, and its own memory turned into an import, so that the host creates it with
// the plugin's cap (an Extism module defines its memory itself; Extism hosts expect that).
import { EXTISM_KERNEL_MODULE, EXTISM_USER_MODULE, KERNEL_IMPORTS, LOCK_FUNCTION_BY_NAME, LOCK_FUNCTION_SIGNATURE } from "../../../abi/extism.js";
import { LockhostError } from "../../../kit/errors.js";
import type { FuncSignature } from "../wasm-binary.js";

/** The ABI a plugin's module is built for: lockhost's own, or Extism's (a module built with an Extism PDK). */
export type GuestAbi = "lockhost" | "extism";

/** What `[[plugins]] abi` may say: one of them, or `auto` (Extism when the module imports from `extism:host/`). */
export type AbiChoice = GuestAbi | "auto";

/** The signature an Extism export has: no parameters, an i32 return code. */
export const EXTISM_EXPORT_SIGNATURE = "() -> i32";

/** Whether a module with these imports is an Extism plugin (under `abi = "auto"`). */
export function importsExtism(imports: readonly WebAssembly.ModuleImportDescriptor[]): boolean {
  return imports.some((i) => i.module.startsWith("extism:host/"));
}

const signature = (sig: FuncSignature | undefined): string | undefined => sig && `(${sig.params.join(", ")}) -> ${sig.results.join(", ") || "nothing"}`;

/** Refuses an import of an Extism plugin that lockhost does not provide, or provides with another signature. */
export function checkExtismImport(where: string, imp: WebAssembly.ModuleImportDescriptor, sig: FuncSignature | undefined): void {
  const got = signature(sig);
  if (imp.module === EXTISM_KERNEL_MODULE) {
    const want = (KERNEL_IMPORTS as Record<string, string>)[imp.name];
    if (!Object.hasOwn(KERNEL_IMPORTS, imp.name) || imp.kind !== "function") {
      throw new LockhostError("ABI_UNSUPPORTED", `${where} imports ${imp.module}.${imp.name}, a kernel import lockhost does not provide`);
    }
    if (got !== want) throw new LockhostError("ABI_UNSUPPORTED", `${where} imports ${imp.module}.${imp.name} as ${got}; the kernel's is ${want}`);
    return;
  }
  if (imp.module === EXTISM_USER_MODULE) {
    if (!LOCK_FUNCTION_BY_NAME.has(imp.name) || imp.kind !== "function") {
      throw new LockhostError(
        "ABI_UNSUPPORTED",
        `${where} imports host function ${imp.module}.${imp.name}, which lockhost does not provide (its host functions there are the lock ` +
          `functions: ${[...LOCK_FUNCTION_BY_NAME.keys()].join(", ")})`,
      );
    }
    if (got !== LOCK_FUNCTION_SIGNATURE) {
      throw new LockhostError("ABI_UNSUPPORTED", `${where} imports ${imp.module}.${imp.name} as ${got}; a lock function is ${LOCK_FUNCTION_SIGNATURE}`);
    }
    return;
  }
  throw new LockhostError(
    "ABI_UNSUPPORTED",
    `${where} imports ${imp.kind} ${imp.module}.${imp.name}, which lockhost does not provide to an Extism plugin (it provides ${EXTISM_KERNEL_MODULE}, ` +
      `${EXTISM_USER_MODULE}'s lock functions, and WASI with wasi = true)`,
  );
}

/**
 * The module's bytes with its own memory (the memory section's one memory) made an import of
 * `env.memory` with the same minimum, so the host can create it with the plugin's cap. The
 * memory keeps index 0, so the code, the data segments and the `memory` export are untouched.
 * Undefined when the module defines no memory of its own.
 */
export function ownMemoryToImport(bytes: Uint8Array): { bytes: Uint8Array; initial: number; maximum?: number } | undefined {
  const sections: { id: number; start: number; body: number; end: number }[] = [];
  let pos = 8;
  while (pos < bytes.length) {
    const start = pos;
    const id = bytes[pos++]!;
    const [size, next] = leb(bytes, pos);
    sections.push({ id, start, body: next, end: next + size });
    pos = next + size;
  }
  const memory = sections.find((s) => s.id === 5);
  if (!memory) return undefined;
  const [count, countEnd] = leb(bytes, memory.body);
  let at = countEnd;
  if (count !== 1) throw new LockhostError("ABI_UNSUPPORTED", `the module defines ${count} memories; lockhost runs modules with one`);
  const flags = bytes[at++]!;
  if (flags & 2) throw new LockhostError("ABI_UNSUPPORTED", "the module defines a shared memory; lockhost gives each guest its own");
  const [initial, next] = leb(bytes, at);
  const maximum = flags & 1 ? leb(bytes, next)[0] : undefined;
  // The import: "env" "memory", kind memory, limits with the minimum only (the host sets the cap).
  const entry = [...name("env"), ...name("memory"), 0x02, 0x00, ...uleb(initial)];
  const imports = sections.find((s) => s.id === 2);
  let importBody: Uint8Array[];
  if (imports) {
    const [n, first] = leb(bytes, imports.body);
    importBody = [Uint8Array.from(uleb(n + 1)), bytes.subarray(first, imports.end), Uint8Array.from(entry)];
  } else {
    importBody = [Uint8Array.from([...uleb(1), ...entry])];
  }
  const importLength = importBody.reduce((n, part) => n + part.byteLength, 0);
  const importSection = [Uint8Array.from([0x02, ...uleb(importLength)]), ...importBody];
  const out: Uint8Array[] = [bytes.subarray(0, 8)];
  let placed = false;
  for (const s of sections) {
    // The import section goes where it was, or right after the type section (or first).
    if (!placed && !imports && s.id !== 0 && s.id !== 1) {
      out.push(...importSection);
      placed = true;
    }
    if (s === memory) continue;
    if (s === imports) {
      out.push(...importSection);
      placed = true;
      continue;
    }
    out.push(bytes.subarray(s.start, s.end));
  }
  if (!placed) out.push(...importSection);
  const joined = new Uint8Array(out.reduce((n, part) => n + part.byteLength, 0));
  let offset = 0;
  for (const part of out) {
    joined.set(part, offset);
    offset += part.byteLength;
  }
  return { bytes: joined, initial, ...(maximum !== undefined && { maximum }) };
}

function leb(bytes: Uint8Array, pos: number): [number, number] {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = bytes[pos++];
    if (b === undefined) throw new LockhostError("ABI_UNSUPPORTED", "truncated WebAssembly module");
    result += (b & 0x7f) * 2 ** shift;
    if ((b & 0x80) === 0) return [result, pos];
    shift += 7;
  }
}

function uleb(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

function name(s: string): number[] {
  const b = new TextEncoder().encode(s);
  return [...uleb(b.length), ...b];
}
