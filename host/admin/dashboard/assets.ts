// The dashboard's files as the listener serves them: its page, stylesheet and icon, and its
// browser modules (./client/*.ts) compiled to JavaScript. In the build they lie next to this
// module, compiled by `npm run build:dashboard` (tsconfig.client.json); from source (tests under
// vitest) the modules are compiled here, with TypeScript (a dev dependency), from that very
// source rather than from an earlier build of it.
import { readdir, readFile } from "node:fs/promises";
import { extname } from "node:path";
import { fileURLToPath } from "node:url";

/** One file the dashboard serves. */
export interface Asset {
  readonly type: string;
  readonly body: string;
}

/** The content type of each extension served; other files in the folder are not. */
const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".js": "application/javascript; charset=utf-8",
  ".svg": "image/svg+xml",
};

const CLIENT = new URL("./client/", import.meta.url);
const FROM_SOURCE = import.meta.url.endsWith(".ts");

/** The dashboard's files by name ("index.html", "main.js", ...). */
export async function loadAssets(): Promise<ReadonlyMap<string, Asset>> {
  const dir = fileURLToPath(CLIENT);
  const files = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    throw new Error(`the dashboard's files are missing at ${dir} (${err.code ?? err.message}): build them with npm run build`);
  });
  const compile = FROM_SOURCE ? await sourceCompiler() : undefined;
  const assets = new Map<string, Asset>();
  for (const file of files) {
    if (file.endsWith(".d.ts") || file.endsWith(".map")) continue;
    if (compile !== undefined && file.endsWith(".ts")) {
      assets.set(file.replace(/\.ts$/, ".js"), { type: TYPES[".js"]!, body: compile(await readFile(new URL(file, CLIENT), "utf8")) });
      continue;
    }
    const type = TYPES[extname(file)];
    if (type !== undefined) assets.set(file, { type, body: await readFile(new URL(file, CLIENT), "utf8") });
  }
  if (!assets.has("main.js")) throw new Error(`the dashboard's modules are missing at ${dir}: build them with npm run build`);
  return assets;
}

/** Compiles one browser module as tsconfig.client.json does (only types are stripped: each file stands alone). */
async function sourceCompiler(): Promise<(source: string) => string> {
  const { default: ts } = await import("typescript");
  const compilerOptions = { target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ES2022, sourceMap: false };
  return (source) => ts.transpileModule(source, { compilerOptions }).outputText;
}
