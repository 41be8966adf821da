#!/usr/bin/env node
// npm test: the whole suite on this Node, then, when this Node has no WebAssembly JSPI, the
// guest suites once more on a Node that has it (scripts/jspi-node.mjs), so the inline runtime
// is tested wherever the tests run. Arguments go to vitest both times; a JSON report asked
// for with --outputFile=F is written to F and, for the second run, to F.jspi.json.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { jspiNode } from "./jspi-node.mjs";

/**
 * The suites run again on the newer Node: those that start guests, against every runtime the
 * Node has, and those whose cases need a newer Node than the machine's (native `await using`).
 */
const GUEST_SUITES = [
  "test/guest-runtime.test.ts",
  "test/guest-languages.test.ts",
  "test/guest-lifecycle.test.ts",
  "test/guest-inline.test.ts",
  "test/guest-kinds.test.ts",
  "test/guest-worker.test.ts",
  "test/guest-shapes.test.ts",
  "test/guest-tracing.test.ts",
  "test/guest-extism-kernel.test.ts",
  "test/guest-extism-locks.test.ts",
  "test/guest-extism-scheduler.test.ts",
  "test/declared-schedules.test.ts",
  "test/abi.test.ts",
  "test/host.test.ts",
  "test/scheduler.test.ts",
  "test/scheduler-instances.test.ts",
  "test/metrics.test.ts",
  "test/dispose.test.ts",
  "test/testing-guest.test.ts",
];

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
const args = process.argv.slice(2);

function run(node, argv) {
  const r = spawnSync(node, [vitest, "run", ...argv], { stdio: "inherit", cwd: root });
  return r.status ?? 1;
}

const first = run(process.execPath, args);
const hasJspi = typeof WebAssembly.Suspending === "function";
if (hasJspi || process.env.LOCKHOST_TEST_JSPI === "0") process.exit(first);

// Positional arguments filter files: the second run takes the guest suites they select.
const filters = args.filter((a, i) => !a.startsWith("-") && !(i > 0 && /^--(outputFile|reporter|project|config|exclude)$/.test(args[i - 1])));
const suites = filters.length === 0 ? GUEST_SUITES : GUEST_SUITES.filter((s) => filters.some((f) => s.includes(f)));
if (suites.length === 0) process.exit(first);
const options = args.filter((a) => !filters.includes(a)).map((a) => (a.startsWith("--outputFile=") ? `${a}.jspi.json` : a));
const node = jspiNode();
const version = spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim();
console.log(`\nnpm test: the guest suites again on Node ${version} (WebAssembly JSPI), for the inline runtime\n`);
const second = run(node, [...options, ...suites]);
process.exit(first || second);
