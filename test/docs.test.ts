// The docs' generated blocks and the AssemblyScript SDK's raw bindings are held to their one
// source: the config declarations and the operation table (abi/ops.ts). After changing either,
// `npm run docs` rewrites the blocks; the bindings are written by hand, and this says what differs.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FUNCTION_MODULE, OPS, PARAMS_OF, type OpSpec } from "../abi/ops.js";
import * as S from "../abi/status.js";
import { abiBriefTable, abiSpecTable } from "../host/docs/abi-ops.js";
import { withBlock } from "../host/docs/blocks.js";
import { configReference } from "../host/docs/config-reference.js";
import { kindsTable } from "../host/docs/kinds-table.js";
import { metricsTable } from "../host/docs/metrics-table.js";
import { allSeries } from "../host/admin/metric-series.js";
import { LOCK_KINDS } from "../kit/kinds.js";
import { cAbi, rustSys, statusConstants } from "../host/docs/guest-sdks.js";
import { PROVIDED_IMPORTS } from "../host/runtime/guest-module.js";

const root = join(import.meta.dirname, "..");
const read = (file: string): string => readFileSync(join(root, file), "utf8");
const ops = OPS as readonly OpSpec[];

describe("generated doc blocks (npm run docs rewrites them)", () => {
  it("the README's config reference is what the declarations say", () => {
    const readme = read("README.md");
    expect(readme).toBe(withBlock(readme, "config-reference", configReference()));
  });

  it("the README's config reference names every table and key the reader accepts", () => {
    const reference = configReference();
    for (const key of ["[locking.redis]", "key_prefix =", "[locking.pg]", "sessions =", "renew_at_ratio =", "poll_interval_ms =", "token =", "global_keys =", "ttl_ms =", "packages ="]) {
      expect(reference).toContain(key);
    }
  });

  it("ABI.md's and the README's import tables are the operation table", () => {
    const spec = read("abi/ABI.md");
    expect(spec).toBe(withBlock(spec, "abi-ops", abiSpecTable("lock")));
    expect(spec).toBe(withBlock(spec, "abi-capability-ops", abiSpecTable("capabilities")));
    const readme = read("README.md");
    expect(readme).toBe(withBlock(readme, "abi-ops", abiBriefTable("lock")));
    expect(readme).toBe(withBlock(readme, "abi-capability-ops", abiBriefTable("capabilities")));
  });
});

describe("the kind table in the docs (npm run docs rewrites it)", () => {
  it("ABI.md's and the README's tables of lock kinds are the kind table, a row per kind", () => {
    for (const file of ["abi/ABI.md", "README.md"]) {
      const text = read(file);
      expect(text, file).toBe(withBlock(text, "lock-kinds", kindsTable()));
    }
    for (const kind of LOCK_KINDS) expect(kindsTable()).toContain(`| \`${kind}\` |`);
  });
});

describe("the README's metrics (npm run docs rewrites the list)", () => {
  it("lists every series of the series table, a row each", () => {
    const readme = read("README.md");
    expect(readme).toBe(withBlock(readme, "metrics", metricsTable()));
    for (const row of allSeries()) expect(metricsTable()).toContain(`| \`${row.name}\` | ${row.type} |`);
  });

  it("alerts, in its rule example, only on series the table lists", () => {
    const rules = /```yaml\n(groups:[\s\S]*?)```/.exec(read("README.md"))?.[1];
    expect(rules).toBeDefined();
    const named = new Set([...rules!.matchAll(/\b(lockhost_[a-z_]+)/g)].map((m) => m[1]!.replace(/_(bucket|sum|count)$/, "")));
    expect(named.size).toBeGreaterThanOrEqual(3);
    const series = new Set(allSeries().map((r) => r.name));
    for (const name of named) expect(series.has(name), name).toBe(true);
  });
});

describe("the Rust and C SDKs' generated files (npm run docs rewrites them)", () => {
  const status = read("abi/status.ts");

  it("abi/rust/src/sys.rs and abi/c/lockhost_abi.h are what abi/ops.ts and abi/status.ts say", () => {
    expect(read("abi/rust/src/sys.rs")).toBe(rustSys(status));
    expect(read("abi/c/lockhost_abi.h")).toBe(cAbi(status));
  });

  it("carry every constant of abi/status.ts with its value, and an import per operation", () => {
    const constants = statusConstants(status);
    expect(constants.map((c) => c.name).sort()).toEqual(Object.keys(S).sort());
    for (const c of constants) {
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
    expect(Object.keys(PROVIDED_IMPORTS).filter((m) => m !== "env").sort()).toEqual([...modules].sort());
    for (const module of modules) expect([...PROVIDED_IMPORTS[module]!].sort(), module).toEqual(ops.filter((op) => op.module === module).map((op) => op.name).sort());
  });

  it("names only status codes abi/status.ts defines", () => {
    for (const op of ops) for (const code of op.codes) expect(S, `${op.name}: ${code}`).toHaveProperty(code);
  });

  it("matches the SDK's raw bindings (abi/assembly/bindings.ts), name for name and param for param", () => {
    const bindings = read("abi/assembly/bindings.ts");
    const declared = [...bindings.matchAll(/@external\("(\w+)", "(\w+)"\)\s*export declare function \w+\(([^)]*)\): (\w+);/g)].map(
      ([, module, name, params, result]) => ({ name: `${module}.${name}`, params: params!.split(",").map((p) => p.trim().split(": ")[1]).filter(Boolean), result }),
    );
    const expected = ops.filter((op) => op.module !== FUNCTION_MODULE).map((op) => ({
      name: `${op.module}.${op.name}`,
      // Pointers are usize in AssemblyScript (i32 on wasm32); every other param is i32.
      params: op.args.flatMap((kind) => PARAMS_OF[kind].map((p) => (p.endsWith("_ptr") ? "usize" : "i32"))),
      result: op.result,
    }));
    expect(declared.sort(byName)).toEqual(expected.sort(byName));
  });
});

const byName = (a: { name?: string }, b: { name?: string }): number => (a.name! < b.name! ? -1 : 1);
