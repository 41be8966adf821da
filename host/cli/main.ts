#!/usr/bin/env node
// The `lockhost` command: runs the CLI (cli.ts) on this process's arguments and exits with its code.
import { toLockhostError } from "../../kit/errors.js";
import { main } from "./cli.js";
import { sayIfOldNode } from "./node-notice.js";

sayIfOldNode();

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    const e = toLockhostError(err);
    console.error(`lockhost: ${e.code}: ${e.message}`);
    process.exit(e.code === "CONFIG_INVALID" || e.code === "ABI_UNSUPPORTED" ? 2 : 1);
  },
);
