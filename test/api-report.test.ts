// The public surface as built: api/<entry>.api.md is what each entry of package.json's "exports"
// exports, with each name's declaration, so that a change to the surface is seen in review. Also
// what importing an entry does: lockhost/testing loads no admin server, and importing lockhost
// registers nothing (the first call that needs the backend registry registers the built-ins).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module of the scripts, without types.
import { apiReports } from "../scripts/api-report.mjs";

const root = join(import.meta.dirname, "..");

describe("the API report", () => {
  it("api/*.api.md is the built surface of every entry (after a surface change: npm run api)", () => {
    for (const { file, text } of apiReports(root) as { file: string; text: string }[]) {
      let committed: string;
      try {
        committed = readFileSync(join(root, file), "utf8");
      } catch {
        committed = "";
      }
      expect(committed, `${file} differs from the built surface: run \`npm run api\` and commit the change`).toBe(text);
    }
  }, 120_000);
});

/**
 * The built modules `entry` loads, following its relative imports, and the packages it imports:
 * `packages` on import, `lazy` only when a call needs them (`import("...")`).
 */
function importGraph(entry: string): { files: string[]; packages: string[]; lazy: string[] } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const lazy = new Set<string>();
  const visit = (file: string): void => {
    if (files.has(file)) return;
    files.add(file);
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/^(?:import|export)\s[^;]*?from\s+"([^"]+)"|^import\s+"([^"]+)"|\bimport\("([^"]+)"\)/gm)) {
      const spec = (m[1] ?? m[2] ?? m[3])!;
      if (spec.startsWith(".")) visit(resolve(dirname(file), spec));
      else (m[3] === undefined ? packages : lazy).add(spec);
    }
  };
  visit(join(root, entry));
  return { files: [...files].map((f) => f.slice(root.length + 1)), packages: [...packages], lazy: [...lazy] };
}

describe("what importing an entry does", () => {
  it("lockhost/testing loads no admin server, HTTP server or metrics; a test guest's HTTP client only on its first request", () => {
    const { files, packages, lazy } = importGraph("dist/testing/index.js");
    const network = ["node:http", "node:https", "prom-client", "undici"];
    expect(files.filter((f) => f.startsWith("dist/host/admin/"))).toEqual([]);
    expect(packages.filter((p) => network.includes(p))).toEqual([]);
    // loadGuest starts plugins as the host does: the http capability imports undici when a guest first sends a request.
    expect(lazy.filter((p) => network.includes(p) && !packages.includes(p))).toEqual(["undici"]);
  });

  it("lockhost/backend loads nothing of the host", () => {
    expect(importGraph("dist/kit/index.js").files.filter((f) => !f.startsWith("dist/kit/") && !f.startsWith("dist/abi/"))).toEqual([]);
  });

  it("lockhost registers no backend on import; the first config it resolves registers the built-ins", async () => {
    const script = [
      `const { resolveConfig } = await import(${JSON.stringify(pathToFileURL(join(root, "dist/host/index.js")).href)});`,
      `const { backendNames } = await import(${JSON.stringify(pathToFileURL(join(root, "dist/host/registry/registry.js")).href)});`,
      "const before = backendNames();",
      'resolveConfig({ locking: { backend: "memory" } });',
      "console.log(JSON.stringify({ before, after: backendNames() }));",
    ].join("\n");
    const { stdout } = await promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], { cwd: root, timeout: 30_000 });
    expect(JSON.parse(stdout)).toEqual({ before: [], after: ["memory", "redis", "pg", "etcd"] });
  });
});
