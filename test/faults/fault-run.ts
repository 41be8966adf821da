// The fault check: several real host processes hammer a few keys on a private Redis or
// PostgreSQL, every critical section writing through a fenced register, while the run pauses,
// kills and restarts the server and the hosts. Every fault is a line in the shared section log
// (see exclusion-checker.ts), so the checker can tell an overlap a fault explains from a bug.
import { appendFileSync, readFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { expect } from "vitest";
import { checkExclusion, type ExclusionReport } from "../cluster/exclusion-checker.js";
import { startHammerNode, startTogether, withSectionLog, type HammerNode, type HammerOptions, type NodeStats } from "../cluster/cluster.js";
import type { TestServer } from "../support/servers.js";

/** How long after a server fault its window stays open (see `settled`). */
const SETTLE_MS = 250;

/** One fault, in the order a run applies them. */
export type Fault =
  /** The server dies (Redis: SIGKILL, no persistence, so it comes back empty; PostgreSQL: immediate shutdown) and starts again. */
  | { readonly kind: "server-restart" }
  /** The server freezes (SIGSTOP) for `forMs`, its TCP connections open. */
  | { readonly kind: "server-pause"; readonly forMs: number }
  /** Every client connection is closed by the server (CLIENT KILL / pg_terminate_backend). */
  | { readonly kind: "sessions-killed" }
  /** Host `node` (1-based) is frozen (SIGSTOP), its guests' threads with it, for `forMs`. */
  | { readonly kind: "host-pause"; readonly node: number; readonly forMs: number }
  /** Host `node` is killed (SIGKILL) and a new host takes its place. */
  | { readonly kind: "host-kill"; readonly node: number }
  /** A member of a replicated server (`members`) dies for `downMs` and starts again: a number, or the current leader. */
  | { readonly kind: "member-kill"; readonly member: number | "leader"; readonly downMs: number }
  /** A member freezes (SIGSTOP) for `forMs`: member 0 is the one every host's client tries first. */
  | { readonly kind: "member-pause"; readonly member: number; readonly forMs: number }
  /** Host `node`'s network to the server stops delivering for `forMs` (the host keeps running). */
  | { readonly kind: "host-stall"; readonly node: number; readonly forMs: number };

/** The members of a replicated server, for the member faults. */
export interface Members {
  readonly members: readonly { readonly name: string; kill(): Promise<void>; start(): Promise<void>; pause(): void; resume(): void }[];
  /** The index of the current leader. */
  leader(): Promise<number>;
  /** Stalls (true) or releases (false) the network between host `node` (its name) and the server. */
  stall(node: string, on: boolean): void;
}

/** The shape of a fault run. */
export interface FaultRunOptions extends Omit<HammerOptions, "durationMs"> {
  readonly server: TestServer;
  /** Closes every client connection to the server (the "sessions-killed" fault). */
  readonly killSessions: () => Promise<void>;
  readonly faults: readonly Fault[];
  /** Quiet time before the first fault, between faults, and after the last (liveness). */
  readonly gapMs: number;
  /** The members, for a replicated server's faults (member-kill, member-pause, host-stall). */
  readonly members?: Members;
}

/** What a fault run saw. */
export interface FaultRunResult {
  readonly report: ExclusionReport;
  readonly stats: readonly NodeStats[];
  /** The nodes alive at the end (a killed host's replacement included). */
  readonly survivors: readonly string[];
}

/** Runs the hosts, applies `faults` one after another with quiet gaps, and checks the log. */
export async function runFaults(o: FaultRunOptions): Promise<FaultRunResult> {
  return withSectionLog(async (log) => {
    const mark = (line: string): void => appendFileSync(log, `${line}\n`);
    const run = { log, options: { ...o, durationMs: 0 } };
    const nodes: HammerNode[] = Array.from({ length: o.nodes }, (_, i) => startHammerNode(run, `node-${i + 1}`));
    const all = [...nodes];
    let restarts = 0;
    // Far enough that no node stops during the faults; moved to the real end once they are over.
    const open = (): number => Date.now() + 10 * 60_000;
    await startTogether(nodes, open);
    try {
      for (const fault of o.faults) {
        await sleep(o.gapMs);
        await apply(fault);
      }
      await sleep(o.gapMs);
    } finally {
      o.server.resume();
      for (const n of all) n.signal("SIGCONT");
      const end = Date.now();
      for (const n of nodes) n.go(end);
    }
    const stats = await Promise.all(all.map((n) => n.done));
    return { report: checkExclusion(readFileSync(log, "utf8")), stats, survivors: nodes.map((n) => n.node) };

    function members(): Members {
      if (o.members === undefined) throw new Error("member faults need FaultRunOptions.members");
      return o.members;
    }

    /**
     * Ends a server fault's window a little after the server is back: a call answered just
     * before the fault may reach its guest, which then logs its section, only after the fault.
     */
    async function settled(fault: string): Promise<void> {
      await sleep(SETTLE_MS);
      mark(`R ${fault}`);
    }

    async function apply(fault: Fault): Promise<void> {
      switch (fault.kind) {
        case "server-restart":
          mark("F server-restart");
          await o.server.kill();
          await o.server.start();
          await settled("server-restart");
          return;
        case "server-pause":
          mark("F server-pause");
          o.server.pause();
          await sleep(fault.forMs);
          o.server.resume();
          await settled("server-pause");
          return;
        case "sessions-killed":
          mark("F sessions-killed");
          await o.killSessions();
          await settled("sessions-killed");
          return;
        case "host-pause": {
          const host = nodes[fault.node - 1]!;
          // Marked once it has stopped and before it continues, so none of its lines lands on
          // the wrong side of the mark.
          host.signal("SIGSTOP");
          await host.stopped();
          mark(`P ${host.node}`);
          await sleep(fault.forMs);
          mark(`C ${host.node}`);
          host.signal("SIGCONT");
          return;
        }
        case "member-kill": {
          const m = members();
          const i = fault.member === "leader" ? await m.leader() : fault.member;
          const name = `member-kill-${m.members[i]!.name}`;
          mark(`F ${name}`);
          await m.members[i]!.kill();
          await sleep(fault.downMs);
          await m.members[i]!.start();
          await settled(name);
          return;
        }
        case "member-pause": {
          const m = members().members[fault.member]!;
          mark(`F member-pause-${m.name}`);
          m.pause();
          await sleep(fault.forMs);
          m.resume();
          await settled(`member-pause-${m.name}`);
          return;
        }
        case "host-stall": {
          // Not marked as a fault: the host runs on, and its leases outlast what it believes it
          // holds, so a stall must cause no overlap and no refused write at all.
          const host = nodes[fault.node - 1]!;
          members().stall(host.node, true);
          await sleep(fault.forMs);
          members().stall(host.node, false);
          return;
        }
        case "host-kill": {
          const host = nodes[fault.node - 1]!;
          // Frozen first, so it writes nothing after the mark, and its locks (held by a live
          // connection) are freed only by the kill after it: no other host enters before the mark.
          host.signal("SIGSTOP");
          await host.stopped();
          mark(`K ${host.node}`);
          host.kill();
          await host.done;
          const replacement = startHammerNode(run, `node-${fault.node}.${++restarts}`);
          nodes[fault.node - 1] = replacement;
          all.push(replacement);
          await startTogether([replacement], open);
          return;
        }
      }
    }
  });
}

/** Every host's errors by what they were, summed. */
function errorKinds(stats: FaultRunResult["stats"]): Record<string, number> {
  const kinds: Record<string, number> = {};
  for (const s of stats) for (const [what, n] of Object.entries(s.errorKinds)) kinds[what] = (kinds[what] ?? 0) + n;
  return kinds;
}

/**
 * Asserts a run safe (no unexplained overlap, no fence back, no refused write to an untouched
 * holder, a killed host's keys taken again) and live (every survivor entered after the faults);
 * logs its counts.
 */
export function expectSafeAndLive(name: string, r: FaultRunResult): void {
  const { report } = r;
  const summary = {
    acquisitions: report.acquisitions,
    overlaps: report.overlaps,
    unexplainedOverlaps: report.unexplainedOverlaps,
    fenceRegressions: report.fenceRegressions,
    writes: report.writes,
    refusedWrites: report.refusedWrites,
    unexplainedRefusals: report.unexplainedRefusals,
    perNodeAfterFaults: report.perNodeAfterFaults,
    errors: r.stats.reduce((n, s) => n + s.errors, 0),
    errorKinds: errorKinds(r.stats),
  };
  // The counts go to the log for the closing note / CI output.
  console.log(`faults ${name}: ${JSON.stringify(summary)}`);
  const why = `${JSON.stringify(summary)}\n${report.samples.join("\n")}`;
  expect(report.unexplainedOverlaps, why).toBe(0);
  expect(report.fenceRegressions, why).toBe(0);
  expect(report.unmatchedExits, why).toBe(0);
  expect(report.unexplainedRefusals, why).toBe(0);
  expect(report.keysNotFreedAfterKill, why).toEqual([]);
  // Live after the faults: every host still running took locks once they were over.
  for (const node of r.survivors) expect(report.perNodeAfterFaults[node] ?? 0, `${node} after the faults: ${why}`).toBeGreaterThan(0);
  expect(report.acquisitions).toBeGreaterThan(100);
}
