// What the build has built, so it builds only what changed (scripts/build-ts.mjs,
// scripts/build-guests.mjs). `npm install` in a clone builds once; `npx lockhost` there installs
// the folder and runs `prepare` again, and `npm pack` runs it once more: both now find everything
// up to date in well under a second, where they rebuilt every guest (about two minutes on two
// cores), rewriting dist/ under any host running from it.
//
// A cache file beside the outputs (removing the outputs removes it) holds, per job: a key (the
// compiler, its version, its options), the SHA-256 of each input file, and the outputs. A job is
// up to date when its key is the same, every input has the same content (contents, not mtimes:
// a fresh clone gives every file the time of the clone) and every output exists.
// LOCKHOST_BUILD_FORCE=1 builds everything.
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import path from "node:path";

export const FORCE = process.env.LOCKHOST_BUILD_FORCE === "1";

/** SHA-256 of a file's content, or "missing". */
export function hashFile(file) {
  try {
    return createHash("sha256").update(readFileSync(file)).digest("hex");
  } catch {
    return "missing";
  }
}

/** Every file under `dir` (recursively) that `keep(relative path)` accepts; build output and dependency folders are left out. */
export function filesUnder(dir, keep = () => true) {
  const out = [];
  const walk = (d) => {
    if (!existsSync(d)) return;
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const abs = path.join(d, entry.name);
      if (entry.isDirectory()) {
        if (!["build", "target", "node_modules", "dist", ".git"].includes(entry.name)) walk(abs);
      } else if (keep(path.relative(dir, abs))) {
        out.push(abs);
      }
    }
  };
  walk(dir);
  return out.sort();
}

/** The version field of an installed package's package.json ("none" when it is not installed). */
export function packageVersion(root, name) {
  try {
    return JSON.parse(readFileSync(path.join(root, "node_modules", name, "package.json"), "utf8")).version;
  } catch {
    return "none";
  }
}

export class BuildCache {
  /** `file`: where the cache lives; `root`: what its paths are relative to. */
  constructor(file, root) {
    this.file = file;
    this.root = root;
    try {
      this.jobs = JSON.parse(readFileSync(file, "utf8")).jobs ?? {};
    } catch {
      this.jobs = {};
    }
  }

  /** Whether job `id` was built with `key` from inputs that are unchanged, and its outputs are all there. */
  upToDate(id, key, outputs) {
    if (FORCE) return false;
    const job = this.jobs[id];
    if (!job || job.key !== key) return false;
    if (!outputs.every((o) => existsSync(o))) return false;
    return Object.entries(job.inputs).every(([rel, hash]) => hashFile(path.join(this.root, rel)) === hash);
  }

  /** The inputs of job `id` whose content changed since it was built (for the line that says why it builds). */
  changed(id, key) {
    const job = this.jobs[id];
    if (FORCE) return ["LOCKHOST_BUILD_FORCE=1"];
    if (!job) return ["not built before"];
    if (job.key !== key) return [`${job.key} -> ${key}`];
    const changed = Object.entries(job.inputs)
      .filter(([rel, hash]) => hashFile(path.join(this.root, rel)) !== hash)
      .map(([rel]) => rel);
    return changed.length > 0 ? changed : ["an output is missing"];
  }

  /** Records job `id` as built with `key` from `inputs` (absolute paths, hashed now). */
  record(id, key, inputs) {
    const hashes = {};
    for (const file of [...new Set(inputs)].sort()) hashes[path.relative(this.root, file)] = hashFile(file);
    this.jobs[id] = { key, inputs: hashes };
  }

  /** Forgets job `id` (its build failed). */
  forget(id) {
    delete this.jobs[id];
  }

  save() {
    mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ jobs: this.jobs }, null, 1)}\n`);
    renameSync(tmp, this.file);
  }
}
