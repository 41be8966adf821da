#!/usr/bin/env node
// Builds the WebAssembly guests:
//   plugins/guests/*.ts            -> plugins/guests/build/<name>.wasm   (AssemblyScript)
//   test/guests/*.ts, *.wat        -> test/guests/build/<name>.wasm      (AssemblyScript, WebAssembly text)
//   test/guests/extism/*.ts        -> test/guests/build/extism-<name>.wasm (AssemblyScript with @extism/as-pdk)
//   <dir>/rust/<crate>/Cargo.toml  -> <dir>/build/rust-<crate>.wasm      (Rust, the `lockhost` crate)
//   <dir>/c/<name>.c               -> <dir>/build/c-<name>.wasm          (C, abi/c/lockhost.h)
//   <dir>/c/<name>.wasi.c          -> <dir>/build/c-<name>.wasm          (C against wasi-libc)
//   for <dir> in plugins/guests, test/guests
//
// Rust and C use Debian's toolchains (scripts/native-guests.mjs says which and how); when one
// is missing the build fails naming the packages, unless LOCKHOST_SKIP_NATIVE_GUESTS=1 (a
// developer's choice; CI installs them: .ci/run).
//
// AssemblyScript goes through asc's programmatic API with the shared options of
// asconfig.json (`--config asconfig.json --target release`, or LOCKHOST_ASC_TARGET=debug).
// Extism guests have their own (test/guests/extism/asconfig.json: the module keeps its own
// memory, as Extism hosts expect) and name their abort hook, as @extism/as-pdk's README says
// (`--use abort=<file>/guestAbort`).
// WebAssembly text goes through the `wabt` package.
//
// `import ... from "lockhost"` in a guest resolves exactly as it does for a plugin
// author who ran `npm install lockhost`: asc looks for `node_modules/lockhost/index.ts`,
// and this script serves that package from the repository itself (see `ascReadFile`).
//
// A guest whose inputs did not change since its last build is not built again
// (scripts/build-cache.mjs; LOCKHOST_BUILD_FORCE=1 builds all): AssemblyScript's inputs are the
// files asc read for it, a .wat its file, a Rust crate its folder and abi/rust, a C file itself
// and abi/c; the key is the compiler (its package version for asc and wabt) and its options.
// The Rust and C toolchains are only looked for when one of those guests is to be built.
//
// Usage: node scripts/build-guests.mjs
// Prints one line per artifact it builds, and one line in all; exits non-zero with the
// compiler's message on failure.

import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { readFile as readFileAsync } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { BuildCache, filesUnder, packageVersion } from "./build-cache.mjs";
import { buildNative, installToolchains, nativeJobs, nativeToolchainProblem } from "./native-guests.mjs";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const TARGET = process.env.LOCKHOST_ASC_TARGET || "release";

// Where asc looks for the package "lockhost" when compiling from ROOT.
const SELF_PKG = path.join(ROOT, "node_modules", "lockhost");
// asc 0.28 resolves a package import to `<pkg>/index.ts` (it does not read
// `ascMain` from package.json). Until the package ships a root index.ts, serve
// this one-line entry in its place.
const SELF_ENTRY = 'export * from "./abi/assembly/index";\n';

/** The files asc read for the guest it is compiling: that guest's inputs. */
let ascRead = new Set();

/** asc `readFile` hook: node_modules/lockhost/<file> is served from ROOT/<file>. */
async function ascReadFile(filename, baseDir) {
  const abs = path.resolve(baseDir, filename);
  let real = abs;
  if (abs.startsWith(SELF_PKG + path.sep)) {
    const rel = path.relative(SELF_PKG, abs);
    real = path.join(ROOT, rel);
    if (rel === "index.ts" && !existsSync(real)) return SELF_ENTRY;
  }
  try {
    const text = await readFileAsync(real, "utf8");
    ascRead.add(real);
    return text;
  } catch {
    return null;
  }
}

/** Compiles one AssemblyScript entry; returns { ok, out, bytes, ms, message }. */
async function buildAsc(entry, out, config = "asconfig.json", extra = []) {
  const t0 = performance.now();
  const { default: asc } = await import("assemblyscript/asc");
  const stdout = asc.createMemoryStream();
  const stderr = asc.createMemoryStream();
  const args = [path.relative(ROOT, entry), "--config", config, "--target", TARGET, "--outFile", path.relative(ROOT, out), "--noColors", ...extra];
  let error;
  try {
    ({ error } = await asc.main(args, { stdout, stderr, readFile: ascReadFile }));
  } catch (e) {
    error = e;
  }
  const ms = performance.now() - t0;
  const diagnostics = stderr.toString().trim();
  if (error) {
    const reason = String(error.message ?? error);
    const message = diagnostics.includes(reason) ? diagnostics : `${diagnostics}\n${reason}`.trim();
    return { ok: false, out, ms, message };
  }
  return { ok: true, out, ms, bytes: statSync(out).size, message: diagnostics };
}

let wabtPromise;
/** Assembles one .wat file. */
async function buildWat(file, out) {
  const t0 = performance.now();
  wabtPromise ??= import("wabt").then((m) => m.default());
  const wabt = await wabtPromise;
  let mod;
  try {
    mod = wabt.parseWat(path.relative(ROOT, file), readFileSync(file, "utf8"));
    mod.resolveNames();
    mod.validate();
    const { buffer } = mod.toBinary({});
    mkdirSync(path.dirname(out), { recursive: true });
    writeFileSync(out, buffer);
    return { ok: true, out, ms: performance.now() - t0, bytes: buffer.byteLength, message: "" };
  } catch (e) {
    return { ok: false, out, ms: performance.now() - t0, message: String(e.message ?? e) };
  } finally {
    mod?.destroy();
  }
}

function runJob(job) {
  // Never leave a stale artifact behind a failed build.
  rmSync(job.out, { force: true });
  rmSync(`${job.out}.map`, { force: true });
  if (job.kind === "rust" || job.kind === "c") return buildNative(job);
  if (job.kind === "asc-extism") {
    const rel = path.relative(ROOT, job.src).slice(0, -".ts".length).split(path.sep).join("/");
    return buildAsc(job.src, job.out, EXTISM_ASCONFIG, ["--use", `abort=${rel}/guestAbort`]);
  }
  return job.kind === "asc" ? buildAsc(job.src, job.out) : buildWat(job.src, job.out);
}

/** What a job's build depends on besides the files it reads: the compiler and its options. */
function jobKey(job) {
  if (job.kind === "asc") return `asc ${packageVersion(ROOT, "assemblyscript")} ${TARGET}`;
  if (job.kind === "asc-extism") return `asc ${packageVersion(ROOT, "assemblyscript")} ${TARGET} extism ${packageVersion(ROOT, "@extism/as-pdk")}`;
  if (job.kind === "wat") return `wabt ${packageVersion(ROOT, "wabt")}`;
  if (job.kind === "rust") return `rust ${job.target}`;
  return `c${job.wasi ? " wasi" : ""}`;
}

/** The files a job reads, known before it builds (asc's are the ones it read: see ascReadFile). */
function jobInputs(job) {
  if (job.kind === "wat") return [job.src];
  if (job.kind === "rust") return [...filesUnder(path.dirname(job.src)), ...filesUnder(path.join(ROOT, "abi", "rust"))];
  if (job.kind === "c") return [job.src, ...filesUnder(job.include)];
  return [job.src, path.join(ROOT, job.kind === "asc-extism" ? EXTISM_ASCONFIG : "asconfig.json")];
}

/** The asc options of the Extism guests (their own memory; no lockhost ABI). */
const EXTISM_ASCONFIG = "test/guests/extism/asconfig.json";

/** The cache of the build folder a job writes to. */
const caches = new Map();
function cacheOf(job) {
  const file = path.join(path.dirname(job.out), ".build-cache.json");
  let cache = caches.get(file);
  if (!cache) caches.set(file, (cache = new BuildCache(file, ROOT)));
  return cache;
}

const jobId = (job) => path.relative(ROOT, job.out);
const upToDate = (job) => cacheOf(job).upToDate(jobId(job), jobKey(job), [job.out]);

/** Rust and C guests found up to date by listJobs (their toolchains were not looked for). */
let upToDateNative = 0;

function listJobs() {
  const jobs = [];
  const add = (dir, exts) => {
    const abs = path.join(ROOT, dir);
    if (!existsSync(abs)) return;
    for (const name of readdirSync(abs).sort()) {
      const ext = exts.find((e) => name.endsWith(e));
      if (!ext || name.endsWith(".d.ts")) continue;
      jobs.push({
        kind: ext === ".wat" ? "wat" : "asc",
        src: path.join(abs, name),
        out: path.join(abs, "build", name.slice(0, -ext.length) + ".wasm"),
      });
    }
  };
  add("plugins/guests", [".ts"]);
  add("test/guests", [".ts", ".wat"]);
  const extism = path.join(ROOT, "test/guests/extism");
  if (existsSync(extism)) {
    for (const name of readdirSync(extism).sort()) {
      if (!name.endsWith(".ts") || name.endsWith(".d.ts")) continue;
      jobs.push({ kind: "asc-extism", src: path.join(extism, name), out: path.join(ROOT, "test/guests/build", `extism-${name.slice(0, -3)}.wasm`) });
    }
  }
  const allNative = nativeJobs(ROOT, ["plugins/guests", "test/guests"]);
  const native = allNative.filter((job) => !upToDate(job));
  upToDateNative = allNative.length - native.length;
  if (native.length > 0) {
    let problem = nativeToolchainProblem(native);
    // A fresh machine of the project's kind (root, Debian) gets the packages, as .ci/run does.
    if (problem && process.env.LOCKHOST_SKIP_NATIVE_GUESTS !== "1" && installToolchains()) problem = nativeToolchainProblem(native);
    if (problem && process.env.LOCKHOST_SKIP_NATIVE_GUESTS === "1") {
      console.log(`build-guests: skipping ${native.length} Rust/C guest(s) (LOCKHOST_SKIP_NATIVE_GUESTS=1): ${problem}`);
    } else if (problem) {
      console.error(
        `build-guests: cannot build the Rust and C guests: ${problem}\n  (install those packages, or set LOCKHOST_SKIP_NATIVE_GUESTS=1 to skip these ` +
          `guests: the host and the AssemblyScript guests do not need them)`,
      );
      process.exit(1);
    } else {
      jobs.push(...native);
    }
  }
  return jobs;
}

async function main() {
  process.chdir(ROOT);
  const t0 = performance.now();
  const listed = listJobs();
  const jobs = listed.filter((job) => !upToDate(job));
  const fresh = listed.length - jobs.length + upToDateNative;
  if (jobs.length > 0) console.log(`build-guests: building ${jobs.length} guest(s) whose inputs changed (${fresh} up to date)`);
  // Sequential on purpose: asc is CPU-bound and single-threaded, and on the
  // 2-core machines this repo targets, worker threads measured no faster
  // (each one pays the compiler's warm-up again): ~3.5 s either way.
  const results = [];
  for (const job of jobs) {
    ascRead = new Set();
    const r = await runJob(job);
    results.push(r);
    const cache = cacheOf(job);
    if (r.ok) cache.record(jobId(job), jobKey(job), [...jobInputs(job), ...ascRead]);
    else cache.forget(jobId(job));
    cache.save();
    const rel = path.relative(ROOT, r.out);
    if (r.ok) {
      const kib = (r.bytes / 1024).toFixed(1).padStart(6);
      console.log(`  ${rel.padEnd(36)} ${kib} KiB  ${(r.ms / 1000).toFixed(2)} s`);
      if (r.message) console.log(r.message.replace(/^/gm, "    "));
    } else {
      console.error(`  ${rel}: FAILED\n${r.message.replace(/^/gm, "    ")}`);
    }
  }

  const failed = results.filter((r) => !r.ok);
  const secs = ((performance.now() - t0) / 1000).toFixed(2);
  if (failed.length) {
    console.error(`build-guests: ${failed.length} of ${results.length} guest(s) failed (${secs} s)`);
    process.exit(1);
  }
  console.log(
    results.length === 0
      ? `build-guests: ${fresh} guest(s) up to date; nothing built (${secs} s)`
      : `build-guests: ${results.length} guest(s) built in ${secs} s, ${fresh} up to date`,
  );
}

await main();
