#!/usr/bin/env node
// Prints the path of a Node binary with WebAssembly JSPI on, for the inline runtime's guest
// suites: LOCKHOST_JSPI_NODE if set; this Node if it has JSPI; else the official Node binary
// that the npm registry ships as the package node-<platform>-<arch> (the `node` package's own
// source), fetched once into node_modules/.cache. No install script runs: the tarball is
// unpacked by hand, which is all the `node` package's preinstall does.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The Node the inline suites run on where this one has no JSPI (JSPI is on by default from 26). */
export const JSPI_NODE_VERSION = "26.10.0";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");

function hasJspi() {
  return typeof WebAssembly.Suspending === "function" && typeof WebAssembly.promising === "function";
}

/** The binary's path, fetching it first if needed. */
export function jspiNode() {
  if (process.env.LOCKHOST_JSPI_NODE) return process.env.LOCKHOST_JSPI_NODE;
  if (hasJspi()) return process.execPath;
  const platform = process.platform === "win32" ? "win" : process.platform;
  const pkg = `node-${platform}-${process.arch}`;
  const dir = join(root, "node_modules", ".cache", "lockhost", `${pkg}-${JSPI_NODE_VERSION}`);
  const bin = join(dir, "package", "bin", process.platform === "win32" ? "node.exe" : "node");
  if (existsSync(bin)) return bin;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  process.stderr.write(`jspi-node: fetching ${pkg}@${JSPI_NODE_VERSION} from the npm registry (Node with JSPI, for the inline runtime's tests)\n`);
  execFileSync("npm", ["pack", `${pkg}@${JSPI_NODE_VERSION}`, "--pack-destination", dir, "--silent"], { stdio: ["ignore", "ignore", "inherit"] });
  const tarball = readdirSync(dir).find((f) => f.endsWith(".tgz"));
  if (!tarball) throw new Error(`jspi-node: npm pack ${pkg}@${JSPI_NODE_VERSION} left no tarball in ${dir}`);
  execFileSync("tar", ["xzf", tarball], { cwd: dir });
  rmSync(join(dir, tarball));
  if (!existsSync(bin)) throw new Error(`jspi-node: ${pkg}@${JSPI_NODE_VERSION} has no ${bin}`);
  return bin;
}

// `node scripts/jspi-node.mjs` prints the path; `node scripts/jspi-node.mjs run <script> [args]`
// runs a script on that Node (npm run bench does, so the inline runtime is measured too).
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode !== "run") {
    console.log(jspiNode());
  } else {
    const r = spawnSync(jspiNode(), rest, { stdio: "inherit" });
    process.exit(r.status ?? 1);
  }
}
