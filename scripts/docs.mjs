#!/usr/bin/env node
// Writes the generated blocks of the docs from their sources (run after a build):
//   README.md  config-reference  from the config declarations and every registered backend's
//   README.md  abi-ops, abi-capability-ops  from abi/ops.ts, in brief
//   README.md, abi/ABI.md  lock-kinds  from the kind table, kit/kinds.ts
//   README.md  metrics  from the series table, host/admin/metric-series.ts
//   abi/ABI.md abi-ops, abi-capability-ops  from abi/ops.ts
//   abi/rust/src/sys.rs, abi/c/lockhost_abi.h  whole files, from abi/ops.ts and abi/status.ts
// test/docs.test.ts fails when a block and its source disagree.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (file) => import(path.join(ROOT, "dist/host", file));
await dist("index.js"); // registers the built-in backends
const { withBlock } = await dist("docs/blocks.js");
const { configReference } = await dist("docs/config-reference.js");
const { abiBriefTable, abiSpecTable } = await dist("docs/abi-ops.js");
const { cAbi, rustSys } = await dist("docs/guest-sdks.js");
const { kindsTable } = await dist("docs/kinds-table.js");
const { metricsTable } = await dist("docs/metrics-table.js");

const write = (file, blocks) => {
  const at = path.join(ROOT, file);
  let text = readFileSync(at, "utf8");
  for (const [name, content] of blocks) text = withBlock(text, name, content);
  writeFileSync(at, text);
  console.log(`${file}: ${blocks.map(([name]) => name).join(", ")} written`);
};
write("README.md", [["config-reference", configReference()], ["abi-ops", abiBriefTable("lock")], ["abi-capability-ops", abiBriefTable("capabilities")], ["lock-kinds", kindsTable()], ["metrics", metricsTable()]]);
write("abi/ABI.md", [["abi-ops", abiSpecTable("lock")], ["abi-capability-ops", abiSpecTable("capabilities")], ["lock-kinds", kindsTable()]]);

const status = readFileSync(path.join(ROOT, "abi/status.ts"), "utf8");
for (const [file, content] of [["abi/rust/src/sys.rs", rustSys(status)], ["abi/c/lockhost_abi.h", cAbi(status)]]) {
  writeFileSync(path.join(ROOT, file), content);
  console.log(`${file}: written`);
}
