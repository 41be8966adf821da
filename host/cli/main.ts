#!/usr/bin/env node
// The `lockhost` command: runs the CLI (cli.ts) on this process's arguments and exits with its
// code once its output is written (exit.ts). The composition root of the command: the built-in
// backends register here, through the same door as a package's.
import { toLockhostError } from "../../kit/errors.js";
import { BUILTIN_BACKENDS } from "../../plugins/backends/index.js";
import { registerBackend } from "../registry/registry.js";
import { main } from "./cli.js";
import { exitWhenFlushed } from "./exit.js";
import { sayIfOldNode } from "./node-notice.js";

sayIfOldNode();
for (const descriptor of BUILTIN_BACKENDS) registerBackend(descriptor);

main(process.argv.slice(2)).then(
  (code) => exitWhenFlushed(code),
  (err: unknown) => {
    const e = toLockhostError(err);
    console.error(`lockhost: ${e.code}: ${e.message}`);
    return exitWhenFlushed(e.code === "CONFIG_INVALID" || e.code === "ABI_UNSUPPORTED" ? 2 : 1);
  },
);
