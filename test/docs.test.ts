// The docs' generated blocks and the AssemblyScript SDK's raw bindings are held to their one
// source: the config declarations, the operation table (abi/ops.ts), the kind table and the status
// codes. After changing one, `npm run docs` rewrites the blocks (host/docs/pages.ts says which file
// holds which); the bindings are written by hand, and this says what differs. The links of the
// README and docs/ are held to the packed package: every one resolves inside it.
import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { join, posix } from "node:path";
import { promisify } from "node:util";
import GithubSlugger from "github-slugger";
import { marked, type Token, type Tokens } from "marked";
import { beforeAll, describe, expect, it } from "vitest";
import { FUNCTION_MODULE, OPS, PARAMS_OF, type OpSpec } from "../abi/ops.js";
import * as S from "../abi/status.js";
import { withBlock } from "../host/docs/blocks.js";
import { configReference } from "../host/docs/config-reference.js";
import { kindsTable } from "../host/docs/kinds-table.js";
import { metricsTable } from "../host/docs/metrics-table.js";
import { DOC_FILES } from "../host/docs/pages.js";
import { statusCodesTable } from "../host/docs/status-codes.js";
import { allSeries } from "../host/admin/metric-series.js";
import { LOCK_KINDS } from "../kit/kinds.js";
import { cAbi, rustSys, statusConstants } from "../host/docs/guest-sdks.js";
import { PROVIDED_IMPORTS } from "../host/runtime/guest-module.js";

const root = join(import.meta.dirname, "..");
const read = (file: string): string => readFileSync(join(root, file), "utf8");
const ops = OPS as readonly OpSpec[];
const run = promisify(execFile);
/** The Markdown a reader navigates: the front page, the pages it links to, the ABI spec. */
const pages = [
  "README.md",
  "abi/ABI.md",
  ...readdirSync(join(root, "docs"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `docs/${f}`),
];

const status = read("abi/status.ts");

describe("generated doc blocks (npm run docs rewrites them; host/docs/pages.ts says which file holds which)", () => {
  it.each(DOC_FILES.flatMap(({ file, blocks }) => blocks.map((block) => [file, block.name, block] as const)))(
    "%s: %s is what its source says",
    (file, _, block) => {
      const text = read(file);
      expect(text).toBe(withBlock(text, block.name, block.write({ status })));
    },
  );

  it("no page holds a block the table does not list for it (a moved block leaves no stale copy behind)", () => {
    const found = pages.flatMap((file) => [...read(file).matchAll(/<!-- ([\w-]+):begin /g)].map((m) => `${file}: ${m[1]}`));
    const listed = DOC_FILES.flatMap(({ file, blocks }) => blocks.map((b) => `${file}: ${b.name}`));
    expect(found.sort()).toEqual(listed.sort());
  });

  it("the config reference names every table and key the reader accepts", () => {
    const reference = configReference();
    for (const key of [
      "[locking.redis]",
      "key_prefix =",
      "[locking.pg]",
      "sessions =",
      "renew_at_ratio =",
      "poll_interval_ms =",
      "token =",
      "global_keys =",
      "ttl_ms =",
      "packages =",
    ]) {
      expect(reference).toContain(key);
    }
  });

  it("the status-code table runs from 1 without a gap, through every code an operation returns", () => {
    const values = statusCodesTable(status)
      .split("\n")
      .slice(2)
      .map((row) => Number(row.split("|")[1]));
    expect(values).toEqual(values.map((_, i) => i + 1));
    // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the test looks each code up by name
    for (const code of new Set(ops.flatMap((op) => op.codes))) expect(values, code).toContain(S[code as keyof typeof S]);
  });
});

describe("the kind table in the docs (npm run docs rewrites it)", () => {
  it("has a row per kind", () => {
    for (const kind of LOCK_KINDS) expect(kindsTable()).toContain(`| \`${kind}\` |`);
  });
});

describe("the operator guide's metrics (npm run docs rewrites the list in docs/operators.md)", () => {
  it("lists every series of the series table, a row each", () => {
    for (const row of allSeries()) expect(metricsTable()).toContain(`| \`${row.name}\` | ${row.type} |`);
  });

  it("alerts, in its rule example, only on series the table lists", () => {
    const rules = /```yaml\n(groups:[\s\S]*?)```/.exec(read("docs/operators.md"))?.[1];
    expect(rules).toBeDefined();
    const named = new Set([...rules!.matchAll(/\b(lockhost_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, "")));
    expect(named.size).toBeGreaterThanOrEqual(3);
    const series = new Set(allSeries().map((r) => r.name));
    for (const name of named) expect(series.has(name), name).toBe(true);
  });
});

describe("the Rust and C SDKs' generated files (npm run docs rewrites them)", () => {
  it("abi/rust/src/sys.rs and abi/c/lockhost_abi.h are what abi/ops.ts and abi/status.ts say", () => {
    expect(read("abi/rust/src/sys.rs")).toBe(rustSys(status));
    expect(read("abi/c/lockhost_abi.h")).toBe(cAbi(status));
  });

  it("carry every constant of abi/status.ts with its value, and an import per operation", () => {
    const constants = statusConstants(status);
    expect(constants.map((c) => c.name).sort()).toEqual(Object.keys(S).sort());
    for (const c of constants) {
      // biome-ignore lint/performance/noDynamicNamespaceImportAccess: the test looks each constant up by name
      expect(c.value, c.name).toBe(S[c.name as keyof typeof S]);
      expect(rustSys(status)).toContain(`pub const ${c.name}: i32 = ${c.value};`);
      expect(cAbi(status)).toContain(`#define LOCKHOST_${c.name} ${c.value}`);
    }
    // The host function row is no import of its own: its module and name are the embedder's.
    for (const op of ops.filter((o) => o.module !== FUNCTION_MODULE)) {
      expect(rustSys(status)).toContain(`#[link(wasm_import_module = "${op.module}")]`);
      expect(rustSys(status)).toContain(`#[link_name = "${op.name}"]`);
      expect(cAbi(status)).toContain(`import_module("${op.module}"), import_name("${op.name}")`);
    }
  });
});

describe("the operation table", () => {
  it("is what the loader accepts as each ABI module's imports (host functions are the embedder's)", () => {
    const modules = new Set(ops.map((op) => op.module).filter((m) => m !== FUNCTION_MODULE));
    expect(
      Object.keys(PROVIDED_IMPORTS)
        .filter((m) => m !== "env")
        .sort(),
    ).toEqual([...modules].sort());
    for (const module of modules)
      expect([...PROVIDED_IMPORTS[module]!].sort(), module).toEqual(
        ops
          .filter((op) => op.module === module)
          .map((op) => op.name)
          .sort(),
      );
  });

  it("names only status codes abi/status.ts defines", () => {
    for (const op of ops) for (const code of op.codes) expect(S, `${op.name}: ${code}`).toHaveProperty(code);
  });

  it("matches the SDK's raw bindings (abi/assembly/bindings.ts), name for name and param for param", () => {
    const bindings = read("abi/assembly/bindings.ts");
    const declared = [...bindings.matchAll(/@external\("(\w+)", "(\w+)"\)\s*export declare function \w+\(([^)]*)\): (\w+);/g)].map(
      ([, module, name, params, result]) => ({
        name: `${module}.${name}`,
        params: params!
          .split(",")
          .map((p) => p.trim().split(": ")[1])
          .filter(Boolean),
        result,
      }),
    );
    const expected = ops
      .filter((op) => op.module !== FUNCTION_MODULE)
      .map((op) => ({
        name: `${op.module}.${op.name}`,
        // Pointers are usize in AssemblyScript (i32 on wasm32); every other param is i32.
        params: op.args.flatMap((kind) => PARAMS_OF[kind].map((p) => (p.endsWith("_ptr") ? "usize" : "i32"))),
        result: op.result,
      }));
    expect(declared.sort(byName)).toEqual(expected.sort(byName));
  });
});

const byName = (a: { name?: string }, b: { name?: string }): number => (a.name! < b.name! ? -1 : 1);

describe("links of the README and docs/ (every one resolves inside the packed package)", () => {
  let packed: ReadonlySet<string>;

  beforeAll(async () => {
    // The file list `npm pack` would write, without building (package.json "files").
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: root, timeout: 120_000 });
    packed = new Set((JSON.parse(stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path));
  }, 120_000);

  it("the package ships the README and every page of docs/", () => {
    for (const page of pages) expect(packed, page).toContain(page);
  });

  it.each(pages)("%s: every relative link names a packed file, and every #anchor a heading there", (page) => {
    const broken: string[] = [];
    for (const href of linksOf(read(page))) {
      if (/^[a-z][a-z+.-]*:/i.test(href)) continue; // https:, mailto: — outside the package by design
      const [path = "", anchor] = href.split("#", 2);
      const target = path === "" ? page : posix.normalize(posix.join(posix.dirname(page), decodeURI(path)));
      if (!packed.has(target)) broken.push(`${href}: ${target} is not in the package`);
      else if (anchor !== undefined && !(target.endsWith(".md") && anchorsOf(read(target)).has(decodeURIComponent(anchor)))) {
        broken.push(`${href}: no heading #${anchor} in ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});

/** The targets of a Markdown text's links and images (code blocks and spans left out, as a reader sees them). */
function linksOf(markdown: string): string[] {
  const hrefs: string[] = [];
  marked.walkTokens(marked.lexer(markdown), (token) => {
    if (token.type === "link" || token.type === "image") hrefs.push((token as Tokens.Link | Tokens.Image).href);
  });
  return hrefs;
}

/** The anchors GitHub gives a Markdown text's headings (github-slugger: the same rules, duplicates numbered). */
function anchorsOf(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const anchors = new Set<string>();
  marked.walkTokens(marked.lexer(markdown), (token) => {
    if (token.type === "heading") anchors.add(slugger.slug(plainText((token as Tokens.Heading).tokens)));
  });
  return anchors;
}

/** A heading's text as rendered: code spans and links reduced to their text. */
function plainText(tokens: readonly Token[]): string {
  return tokens.map((t) => ("tokens" in t && t.tokens ? plainText(t.tokens) : "text" in t ? String(t.text) : "")).join("");
}
