#!/usr/bin/env node
// Writes the generated blocks of the docs from their sources (run after a build). Which file
// holds which block is one table, host/docs/pages.ts (DOC_FILES): the config reference and the
// metrics list in docs/operators.md, the import tables and status codes in docs/abi.md and
// abi/ABI.md, the kind table in docs/lock-model.md and abi/ABI.md, and so on. Also writes two
// whole files:
//   abi/rust/src/sys.rs, abi/c/lockhost_abi.h  from abi/ops.ts and abi/status.ts
// test/docs.test.ts fails when a block and its source disagree.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const dist = (file) => import(path.join(ROOT, "dist/host", file));
// The config reference lists every built-in backend's table: register them, as the composition roots do.
const { registerBackend } = await dist("registry/registry.js");
const { BUILTIN_BACKENDS } = await import(path.join(ROOT, "dist/plugins/backends/index.js"));
for (const descriptor of BUILTIN_BACKENDS) registerBackend(descriptor);
const { withBlock } = await dist("docs/blocks.js");
const { DOC_FILES } = await dist("docs/pages.js");
const { cAbi, rustSys } = await dist("docs/guest-sdks.js");

const status = readFileSync(path.join(ROOT, "abi/status.ts"), "utf8");
for (const { file, blocks } of DOC_FILES) {
  const at = path.join(ROOT, file);
  let text = readFileSync(at, "utf8");
  for (const block of blocks) text = withBlock(text, block.name, block.write({ status }));
  writeFileSync(at, text);
  console.log(`${file}: ${blocks.map((b) => b.name).join(", ")} written`);
}

for (const [file, content] of [
  ["abi/rust/src/sys.rs", rustSys(status)],
  ["abi/c/lockhost_abi.h", cAbi(status)],
]) {
  writeFileSync(path.join(ROOT, file), content);
  console.log(`${file}: written`);
}
