#!/usr/bin/env node
// Fails when a tracked TypeScript or JavaScript line is longer than 160 characters, naming each
// as file:line (length). The formatter wraps code at 160 but never a string or a comment; this
// catches those. scripts/wrap-long-lines.mjs splits most of them mechanically.
//
// Usage: node scripts/line-length.mjs [--max N] [file ...]   (default: every tracked .ts/.mjs/.js file)
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

export const MAX_LINE = 160;
export const SOURCE = /\.(ts|mts|cts|mjs|cjs|js)$/;

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The tracked source files (git's list, so dist, node_modules and guest builds are never read). */
export function trackedSources(root = ROOT) {
  const out = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: root, encoding: "utf8", maxBuffer: 64 << 20 });
  return out.split("\0").filter((f) => SOURCE.test(f));
}

/** The lines of `text` longer than `max` characters (code points): { line, length } with 1-based lines. */
export function longLines(text, max = MAX_LINE) {
  const found = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].endsWith("\r") ? lines[i].slice(0, -1) : lines[i];
    // Code points, so an emoji or an accented letter counts as one character.
    if (line.length > max && [...line].length > max) found.push({ line: i + 1, length: [...line].length });
  }
  return found;
}

function main(argv) {
  let max = MAX_LINE;
  const files = [];
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--max") max = Number(argv[++i]);
    else files.push(argv[i]);
  }
  if (!Number.isInteger(max) || max < 1) throw new Error("line-length: --max takes a whole number");
  let count = 0;
  // Named files are relative to the working directory; the tracked ones to the repository.
  const named = files.map((f) => path.resolve(f));
  for (const file of named.length > 0 ? named.map((f) => path.relative(ROOT, f)) : trackedSources()) {
    let text;
    try {
      text = readFileSync(path.resolve(ROOT, file), "utf8");
    } catch {
      continue; // deleted in the working tree, not yet in the index
    }
    for (const { line, length } of longLines(text, max)) {
      console.error(`${file}:${line}: ${length} characters (at most ${max})`);
      count++;
    }
  }
  if (count > 0) {
    console.error(`line-length: ${count} line(s) over ${max} characters (node scripts/wrap-long-lines.mjs splits comments and strings)`);
    process.exitCode = 1;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main(process.argv.slice(2));
