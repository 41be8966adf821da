#!/usr/bin/env node
// The public surface of every entry point of package.json's "exports", as it is built: for
// each entry, the names its .d.ts exports and each one's declaration (without comments), written
// to api/<entry>.api.md. A change to what an entry exports, or to the signature of an exported
// name, shows as a change to these files in review. test/api-report.test.ts fails when a file
// differs from the built surface. Run after a build: `npm run api` builds and writes them.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import ts from "typescript";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const OUT = "api";

/** The entries of package.json's "exports" that have types: [subpath, .d.ts file, report file]. */
export function entries(root = ROOT) {
  const pkg = JSON.parse(readFileSync(path.join(root, "package.json"), "utf8"));
  return Object.entries(pkg.exports)
    .filter(([, target]) => typeof target === "object" && target.types)
    .map(([subpath, target]) => {
      const name = subpath === "." ? pkg.name : subpath.slice(2);
      return { subpath: subpath === "." ? pkg.name : `${pkg.name}/${subpath.slice(2)}`, types: path.join(root, target.types), file: `${OUT}/${name}.api.md` };
    });
}

const printer = ts.createPrinter({ removeComments: true, newLine: ts.NewLineKind.LineFeed });

/** The declaration text of one exported symbol, comments left out. */
function declarationText(checker, symbol, local) {
  const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
  const decls = target.declarations ?? [];
  if (decls.length === 0) return `// ${local}: no declaration`;
  const parts = [];
  for (const decl of decls) {
    if (ts.isSourceFile(decl) || ts.isModuleDeclaration(decl)) {
      // `export * as name from "..."`: the names of that module.
      const names = checker
        .getExportsOfModule(target)
        .map((s) => s.name)
        .sort();
      parts.push(`namespace ${local} { ${names.join(", ")} }`);
      continue;
    }
    const node = ts.isVariableDeclaration(decl) ? decl.parent.parent : decl;
    let text = printer.printNode(ts.EmitHint.Unspecified, node, decl.getSourceFile());
    if (ts.isVariableDeclaration(decl) && decl.parent.declarations.length > 1) {
      text = `declare const ${printer.printNode(ts.EmitHint.Unspecified, decl, decl.getSourceFile())};`;
    }
    // The name as this entry exports it, when it renames on the way.
    if (target.name !== local && target.name !== "default") text = `// exported as ${local}\n${text}`;
    parts.push(text.replace(/^export /gm, "").replace(/^declare /gm, ""));
  }
  return parts.join("\n");
}

/** The lockhost types the exported declarations name that the entry does not export, by name. */
function unexported(checker, exported, root) {
  const resolve = (s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const own = new Set(exported.map(resolve));
  const found = new Set();
  const visit = (node) => {
    const name = ts.isTypeReferenceNode(node)
      ? node.typeName
      : ts.isExpressionWithTypeArguments(node)
        ? node.expression
        : ts.isTypeQueryNode(node)
          ? node.exprName
          : undefined;
    const symbol = name && checker.getSymbolAtLocation(name);
    if (symbol) {
      const target = resolve(symbol);
      const file = target.declarations?.[0]?.getSourceFile().fileName ?? "";
      const ours = file.startsWith(root) && !file.includes("/node_modules/");
      if (ours && !(target.flags & ts.SymbolFlags.TypeParameter) && !own.has(target)) found.add(target.name);
    }
    ts.forEachChild(node, visit);
  };
  for (const symbol of own) for (const decl of symbol.declarations ?? []) if (!ts.isSourceFile(decl)) visit(decl);
  return [...found].sort((a, b) => a.localeCompare(b, "en"));
}

/** The reports, one per entry: { file, text, count }. */
export function apiReports(root = ROOT) {
  const list = entries(root);
  const program = ts.createProgram(
    list.map((e) => e.types),
    {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      noEmit: true,
      skipLibCheck: true,
      types: ["node"],
    },
  );
  const checker = program.getTypeChecker();
  return list.map(({ subpath, types, file }) => {
    const source = program.getSourceFile(types);
    if (!source) throw new Error(`${path.relative(root, types)} is not built: run npm run build:ts`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    const exported = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
    const names = exported.map((s) => s.name).sort((a, b) => a.localeCompare(b, "en"));
    const bySymbol = new Map(exported.map((s) => [s.name, s]));
    const lines = [
      `# ${subpath}`,
      "",
      `<!-- Written by scripts/api-report.mjs from ${path.relative(root, types)}; do not edit: run \`npm run api\`. -->`,
      "",
      `${names.length} exported names: ${names.map((n) => `\`${n}\``).join(", ")}.`,
      "",
    ];
    const missing = unexported(checker, exported, root);
    if (missing.length > 0) {
      lines.push(`Named in these declarations but not exported (a caller can use them, not name them): ${missing.map((n) => `\`${n}\``).join(", ")}.`, "");
    }
    for (const name of names) {
      lines.push(`## ${name}`, "", "```ts", declarationText(checker, bySymbol.get(name), name), "```", "");
    }
    return { file, text: lines.join("\n"), count: names.length };
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  mkdirSync(path.join(ROOT, OUT), { recursive: true });
  for (const { file, text, count } of apiReports()) {
    writeFileSync(path.join(ROOT, file), text);
    console.log(`${file}: ${count} names`);
  }
}
