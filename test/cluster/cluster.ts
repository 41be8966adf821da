// Runs several real host processes (node, from the built dist/) against one backend, for the
// tests that must cross process boundaries: exclusion, faults and schedules.
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
  /** Errors by what they were (a sample's text): how many of each. */
  readonly errorKinds: Readonly<Record<string, number>>;
  /** The test killed it (SIGKILL) before it could report. */
  readonly killed?: boolean;
}

/** The shape of one exclusion run. */
export interface HammerOptions {
  /** The `[locking]` table of every node, or of each node by name (its own route to the backend). */
  readonly locking: NonNullable<ConfigInput["locking"]> | ((node: string) => NonNullable<ConfigInput["locking"]>);
  readonly nodes: number;
  readonly guestsPerNode: number;
  readonly keys: number;
  readonly durationMs: number;
  /** Longest a section (and a contended guest's pause) lasts. */
  readonly holdMs: number;
  readonly ttlMs: number;
  /**
   * What the sections take: mutexes (the default); read/write locks, each attempt a reader or
   * (one in `writerShare`) a writer; or permits of semaphores with `permits` each.
   */
  readonly kind?: { readonly kind: "mutex" } | { readonly kind: "rw"; readonly writerShare: number } | { readonly kind: "semaphore"; readonly permits: number };
}

/** Where one run's hammer processes write and what they run. */
export interface HammerRun {
  readonly log: string;
  readonly options: HammerOptions;
}

/** Starts one hammer process of `run` named `node`; it hammers once told to go. */
export function startHammerNode(run: HammerRun, node: string): HammerNode {
  const o = run.options;
  return startNode(
    join(import.meta.dirname, "hammer-node.mjs"),
    {
      dist: pathToFileURL(join(ROOT, "dist/host/index.js")).href,
      wasm: join(ROOT, "test/guests/build/hammer.wasm"),
      node,
      locking: typeof o.locking === "function" ? o.locking(node) : o.locking,
      guests: o.guestsPerNode,
      keys: o.keys,
      holdMs: o.holdMs,
      ttlMs: o.ttlMs,
      kind: o.kind ?? { kind: "mutex" },
      log: run.log,
    },
    node,
  );
}

/** A temporary folder with the run's shared log, removed after `body`. */
export async function withSectionLog<T>(body: (log: string) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "lockhost-exclusion-"));
  try {
    return await body(join(dir, "sections.log"));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Waits until every node has started, then lets them all hammer until `endAtMs`. */
export async function startTogether(nodes: readonly HammerNode[], endAtMs: () => number): Promise<void> {
  // Hosts take different times to start their guests: all begin hammering together.
  await Promise.all(nodes.map((n) => n.ready)).catch((err: unknown) => {
    for (const n of nodes) n.kill();
    throw err;
  });
  const end = endAtMs();
  for (const n of nodes) n.go(end);
}

/** Runs `nodes` hammer processes at once and checks their shared log. */
export async function runHammer(o: HammerOptions): Promise<{ report: ExclusionReport; stats: NodeStats[] }> {
  return withSectionLog(async (log) => {
    const nodes = Array.from({ length: o.nodes }, (_, i) => startHammerNode({ log, options: o }, `node-${i + 1}`));
    await startTogether(nodes, () => Date.now() + o.durationMs);
    const stats = await Promise.all(nodes.map((n) => n.done));
    return { report: checkExclusion(readFileSync(log, "utf8")), stats };
  });
}

/** One hammer process. */
export interface HammerNode {
  readonly node: string;
  /** Resolves when the host has started; rejects if the process ends first. */
  readonly ready: Promise<void>;
  /** The first call starts its hammering, until `endAtMs`; a later call moves that deadline. */
  go(endAtMs: number): void;
  /** Its summary once it has stopped; `killed` (and no counts) when the test killed it. */
  readonly done: Promise<NodeStats>;
  /** Ends it at once (SIGKILL): a host that crashes. */
  kill(): void;
  /** Pauses (SIGSTOP) or continues (SIGCONT) the whole process, its guests' threads with it. */
  signal(signal: "SIGSTOP" | "SIGCONT"): void;
  /** Resolves once a SIGSTOP has taken effect (the process is in state T). */
  stopped(): Promise<void>;
}

function startNode(script: string, options: object, node: string): HammerNode {
  const child = spawn(process.execPath, [script, JSON.stringify(options)], { stdio: ["pipe", "pipe", "pipe"] });
  let out = "";
  let err = "";
  let killed = false;
  let onReady: () => void = () => undefined;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    if (out.includes('{"ready":')) onReady();
  });
  child.stderr.on("data", (d: Buffer) => void (err += d.toString()));
  // A killed process's stdin may already be closed when go() writes to it.
  child.stdin.on("error", () => undefined);
  const done = new Promise<NodeStats>((resolvePromise, reject) => {
    child.once("error", reject);
    child.once("exit", (code) => {
      if (killed) {
        resolvePromise({ node, killed: true, attempts: 0, acquired: 0, contended: 0, errors: 0, errorSamples: [], errorKinds: {} });
        return;
      }
      const last = out.trim().split("\n").pop() ?? "";
      if (code !== 0 || !last.startsWith('{"node"')) {
        reject(new Error(`hammer process ${node} exited with ${code}\nstdout:\n${out}\nstderr:\n${err}`));
        return;
      }
      resolvePromise(JSON.parse(last) as NodeStats);
    });
  });
  return {
    node,
    ready: Promise.race([ready, done.then(() => undefined)]),
    go: (endAtMs) => void child.stdin.write(`${JSON.stringify({ endAtMs })}\n`),
    done,
    kill: () => {
      killed = true;
      child.kill("SIGKILL");
    },
    signal: (signal) => void child.kill(signal),
    async stopped() {
      // /proc/<pid>/stat is "pid (comm) state ...", and comm may hold spaces or parentheses.
      const state = (): string => {
        try {
          const stat = readFileSync(`/proc/${child.pid}/stat`, "utf8");
          return stat.charAt(stat.lastIndexOf(")") + 2);
        } catch {
          return "gone"; // it exited meanwhile
        }
      };
      while (child.exitCode === null && !["T", "gone"].includes(state())) await new Promise((r) => setTimeout(r, 5));
    },
  };
}
