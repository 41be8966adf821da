// Paths of the guests `npm run build:guests` builds (npm test builds first).
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** Absolute path of a built guest: a test guest by default, or an example plugin. */
export function guestWasm(name: string, kind: "test" | "example" = "test"): string {
  const dir = kind === "test" ? "../guests/build/" : "../../plugins/guests/build/";
  const path = fileURLToPath(new URL(`${dir}${name}.wasm`, import.meta.url));
  if (!existsSync(path)) throw new Error(`${path} is missing: run npm run build (npm test does it first)`);
  return path;
}
