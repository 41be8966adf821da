// Which file of the docs holds which generated block, and what writes it: the one table that
// `npm run docs` (scripts/docs.mjs) writes from and test/docs.test.ts holds the files to. A block
// moves to another page by moving its row here and its markers there.
import { abiBriefTable, abiSpecTable } from "./abi-ops.js";
import { adminRoutesTable } from "./admin-routes.js";
import { capabilitiesTable } from "./capabilities-table.js";
import { configReference } from "./config-reference.js";
import { extismFunctionsTable } from "./extism-functions.js";
import { kindsTable } from "./kinds-table.js";
import { metricsTable } from "./metrics-table.js";
import { signalsTable } from "./signals-table.js";
import { statusCodesTable } from "./status-codes.js";
import { tracingTable } from "./tracing-table.js";

/** The sources a block may need besides the modules it imports: abi/status.ts as text. */
export interface DocSources {
  readonly status: string;
}

/** One generated block: its marker name, and its content from the sources. */
export interface DocBlock {
  readonly name: string;
  readonly write: (sources: DocSources) => string;
}

/** A file of the docs, relative to the package root, and the blocks it holds. */
export interface DocFile {
  readonly file: string;
  readonly blocks: readonly DocBlock[];
}

/** Every file with generated blocks. A block name may appear in several files, each written alike. */
export const DOC_FILES: readonly DocFile[] = [
  {
    file: "docs/operators.md",
    blocks: [
      { name: "signals", write: () => signalsTable() },
      { name: "config-reference", write: () => configReference() },
      { name: "metrics", write: () => metricsTable() },
      { name: "admin-routes", write: () => adminRoutesTable() },
      { name: "tracing", write: () => tracingTable() },
    ],
  },
  {
    file: "docs/abi.md",
    blocks: [
      { name: "abi-ops", write: () => abiBriefTable("lock") },
      { name: "status-codes", write: (s) => statusCodesTable(s.status) },
    ],
  },
  {
    file: "docs/guests.md",
    blocks: [
      { name: "capabilities", write: () => capabilitiesTable() },
      { name: "abi-capability-ops", write: () => abiBriefTable("capabilities") },
    ],
  },
  { file: "docs/lock-model.md", blocks: [{ name: "lock-kinds", write: () => kindsTable() }] },
  { file: "docs/guests-extism.md", blocks: [{ name: "extism-lock-functions", write: () => extismFunctionsTable() }] },
  {
    file: "abi/ABI.md",
    blocks: [
      { name: "abi-ops", write: () => abiSpecTable("lock") },
      { name: "abi-capability-ops", write: () => abiSpecTable("capabilities") },
      { name: "lock-kinds", write: () => kindsTable() },
    ],
  },
];
