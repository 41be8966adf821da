// The Rust and C guests of scripts/build-guests.mjs: which there are, whether this machine can
// build them, and how. Debian's toolchains only, offline: rustc + cargo with
// libstd-rust-dev-wasm32 (Rust 1.63: wasm32-unknown-unknown and wasm32-wasi), clang-14 +
// lld-14 (freestanding C), wasi-libc (C with a libc). A rustup toolchain earlier on PATH
// usually has no wasm32 standard library, so the Debian binaries are named by path (override
// with LOCKHOST_CARGO, LOCKHOST_RUSTC, LOCKHOST_CLANG).
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import path from "node:path";

const CARGO = process.env.LOCKHOST_CARGO || "/usr/bin/cargo";
const RUSTC = process.env.LOCKHOST_RUSTC || "/usr/bin/rustc";
const CLANG = process.env.LOCKHOST_CLANG || "clang-14";

/** The Debian packages that provide each toolchain (what .ci/run installs). */
export const NATIVE_PACKAGES = {
  rust: ["rustc", "cargo", "libstd-rust-dev-wasm32"],
  c: ["clang-14", "lld-14"],
  wasi: ["wasi-libc", "libclang-rt-14-dev-wasm32"],
};

// The host owns a guest's memory (--import-memory); a 64 KiB stack keeps a small guest small.
const RUSTFLAGS = "-C link-arg=--import-memory -C link-arg=-zstack-size=65536";
const C_FLAGS = ["-O2", "-Wall", "-Werror", "-Wl,--import-memory", "-Wl,-zstack-size=65536", "-Wl,--strip-debug"];

/**
 * The Rust crates (<dir>/rust/<crate>/Cargo.toml) and C files (<dir>/c/*.c) under `dirs`. A
 * crate builds for wasm32-unknown-unknown unless its Cargo.toml says
 * `[package.metadata.lockhost] target = "wasm32-wasi"`; a `*.wasi.c` file links wasi-libc.
 */
export function nativeJobs(root, dirs) {
  const jobs = [];
  for (const dir of dirs) {
    const out = (name) => path.join(root, dir, "build", `${name}.wasm`);
    const rustDir = path.join(root, dir, "rust");
    if (existsSync(rustDir)) {
      for (const crate of readdirSync(rustDir).sort()) {
        const manifest = path.join(rustDir, crate, "Cargo.toml");
        if (!existsSync(manifest)) continue;
        const target = /^\s*target\s*=\s*"wasm32-wasi"/m.test(readFileSync(manifest, "utf8")) ? "wasm32-wasi" : "wasm32-unknown-unknown";
        jobs.push({ kind: "rust", src: manifest, out: out(`rust-${crate}`), crate, target, targetDir: path.join(root, dir, "build", "cargo") });
      }
    }
    const cDir = path.join(root, dir, "c");
    if (existsSync(cDir)) {
      for (const file of readdirSync(cDir).sort()) {
        if (!file.endsWith(".c")) continue;
        const wasi = file.endsWith(".wasi.c");
        jobs.push({ kind: "c", src: path.join(cDir, file), out: out(`c-${file.replace(/(\.wasi)?\.c$/, "")}`), wasi, include: path.join(root, "abi", "c") });
      }
    }
  }
  return jobs;
}

const runs = (cmd, args) => {
  try {
    execFileSync(cmd, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
};

/** Why `jobs` cannot be built here (the missing toolchain and its packages), or undefined. */
export function nativeToolchainProblem(jobs) {
  const missing = [];
  if (jobs.some((j) => j.kind === "rust")) {
    const sysroot = runs(RUSTC, ["--version"]) ? execFileSync(RUSTC, ["--print", "sysroot"], { encoding: "utf8" }).trim() : undefined;
    const targets = [...new Set(jobs.filter((j) => j.kind === "rust").map((j) => j.target))];
    const noStd = sysroot === undefined ? targets : targets.filter((t) => !existsSync(path.join(sysroot, "lib", "rustlib", t, "lib")));
    if (!runs(CARGO, ["--version"]) || noStd.length > 0) {
      missing.push(`Rust (${CARGO} with ${RUSTC} and the ${noStd.join(", ") || "wasm32"} standard library: Debian packages ${NATIVE_PACKAGES.rust.join(" ")})`);
    }
  }
  if (jobs.some((j) => j.kind === "c") && !runs(CLANG, ["--version"])) missing.push(`C (${CLANG} and wasm-ld: Debian packages ${NATIVE_PACKAGES.c.join(" ")})`);
  if (
    jobs.some((j) => j.kind === "c" && j.wasi) &&
    !(
      existsSync("/usr/lib/wasm32-wasi/libc.a") &&
      runs(CLANG, ["--target=wasm32-wasi", "--print-libgcc-file-name"]) &&
      existsSync(execFileSync(CLANG, ["--target=wasm32-wasi", "--print-libgcc-file-name"], { encoding: "utf8" }).trim())
    )
  ) {
    missing.push(`wasi-libc and its compiler runtime (Debian packages ${NATIVE_PACKAGES.wasi.join(" ")})`);
  }
  return missing.length > 0 ? `missing ${missing.join("; ")}` : undefined;
}

/**
 * Installs the Debian packages of the toolchains, where this process may (root, apt-get on
 * PATH): what a fresh machine of the project's kind needs so `npm install` and `npm test` build
 * every guest, as .ci/run does. Returns whether it ran; a failed install leaves the caller's
 * check to say what is still missing.
 */
export function installToolchains() {
  if (process.getuid?.() !== 0 || !runs("apt-get", ["--version"])) return false;
  const packages = Object.values(NATIVE_PACKAGES)
    .flat()
    .filter((p) => !runs("dpkg", ["-s", p]));
  if (packages.length === 0) return false;
  console.log(`build-guests: installing ${packages.join(" ")} (Debian packages, for the Rust and C guests)`);
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const install = () => execFileSync("apt-get", ["install", "-y", "--no-install-recommends", ...packages], { env, stdio: "ignore" });
  try {
    install();
  } catch {
    try {
      execFileSync("apt-get", ["update"], { env, stdio: "ignore" });
      install();
    } catch {
      // The caller's check names what is still missing.
    }
  }
  return true;
}

/** Builds one Rust or C guest; returns { ok, out, bytes, ms, message } like the other builders. */
export function buildNative(job) {
  const t0 = performance.now();
  mkdirSync(path.dirname(job.out), { recursive: true });
  try {
    if (job.kind === "rust") {
      const args = ["build", "--offline", "--release", "--quiet", "--target", job.target, "--manifest-path", job.src, "--target-dir", job.targetDir];
      execFileSync(CARGO, args, { env: { ...process.env, RUSTC, RUSTFLAGS }, stdio: ["ignore", "pipe", "pipe"] });
      copyFileSync(path.join(job.targetDir, job.target, "release", `${job.crate.replace(/-/g, "_")}.wasm`), job.out);
    } else {
      const target = job.wasi ? ["--target=wasm32-wasi", "-mexec-model=reactor"] : ["--target=wasm32", "-nostdlib", "-Wl,--no-entry"];
      execFileSync(CLANG, [...target, "-mbulk-memory", ...C_FLAGS, "-I", job.include, "-o", job.out, job.src], { stdio: ["ignore", "pipe", "pipe"] });
    }
  } catch (err) {
    const message = `${err.stderr?.toString() ?? ""}${err.stdout?.toString() ?? ""}`.trim() || String(err.message ?? err);
    return { ok: false, out: job.out, ms: performance.now() - t0, message };
  }
  return { ok: true, out: job.out, ms: performance.now() - t0, bytes: statSync(job.out).size, message: "" };
}
