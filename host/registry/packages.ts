// Loads the backend packages a config names (`[locking] packages`) and registers their
// descriptors, so `[locking] backend` can name them and `[locking.<name>]` is validated by
// their own schema, with the same messages as the built-ins' tables.
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { BackendDescriptor } from "../../kit/descriptor.js";
import { LockhostError } from "../../kit/errors.js";
import { registerBackend } from "./registry.js";

/**
 * Imports each package and registers the BackendDescriptor(s) it exports (`default`, `backend`,
 * or an array `backends`). A package is resolved from `fromDir` (the config file's folder, so an
 * operator installs it beside the config), then from lockhost's own install.
 * @param where names the setting in messages, e.g. `lockhost.toml: [locking] packages`.
 * @throws LockhostError CONFIG_INVALID naming the setting and the package when it cannot be
 *   found, fails to load, or exports no descriptor.
 */
export async function loadBackendPackages(specifiers: readonly string[], fromDir: string, where = "[locking] packages"): Promise<void> {
  for (const specifier of specifiers) {
    const fail = (problem: string, cause?: unknown): never => {
      throw new LockhostError("CONFIG_INVALID", `${where}: ${JSON.stringify(specifier)} ${problem}`, cause === undefined ? undefined : { cause });
    };
    let mod: Record<string, unknown>;
    try {
      mod = (await import(resolveFrom(fromDir, specifier))) as Record<string, unknown>;
    } catch (err) {
      return fail(`could not be loaded (install it next to the config file or with lockhost): ${(err as Error).message}`, err);
    }
    const found = mod.backends ?? mod.backend ?? mod.default;
    const descriptors = (Array.isArray(found) ? found : [found]) as BackendDescriptor[];
    if (found === undefined || descriptors.length === 0) fail("exports no backend descriptor (export default, `backend` or `backends`)");
    for (const descriptor of descriptors) {
      try {
        registerBackend(descriptor);
      } catch (err) {
        fail(`exports an unusable backend: ${(err as Error).message}`, err);
      }
    }
  }
}

/** A file URL for `specifier` resolved from `fromDir`; the bare specifier (resolved from lockhost) when that fails. */
function resolveFrom(fromDir: string, specifier: string): string {
  try {
    return pathToFileURL(createRequire(join(fromDir, "lockhost.config")).resolve(specifier)).href;
  } catch {
    return specifier;
  }
}
