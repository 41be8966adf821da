#!/usr/bin/env node
// Compiles the TypeScript when it changed (`npm run build:ts`; scripts/build-cache.mjs says how
// "changed" is decided): the package (tsconfig.build.json -> dist/) and the dashboard's browser
// code (tsconfig.client.json, then its static files: scripts/dashboard-assets.mjs). Each project
// says in one line whether it compiled, and why, or was up to date.
//
// A project's inputs: the files its tsconfig's include/exclude select (so a new file counts), the
// files tsc read on its last compile outside node_modules, the tsconfig files, and
// package-lock.json (the dependencies' types); the key is the TypeScript version. Its outputs:
// one .js per .ts it selects.
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BuildCache, filesUnder, packageVersion } from "./build-cache.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TSC = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");

/** A tsconfig as JSON (the client's has comments: whole-line // comments only). */
function readTsconfig(file) {
  const text = readFileSync(path.join(ROOT, file), "utf8").replace(/^\s*\/\/.*$/gm, "");
  return JSON.parse(text);
}

/** The files `include` selects less `exclude`: entries are files, or "dir/**\/*.ts" and "dir/*.ts" patterns. */
function selected(include, exclude) {
  const excluded = (rel) => exclude.some((e) => rel === e || rel.startsWith(`${e}/`));
  const files = new Set();
  for (const pattern of include) {
    const m = /^(.*?)\/(\*\*\/)?\*\.ts$/.exec(pattern);
    if (!m) {
      if (existsSync(path.join(ROOT, pattern))) files.add(path.join(ROOT, pattern));
      continue;
    }
    const dir = path.join(ROOT, m[1]);
    const deep = m[2] !== undefined;
    for (const file of filesUnder(dir, (rel) => rel.endsWith(".ts") && (deep || !rel.includes(path.sep)))) files.add(file);
  }
  return [...files].filter((f) => !excluded(path.relative(ROOT, f).split(path.sep).join("/"))).sort();
}

/** The .js file tsc writes for `source` under `outDir` from `rootDir`. */
const jsOf = (source, rootDir, outDir) => path.join(ROOT, outDir, path.relative(path.join(ROOT, rootDir), source)).replace(/\.ts$/, ".js");

const PROJECTS = [
  {
    id: "package",
    tsconfig: "tsconfig.build.json",
    configs: ["tsconfig.json", "tsconfig.build.json"],
    rootDir: ".",
    outDir: "dist",
    cache: "dist/.build-cache.json",
  },
  {
    id: "dashboard",
    tsconfig: "tsconfig.client.json",
    configs: ["tsconfig.client.json", "scripts/dashboard-assets.mjs"],
    rootDir: "host/admin/dashboard/client",
    outDir: "dist/host/admin/dashboard/client",
    cache: "dist/.build-cache-dashboard.json",
    // Its page, stylesheet and icon are copied beside the compiled modules.
    after: () => execFileSync(process.execPath, [path.join(ROOT, "scripts/dashboard-assets.mjs")], { stdio: "inherit" }),
    extra: () => filesUnder(path.join(ROOT, "host/admin/dashboard/client"), (rel) => !rel.endsWith(".ts")),
  },
];

function build(project) {
  const t0 = performance.now();
  const own = readTsconfig(project.tsconfig);
  const base = own.extends ? readTsconfig(own.extends) : {};
  const sources = selected(own.include ?? base.include ?? [], own.exclude ?? base.exclude ?? []);
  const extra = project.extra?.() ?? [];
  const outputs = [
    ...sources.filter((s) => !s.endsWith(".d.ts")).map((s) => jsOf(s, project.rootDir, project.outDir)),
    ...extra.map((f) => path.join(ROOT, project.outDir, path.relative(path.join(ROOT, project.rootDir), f))),
  ];
  // The selection is part of the key: a file added or removed compiles again.
  const list = createHash("sha256")
    .update(sources.map((s) => path.relative(ROOT, s)).join("\n"))
    .digest("hex")
    .slice(0, 16);
  const key = `tsc ${packageVersion(ROOT, "typescript")} files ${list}`;
  const cache = new BuildCache(path.join(ROOT, project.cache), ROOT);
  const label = `build:ts: ${project.id} (${project.tsconfig})`;
  if (cache.upToDate(project.id, key, outputs)) {
    console.log(`${label}: up to date, ${sources.length} files unchanged; nothing compiled`);
    return true;
  }
  const why = cache.changed(project.id, key);
  const shown = why.length > 3 ? `${why.slice(0, 3).join(", ")} and ${why.length - 3} more` : why.join(", ");
  console.log(`${label}: compiling ${sources.length} files (${why[0]?.startsWith("tsc ") ? "the TypeScript version or the file list changed" : shown})`);
  let listed;
  try {
    listed = execFileSync(process.execPath, [TSC, "-p", project.tsconfig, "--listFiles"], { cwd: ROOT, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 });
  } catch (err) {
    // tsc prints its errors on stdout; leave only them (not the file list).
    const out = String(err.stdout ?? "")
      .split("\n")
      .filter((l) => !/^\/.*\.(d\.)?[cm]?ts$/.test(l))
      .join("\n");
    process.stdout.write(out);
    process.stderr.write(String(err.stderr ?? ""));
    cache.forget(project.id);
    cache.save();
    console.error(`${label}: failed`);
    return false;
  }
  project.after?.();
  // What tsc read outside node_modules (and outside TypeScript's own lib files) is an input too.
  const read = listed
    .split("\n")
    .filter((l) => l.startsWith(ROOT + path.sep) && !l.includes(`${path.sep}node_modules${path.sep}`))
    .map((l) => l.trim());
  const inputs = [...sources, ...read, ...extra, ...project.configs.map((c) => path.join(ROOT, c)), path.join(ROOT, "package-lock.json")];
  cache.record(project.id, key, inputs);
  cache.save();
  console.log(`${label}: compiled in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return true;
}

let ok = true;
for (const project of PROJECTS) ok = build(project) && ok;
if (!ok) process.exit(1);
