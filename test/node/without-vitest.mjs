// `node --import ./test/node/without-vitest.mjs ...`: runs as if vitest were not installed (it is
// an optional peer dependency of lockhost/testing), by registering this file as a module hook
// that refuses to resolve it, as Node does for a package that is missing.
import { register } from "node:module";

/** The module hook: "vitest" is not found; everything else resolves as usual. */
export async function resolve(specifier, context, next) {
  if (specifier === "vitest" || specifier.startsWith("vitest/")) {
    const err = new Error(`Cannot find package '${specifier}' imported from ${context.parentURL}`);
    err.code = "ERR_MODULE_NOT_FOUND";
    throw err;
  }
  return next(specifier, context);
}

// Imported by --import: registers this file as the hook (loaded again, in the hooks thread, with "?hook").
if (!import.meta.url.endsWith("?hook")) register(`${import.meta.url}?hook`);
