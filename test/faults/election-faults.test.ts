// Leader election under faults: four real host processes (test/support/campaigner.mjs, built
// code) campaign for one election in a loop on a private Redis (no persistence) and a private
// PostgreSQL, each leading for a random short time and resigning, while the test kills the
// leader (a replacement process starts), freezes the leader past its TTL, freezes a follower,
// drops every client session on the server and freezes the server. An observer in this process
// watches with observe(). election-checker.ts then asserts: one process per term and terms
// rising in the order leaderships began; no two leaders at once unless a fault explains it (the
// earlier one frozen, or a server fault, and told it lost afterwards); a leader frozen past its
// TTL told it lost once it resumes; the observer agreeing with the processes. The test asserts
// liveness (every surviving process leads again after the faults, someone within a few TTLs),
// resignations seen by their notice (p99 well before the lease would have run out) and a killed
// leader seen gone and replaced well before its lease's end once the backend frees it, and the
// observer not polling the backend while a leader is frozen. (The 50 ms p99 target for resign ->
// observer is a latency on a quiet machine: `npm run bench -- election` measures it; here four
// processes and a server share a loaded one, where it measured 104-150 ms at load 16.) The
// measured numbers, and the overlaps faults explained (how many, the longest), are printed for
// the closing note.
//
// `npm test` runs each fault once per backend. LOCKHOST_FAULTS=full (`npm run faults`) runs
// each three times, with longer quiet gaps.
import { spawn, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LockService } from "../../host/locking/service.js";
import type { LockBackend, MutexStore } from "../../kit/backend.js";
import { PgBackend } from "../../plugins/backends/pg/index.js";
import { pgDefaults } from "../../plugins/backends/pg/config.js";
import { RedisBackend } from "../../plugins/backends/redis/index.js";
import { percentile } from "../../testing/election-contract.js";
import { startPostgresServer, startRedisServer, type TestServer } from "../support/servers.js";
import { killPgSessions, killRedisSessions } from "../support/kill-sessions.js";
import { checkElection, type ChildEvent, type ElectionReport, type ElectionRun, type Observation, type Pause, type ServerFault } from "./election-checker.js";
import { silent } from "../support/log.js";

const FULL = process.env.LOCKHOST_FAULTS === "full";
const CHILD = fileURLToPath(new URL("../support/campaigner.mjs", import.meta.url));
/** The leaders' lease. */
const TTL_MS = 1_000;
/** Campaigning processes at any time (a killed one is replaced). */
const PROCESSES = 4;
/**
 * How long a leader leads before it resigns, and rests before it campaigns again: short, for
 * about 100 resignations a run (fewer on a loaded machine), long enough for the observer to show
 * a leader before the test kills or freezes it.
 */
const LEAD_MS = [30, 150] as const;
const REST_MS = [10, 60] as const;
/** Quiet time before the first fault and between faults. */
const GAP_MS = FULL ? 3_000 : 1_500;
/** The longest the run goes on after the last fault, waiting for every surviving process to lead again. */
const LIVENESS_MS = 15_000;
/** Freezes: a leader and a follower well past the TTL, the server past it too. */
const PAUSE_MS = 2.5 * TTL_MS;
const SERVER_PAUSE_MS = 1.5 * TTL_MS;
/**
 * Resign -> observer, p99: 100 ms short of the least lease a resigning leader leaves (it led at
 * most 150 ms of its 1 s TTL: 850 ms), so an observer that saw resignations only when leases ran
 * out would be over this on every one; seen by the release notice, p50 is a few ms and p99 was
 * 96-191 ms at load 16, 209-327 ms at load 28 on 2 cores. The project's 50 ms target is the
 * bench's (bench/election.ts).
 */
const RESIGN_P99_MS = TTL_MS - LEAD_MS[1] - 100;
/**
 * A killed leader seen gone by the observer, and taken over by a campaigner, after the backend
 * frees it: half the TTL, where an observer reading at the lease's end would wait up to the whole
 * TTL (test/election-kill.test.ts holds the tighter 300 ms with one process, not five).
 */
const KILL_BOUND_MS = TTL_MS / 2;
/**
 * Status reads a second the observer's service may make while a leader is frozen past its TTL:
 * twice the election sentinel's (one read per default electionPollMs of 20 ms). On PostgreSQL
 * the frozen leader stays in the record, overdue; an observer that re-read it every
 * millisecond made about 800 a second.
 */
const READS_PER_SECOND_WHILE_FROZEN = 100;
/** Someone leads within this long after the last fault. */
const LEADER_AFTER_FAULTS_MS = 3 * TTL_MS;
const ELECTION = "faulty-election";
const TABLE = "lockhost_election_faults";
const PREFIX = "lockhost-election-faults:";

type FaultKind = "kill-leader" | "pause-leader" | "pause-follower" | "sessions-killed" | "server-pause";
const ONCE: readonly FaultKind[] = ["kill-leader", "pause-leader", "pause-follower", "sessions-killed", "server-pause"];
const FAULTS: readonly FaultKind[] = FULL ? [...ONCE, ...ONCE, ...ONCE] : ONCE;

/** Every child any run started, so afterAll can make sure none outlives the suite. */
const everyChild = new Set<ChildProcess>();
afterAll(() => {
  for (const child of everyChild) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

interface Target {
  readonly name: "redis" | "pg";
  readonly start: () => Promise<TestServer>;
  readonly where: string;
  readonly backend: (url: string) => LockBackend;
  /** Closes every client connection to the server but the caller's own. */
  readonly killSessions: (url: string) => Promise<void>;
}

const TARGETS: readonly Target[] = [
  {
    name: "redis",
    start: startRedisServer,
    where: PREFIX,
    backend: (url) => new RedisBackend({ url, keyPrefix: PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent),
    killSessions: killRedisSessions,
  },
  {
    name: "pg",
    start: () => startPostgresServer(),
    where: TABLE,
    backend: (url) => new PgBackend({ ...pgDefaults, url, table: TABLE }, silent),
    killSessions: killPgSessions,
  },
];

/** One campaigner process and what it said. */
interface Campaigner {
  readonly node: string;
  readonly process: ChildProcess;
  readonly events: ChildEvent[];
  readonly ready: Promise<void>;
  /** Resolves once the process has exited and its stdout is read to the end. */
  readonly closed: Promise<void>;
  stderr: string;
  /** The test killed it on purpose (a fault, or the end of the run). */
  killed: boolean;
  /** It exited before the test killed it. */
  crashed: boolean;
  paused: boolean;
}

/** What a run measured beyond the checker's report. */
interface RunResult {
  readonly run: ElectionRun;
  readonly report: ElectionReport;
  readonly kills: readonly { readonly term: number; readonly seenMs: number; readonly takenMs: number }[];
  /** Leaders frozen by the pause-leader fault (their term), and followers frozen by the pause-follower one. */
  readonly pausedLeaderTerms: readonly number[];
  readonly pausedFollowers: number;
  /** The observer service's status reads a second while each frozen leader was past its TTL. */
  readonly readsPerSecondWhileFrozen: readonly number[];
  readonly survivors: readonly string[];
  /** Leaderships begun after the last fault, per surviving process. */
  readonly ledAfterFaults: Readonly<Record<string, number>>;
  /** From the end of the last fault to the first leadership begun after it. */
  readonly firstLeaderAfterFaultsMs: number;
  readonly observerRestarts: number;
  /** Status reads of the observer's service (its observe loop and its election sentinel), stamped. */
  readonly observerReads: readonly number[];
  readonly campaignErrors: number;
  /** Processes that exited without being killed (a crash), with their stderr. */
  readonly crashed: readonly string[];
}

/** Waits for the first event (from now on) that `match` accepts, at most `ms`. */
type Waiter = { readonly match: (e: ChildEvent, c: Campaigner) => boolean; readonly resolve: (hit: { e: ChildEvent; c: Campaigner }) => void };

async function runElection(target: Target, server: TestServer): Promise<RunResult> {
  const events: ChildEvent[] = [];
  const observations: Observation[] = [];
  const pauses: Pause[] = [];
  const kills: { node: string; at: number }[] = [];
  const serverFaults: ServerFault[] = [];
  const waiters = new Set<Waiter>();
  const campaigners: Campaigner[] = [];
  let replacements = 0;

  const spawnCampaigner = (node: string): Campaigner => {
    const options = { election: ELECTION, node, ttlMs: TTL_MS, leadMs: LEAD_MS, restMs: REST_MS };
    const child = spawn(process.execPath, [CHILD, target.name, server.url, target.where, JSON.stringify(options)], { stdio: ["ignore", "pipe", "pipe"] });
    everyChild.add(child);
    let onReady: () => void = () => undefined;
    const c: Campaigner = {
      node,
      process: child,
      events: [],
      stderr: "",
      killed: false,
      crashed: false,
      paused: false,
      ready: new Promise<void>((r) => (onReady = r)),
      closed: new Promise<void>((r) => child.once("close", () => r())),
    };
    child.stderr!.on("data", (d: Buffer) => void (c.stderr += d.toString()));
    child.once("exit", () => void (c.crashed = !c.killed));
    createInterface({ input: child.stdout! }).on("line", (line) => {
      const e = JSON.parse(line) as ChildEvent;
      c.events.push(e);
      if (e.ready) return onReady();
      events.push(e);
      for (const w of waiters) {
        if (!w.match(e, c)) continue;
        waiters.delete(w);
        w.resolve({ e, c });
      }
    });
    campaigners.push(c);
    return c;
  };
  const next = (what: string, ms: number, match: Waiter["match"]): Promise<{ e: ChildEvent; c: Campaigner }> =>
    new Promise((resolve, reject) => {
      const w: Waiter = { match, resolve: (hit) => (clearTimeout(timer), resolve(hit)) };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`${what}: not within ${ms} ms`));
      }, ms);
      waiters.add(w);
    });
  const live = (): Campaigner[] => campaigners.filter((c) => !c.killed);
  /** The next leadership begun by a live process that is not paused. */
  const nextLeader = (): Promise<{ e: ChildEvent; c: Campaigner }> =>
    next("a new leader", 5 * TTL_MS, (e, c) => e.leading !== undefined && !c.killed && !c.paused);
  const ended = (c: Campaigner, term: number, by: number): boolean => c.events.some((e) => (e.resigned === term || e.lost === term) && e.at <= by);
  const stopped = async (c: Campaigner): Promise<void> => {
    // /proc/<pid>/stat is "pid (comm) state ...": wait for state T (stopped).
    const state = (): string => {
      try {
        const stat = readFileSync(`/proc/${c.process.pid}/stat`, "utf8");
        return stat.charAt(stat.lastIndexOf(")") + 2);
      } catch {
        return "gone";
      }
    };
    while (!["T", "gone"].includes(state())) await sleep(2);
  };
  const pause = async (c: Campaigner, forMs: number): Promise<Pause> => {
    c.paused = true;
    const from = Date.now();
    c.process.kill("SIGSTOP");
    await stopped(c);
    await sleep(forMs);
    // Stamped before SIGCONT: whatever the process says after resuming is stamped later.
    const to = Date.now();
    c.process.kill("SIGCONT");
    c.paused = false;
    const p = { node: c.node, from, to };
    pauses.push(p);
    return p;
  };

  // The observer, in this process: re-observes when an observation ends in an error (the
  // server froze, its session was killed), as a real caller would.
  // Its reads of the leader are counted at the backend's one-record store, which the leader
  // kind's steps (MutexSteps) read through.
  const observer = target.backend(server.url) as LockBackend & MutexStore;
  const observerReads: number[] = [];
  const status = observer.status.bind(observer);
  observer.status = (key: string) => (observerReads.push(Date.now()), status(key));
  const observing = new LockService(observer, { node: "observer" });
  const stopObserving = new AbortController();
  let observerRestarts = 0;
  const observed = (async () => {
    while (!stopObserving.signal.aborted) {
      try {
        for await (const info of observing.observe(ELECTION, { signal: stopObserving.signal })) {
          observations.push({ at: Date.now(), held: info.held, ...(info.held && { term: info.term!, node: info.node! }) });
        }
      } catch {
        observerRestarts++;
        await sleep(20);
      }
    }
  })();

  const measuredKills: { term: number; seenMs: number; takenMs: number }[] = [];
  const pausedLeaderTerms: number[] = [];
  const leaderPauses: Pause[] = [];
  let pausedFollowers = 0;
  let lastFaultEnd = 0;
  let endAt = 0;
  try {
    for (let i = 1; i <= PROCESSES; i++) spawnCampaigner(`node-${i}`);
    await within(20_000, Promise.all(campaigners.map((c) => c.ready)), () => `campaigners did not start: ${campaigners.map((c) => c.stderr).join("\n")}`);
    await sleep(GAP_MS);
    for (const fault of FAULTS) {
      await apply(fault);
      lastFaultEnd = Date.now();
      await sleep(GAP_MS);
    }
    // Liveness: every surviving process leads again (the run goes on until each has, at most LIVENESS_MS).
    const ledSince = (c: Campaigner): boolean => c.events.some((e) => e.leading !== undefined && e.at > lastFaultEnd);
    for (const until = lastFaultEnd + LIVENESS_MS; !live().every(ledSince) && Date.now() < until; ) await sleep(20);
    endAt = Date.now();
  } finally {
    server.resume();
    for (const c of campaigners) {
      c.killed = true;
      c.process.kill("SIGKILL");
    }
    await Promise.all(campaigners.map((c) => c.closed));
    stopObserving.abort();
    await observed;
    await observing.close();
  }

  const run: ElectionRun = { ttlMs: TTL_MS, events, observations, pauses, kills, serverFaults, endAt };
  const report = checkElection(run);
  const survivors = campaigners.filter((c) => !kills.some((k) => k.node === c.node)).map((c) => c.node);
  const ledAfterFaults = Object.fromEntries(
    survivors.map((n) => [n, events.filter((e) => e.node === n && e.leading !== undefined && e.at > lastFaultEnd && e.at <= endAt).length]),
  );
  const firstAfter = events.find((e) => e.leading !== undefined && e.at > lastFaultEnd);
  return {
    run,
    report,
    kills: measuredKills,
    pausedLeaderTerms,
    pausedFollowers,
    survivors,
    ledAfterFaults,
    readsPerSecondWhileFrozen: leaderPauses.map((p) => {
      // From a little past the frozen leader's lease end until it resumes.
      const [from, to] = [p.from + TTL_MS + 100, p.to];
      return Math.round((observerReads.filter((t) => t >= from && t <= to).length * 1000) / (to - from));
    }),
    firstLeaderAfterFaultsMs: firstAfter === undefined ? Infinity : firstAfter.at - lastFaultEnd,
    observerRestarts,
    observerReads,
    campaignErrors: events.filter((e) => e.error !== undefined && e.leading === undefined && e.resigned === undefined).length,
    crashed: campaigners.filter((c) => c.crashed).map((c) => `${c.node}: exit ${c.process.exitCode}\n${c.stderr}`),
  };

  async function apply(fault: FaultKind): Promise<void> {
    switch (fault) {
      case "kill-leader": {
        // Kill a process while it leads and the observer shows it leading (so the observer's next
        // change is the leader's end, not an older one); if it stepped down first, take the next one.
        for (let attempt = 1; ; attempt++) {
          if (attempt > 5) throw new Error("five leaders in a row stepped down before the observer showed them");
          const { e, c } = await nextLeader();
          const term = e.leading!;
          const shows = (): boolean => observations.at(-1)?.term === term;
          for (const until = Date.now() + 40; !shows() && Date.now() < until; ) await sleep(1);
          const killAt = Date.now();
          if (!shows() || ended(c, term, killAt)) continue;
          const shownAt = observations.length - 1;
          c.killed = true;
          kills.push({ node: c.node, at: killAt });
          c.process.kill("SIGKILL");
          await c.closed;
          if (ended(c, term, killAt)) {
            // It had stepped down just before it died (said so on its way out): not a killed leader.
            spawnCampaigner(`${c.node.split(".")[0]}.${++replacements}`);
            continue;
          }
          // When the backend frees the leadership: PostgreSQL when the session dies with the
          // process; Redis when the lease's last renewal runs out, on the server's clock (the
          // same machine's here), read right after the kill as test/election-kill.test.ts does.
          let freedAt = killAt;
          if (target.name === "redis") {
            const now = await observing.leader(ELECTION);
            if (now.held && now.term === term) freedAt = now.expiresAtMs!;
          }
          // Both may have happened already: read them from what was recorded, waiting far past the bound.
          const gone = (o: Observation, i: number): boolean => i > shownAt && (!o.held || o.term !== term);
          const took = (x: ChildEvent): boolean => x.leading !== undefined && x.leading > term;
          for (const until = Date.now() + 5 * TTL_MS; !(observations.some(gone) && events.some(took)) && Date.now() < until; ) await sleep(5);
          const seenAt = observations.find(gone)?.at ?? Infinity;
          const tookAt = events.find(took)?.at ?? Infinity;
          measuredKills.push({ term, seenMs: seenAt - freedAt, takenMs: tookAt - freedAt });
          // The replacement starts once the takeover is measured (its start-up would load the machine meanwhile).
          spawnCampaigner(`${c.node.split(".")[0]}.${++replacements}`);
          await within(
            20_000,
            Promise.all(live().map((x) => x.ready)),
            () =>
              `the replacement did not start: ${live()
                .map((x) => x.stderr)
                .join("\n")}`,
          );
          return;
        }
      }
      case "pause-leader": {
        // Freeze a process while it leads, past its TTL; retry if it had stepped down just before.
        for (let attempt = 1; attempt <= 3; attempt++) {
          const { e, c } = await nextLeader();
          const p = await pause(c, PAUSE_MS);
          // What it said just before it froze may reach us only now.
          await sleep(300);
          if (!ended(c, e.leading!, p.from)) {
            pausedLeaderTerms.push(e.leading!);
            leaderPauses.push(p);
            return;
          }
        }
        throw new Error("three paused processes had all stepped down just before the pause");
      }
      case "pause-follower": {
        const { c: leader } = await nextLeader();
        const others = live().filter((c) => c !== leader);
        await pause(others[Math.floor(Math.random() * others.length)]!, PAUSE_MS);
        pausedFollowers++;
        return;
      }
      case "sessions-killed": {
        const from = Date.now();
        await target.killSessions(server.url);
        serverFaults.push({ kind: fault, from, to: Date.now() });
        return;
      }
      case "server-pause": {
        const from = Date.now();
        server.pause();
        await sleep(SERVER_PAUSE_MS);
        server.resume();
        serverFaults.push({ kind: fault, from, to: Date.now() });
        return;
      }
    }
  }
}

/** `promise`, or an error saying `what` once `ms` have passed. */
async function within<T>(ms: number, promise: Promise<T>, what: () => string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(what())), ms)));
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const stats = (xs: readonly number[]): string =>
  xs.length === 0 ? "none" : `p50 ${percentile(xs, 50)} ms, p99 ${percentile(xs, 99)} ms, max ${Math.max(...xs)} ms over ${xs.length}`;

describe("checkElection", () => {
  const base = { ttlMs: 1_000, observations: [], pauses: [], kills: [], serverFaults: [], endAt: 10_000 };
  it("accepts leaders one after another with rising terms, and measures resign -> observer", () => {
    const r = checkElection({
      ...base,
      events: [
        { node: "a", at: 100, leading: 1 },
        { node: "a", at: 200, resigned: 1, doneAt: 201 },
        { node: "b", at: 202, leading: 2 },
        { node: "b", at: 300, resigned: 2, doneAt: 301 },
      ],
      observations: [
        { at: 101, held: true, term: 1, node: "a" },
        { at: 203, held: true, term: 2, node: "b" },
        { at: 304, held: false },
      ],
    });
    expect(r).toMatchObject({ leaderships: 2, sharedTerms: 0, termRegressions: 0, overlaps: 0, observerMismatches: 0, resignLatencies: [3, 4] });
  });

  it("tells a term the observer went past (a later one shown) from one it never got past", () => {
    const events: ChildEvent[] = [
      { node: "a", at: 100, leading: 1 },
      { node: "a", at: 130, resigned: 1, doneAt: 131 },
      { node: "b", at: 132, leading: 2 },
      { node: "b", at: 300, resigned: 2, doneAt: 301 },
    ];
    const past = checkElection({
      ...base,
      events,
      observations: [
        { at: 150, held: true, term: 2, node: "b" },
        { at: 305, held: false },
      ],
    });
    expect(past).toMatchObject({ coalescedResignations: 1, unseenResignations: 0, resignLatencies: [5] });
    const stuck = checkElection({ ...base, events, observations: [{ at: 90, held: false }] });
    expect(stuck).toMatchObject({ coalescedResignations: 0, unseenResignations: 2 });
  });

  it("finds a shared term, a falling term, an unexplained overlap and an observer that disagrees", () => {
    const r = checkElection({
      ...base,
      events: [
        { node: "a", at: 100, leading: 5 },
        { node: "b", at: 150, leading: 5 },
        { node: "c", at: 160, leading: 4 },
        { node: "a", at: 200, resigned: 5 },
        { node: "b", at: 210, resigned: 5 },
        { node: "c", at: 220, resigned: 4 },
      ],
      observations: [
        { at: 101, held: true, term: 5, node: "c" },
        { at: 170, held: true, term: 4, node: "c" },
      ],
    });
    expect(r).toMatchObject({ sharedTerms: 1, termRegressions: 2, overlaps: 3, unexplainedOverlaps: 3, observerMismatches: 2 });
  });

  it("explains an overlap with a leader paused past its TTL only when it is told it lost after resuming", () => {
    const events = (lostAt: number): ChildEvent[] => [
      { node: "a", at: 100, leading: 1 },
      { node: "b", at: 1_300, leading: 2 },
      { node: "b", at: 1_400, resigned: 2 },
      { node: "a", at: lostAt, lost: 1, reason: "LOST" },
    ];
    const pauses = [{ node: "a", from: 150, to: 2_650 }];
    const told = checkElection({ ...base, pauses, events: events(2_651) });
    expect(told).toMatchObject({
      overlaps: 1,
      unexplainedOverlaps: 0,
      explainedBy: { paused: { count: 1, longestMs: 100 } },
      untoldPausedLeaders: 0,
      pausedLeaders: [{ node: "a", term: 1, toldAfterMs: 1 }],
    });
    // Not told at all: the run ends with a still believing it leads.
    const untold = checkElection({ ...base, pauses, events: events(2_651).slice(0, 3) });
    expect(untold).toMatchObject({ overlaps: 1, unexplainedOverlaps: 1, untoldPausedLeaders: 1 });
    // The other took over before the pause began: the pause explains nothing.
    const early = checkElection({ ...base, pauses: [{ node: "a", from: 1_350, to: 3_850 }], events: events(3_900) });
    expect(early.unexplainedOverlaps).toBe(1);
  });

  it("explains an overlap with a server fault only when the earlier leader was told it lost", () => {
    const events: ChildEvent[] = [
      { node: "a", at: 100, leading: 1 },
      { node: "b", at: 210, leading: 2 },
      { node: "a", at: 400, lost: 1, reason: "LOST" },
    ];
    const serverFaults = [{ kind: "sessions-killed", from: 200, to: 205 }];
    expect(checkElection({ ...base, serverFaults, events })).toMatchObject({
      overlaps: 1,
      unexplainedOverlaps: 0,
      explainedBy: { "sessions-killed": { count: 1, longestMs: 190 } },
    });
    expect(checkElection({ ...base, serverFaults: [{ kind: "x", from: 3_000, to: 3_005 }], events }).unexplainedOverlaps).toBe(1);
  });
});

describe.each(TARGETS)("leader election under faults: $name", (target) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await target.start();
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  }, 60_000);

  it(
    `keeps one leader per term and at a time, tells frozen leaders, stays live and quick to observe through each fault ${FULL ? "three times" : "once"}`,
    async () => {
      const r = await runElection(target, server);
      const { report } = r;
      const summary = {
        leaderships: report.leaderships,
        sharedTerms: report.sharedTerms,
        termRegressions: report.termRegressions,
        overlaps: report.overlaps,
        unexplainedOverlaps: report.unexplainedOverlaps,
        explainedBy: report.explainedBy,
        pausedLeaders: report.pausedLeaders,
        observerMismatches: report.observerMismatches,
        unseenResignations: report.unseenResignations,
        coalescedResignations: report.coalescedResignations,
        skippedResignations: report.skippedResignations,
        ledAfterFaults: r.ledAfterFaults,
        firstLeaderAfterFaultsMs: r.firstLeaderAfterFaultsMs,
        observerRestarts: r.observerRestarts,
        observerReads: r.observerReads.length,
        readsPerSecondWhileFrozen: r.readsPerSecondWhileFrozen,
        observations: r.run.observations.length,
        campaignErrors: r.campaignErrors,
        pausedFollowers: r.pausedFollowers,
      };
      console.log(`[election faults ${target.name}] ${JSON.stringify(summary)}`);
      console.log(
        `[election faults ${target.name}] resign -> observer, from the decision to resign: ${stats(report.resignLatencies)}; from resign() ` +
          `resolving: ${stats(report.resolvedLatencies)}; slowest: ${JSON.stringify(report.slowestResignations)}`,
      );
      console.log(
        `[election faults ${target.name}] killed leader (from the backend freeing it): seen gone ${stats(r.kills.map((k) => k.seenMs))}; taken ` +
          `over ${stats(r.kills.map((k) => k.takenMs))}`,
      );
      console.log(`[election faults ${target.name}] faults: ${JSON.stringify({ kills: r.run.kills, pauses: r.run.pauses, server: r.run.serverFaults })}`);
      const why = `${JSON.stringify(summary)}\n${report.samples.join("\n")}`;
      if (report.samples.length > 0)
        console.log(`[election faults ${target.name}] first findings (overlaps say what explains them):\n${report.samples.join("\n")}`);

      expect(r.crashed, why).toEqual([]);
      // (1) One leader per term, terms rising in the order leaderships began.
      expect(report.sharedTerms, why).toBe(0);
      expect(report.termRegressions, why).toBe(0);
      // (2) No two leaders at once but where a fault explains it.
      expect(report.unexplainedOverlaps, why).toBe(0);
      expect(report.observerMismatches, why).toBe(0);
      // (3) Each leader frozen past its TTL was told it lost once it resumed (and the fault hit a leader at all).
      expect(r.pausedLeaderTerms.length, why).toBe(FAULTS.filter((f) => f === "pause-leader").length);
      for (const term of r.pausedLeaderTerms)
        expect(
          report.pausedLeaders.map((p) => p.term),
          why,
        ).toContain(term);
      expect(report.untoldPausedLeaders, why).toBe(0);
      // Meanwhile the observer waits for the frozen leader's end instead of polling for it.
      for (const rate of r.readsPerSecondWhileFrozen) expect(rate, why).toBeLessThan(READS_PER_SECOND_WHILE_FROZEN);
      // (4) Live after the faults: someone leads soon, and every surviving process leads again.
      expect(r.firstLeaderAfterFaultsMs, why).toBeLessThan(LEADER_AFTER_FAULTS_MS);
      expect(r.survivors.length).toBe(PROCESSES);
      for (const node of r.survivors) expect(r.ledAfterFaults[node] ?? 0, `${node} after the faults: ${why}`).toBeGreaterThan(0);
      // (5) Observers: resignations seen by their notice, well before the lease would have run
      // out (p99); a killed leader seen gone and replaced soon after the backend frees it.
      expect(report.resignLatencies.length, why).toBeGreaterThan(20);
      expect(report.unseenResignations, why).toBe(0);
      // A term too short for the observer's next read may go unshown (1 of 93 at load 16); an
      // observer that missed notices would miss most, and show the rest late.
      expect(report.coalescedResignations, why).toBeLessThan(report.resignLatencies.length / 4);
      expect(percentile(report.resignLatencies, 99), why).toBeLessThan(RESIGN_P99_MS);
      expect(r.kills.length).toBe(FAULTS.filter((f) => f === "kill-leader").length);
      for (const k of r.kills) {
        expect(k.seenMs, why).toBeLessThan(KILL_BOUND_MS);
        expect(k.takenMs, why).toBeLessThan(KILL_BOUND_MS);
      }
    },
    FULL ? 300_000 : 120_000,
  );
});
