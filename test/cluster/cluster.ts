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
  try {
    const nodes = Array.from({ length: o.nodes }, (_, i) =>
        startNode(join(import.meta.dirname, "hammer-node.mjs"), {
          dist: pathToFileURL(join(ROOT, "dist/host/index.js")).href,
          wasm: join(ROOT, "test/guests/build/hammer.wasm"),
          node: `node-${i + 1}`,
          locking: o.locking,
          guests: o.guestsPerNode,
          keys: o.keys,
          holdMs: o.holdMs,
          ttlMs: o.ttlMs,
          log,
        }),
    );
    // Hosts take different times to start their guests: all begin hammering together.
    await Promise.all(nodes.map((n) => n.ready)).catch((err: unknown) => {
      for (const n of nodes) n.kill();
      throw err;
    });
    const endAtMs = Date.now() + o.durationMs;
    for (const n of nodes) n.go(endAtMs);
    const stats = await Promise.all(nodes.map((n) => n.done));
    return { report: checkExclusion(readFileSync(log, "utf8")), stats };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

interface HammerNode {
  /** Resolves when the host has started; rejects if the process ends first. */
  readonly ready: Promise<void>;
  /** Starts its hammering, until `endAtMs`. */
  go(endAtMs: number): void;
  /** Its summary, once it has stopped. */
  readonly done: Promise<NodeStats>;
  /** Ends it at once (when another node failed to start). */
  kill(): void;
}

function startNode(script: string, options: object): HammerNode {
  const child = spawn(process.execPath, [script, JSON.stringify(options)], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes('{"ready":')) onReady();
  });
  child.stderr.on("data", (d: Buffer) => void (err += d.toString()));
  const done = new Promise<NodeStats>((resolvePromise, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith('{"node"')) {
        reject(new Error(`hammer process exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`));
        return;
      }
      resolvePromise(JSON.parse(last) as NodeStats);
    });
  });
  return {
    ready: Promise.race([ready, done.then(() => undefined)]),
    go: (endAtMs) => void child.stdin.end(`${JSON.stringify({ endAtMs })}\n`),
    done,
    kill: () => void child.kill("SIGKILL"),
  };
}
