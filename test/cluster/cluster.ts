// Runs several real host processes (node, from the built dist/) against one backend, for the
// tests that must cross process boundaries: exclusion and schedules.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import type { ConfigInput } from "../../host/config/types.js";
import { checkExclusion, type ExclusionReport } from "./exclusion-checker.js";

const ROOT = resolve(import.meta.dirname, "../..");
export const DIST_CLI = join(ROOT, "dist/host/cli/main.js");

/** What one hammer process reported. */
export interface NodeStats {
  readonly node: string;
  readonly attempts: number;
  readonly acquired: number;
  readonly contended: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
}

/** The shape of one exclusion run. */
export interface HammerOptions {
  readonly locking: NonNullable<ConfigInput["locking"]>;
  readonly nodes: number;
  readonly guestsPerNode: number;
  readonly keys: number;
  readonly durationMs: number;
  /** Longest a section (and a contended guest's pause) lasts. */
  readonly holdMs: number;
  readonly ttlMs: number;
}

/** Runs `nodes` hammer processes at once and checks their shared log. */
export async function runHammer(o: HammerOptions): Promise<{ report: ExclusionReport; stats: NodeStats[] }> {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-exclusion-"));
  const log = join(dir, "sections.log");
  // Processes take a moment to start their guests: all begin at the same wall-clock instant.
  const startAtMs = Date.now() + 2_000;
  try {
    const stats = await Promise.all(
      Array.from({ length: o.nodes }, (_, i) =>
        runNode(join(import.meta.dirname, "hammer-node.mjs"), {
          dist: pathToFileURL(join(ROOT, "dist/host/index.js")).href,
          wasm: join(ROOT, "test/guests/build/hammer.wasm"),
          node: `node-${i + 1}`,
          locking: o.locking,
          guests: o.guestsPerNode,
          keys: o.keys,
          holdMs: o.holdMs,
          ttlMs: o.ttlMs,
          log,
          startAtMs,
          endAtMs: startAtMs + o.durationMs,
        }),
      ),
    );
    return { report: checkExclusion(readFileSync(log, "utf8")), stats };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function runNode(script: string, options: object): Promise<NodeStats> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(options)], { stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    let err = "";
    child.stdout.on("data", (d: Buffer) => void (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => void (err += d.toString()));
    child.once("error", reject);
    child.once("exit", (code) => {
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith("{")) {
        reject(new Error(`hammer process exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`));
        return;
      }
      resolvePromise(JSON.parse(last) as NodeStats);
    });
  });
}
