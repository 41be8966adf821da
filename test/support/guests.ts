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

/**
 * One test guest's builds in each guest language: the same exports under the same names
 * (test/guests/locker.ts, test/guests/rust/locker, test/guests/c/locker.c), so the guest suite
 * runs the same cases per language. The Rust and C twins log through WASI's fd_write (their
 * stdout reaches the plugin's log as AssemblyScript's trace does), so they need `wasi`.
 */
export interface GuestLanguage {
  readonly language: "AssemblyScript" | "Rust" | "C";
  /** The built guest's name for guestWasm. */
  readonly locker: string;
  readonly wasi: boolean;
}

/** Every guest language, AssemblyScript first. */
export const GUEST_LANGUAGES: readonly GuestLanguage[] = [
  { language: "AssemblyScript", locker: "locker", wasi: false },
  { language: "Rust", locker: "rust-locker", wasi: true },
  { language: "C", locker: "c-locker", wasi: true },
];
