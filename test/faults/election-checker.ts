// Checks one run of the election fault suite (election-faults.test.ts): what every campaigner
// process said (test/support/campaigner.mjs: leading, resigned, lost, each stamped with the
// machine's wall clock), the faults the test applied, and what an observer saw.
//
// - Terms: no term led by two processes (or twice), and terms rising in the order the processes
//   began to lead.
// - One leader at a time: a process leads from its `leading` event until its `resigned` (the
//   moment it decided to step down, before resign() was called), its `lost`, its kill, or the
//   run's end. Two such spans that overlap are a bug unless a fault explains it, as in
//   test/cluster/exclusion-checker.ts: the earlier leader was paused (SIGSTOP) while it led,
//   after it began and before the other began, and it was told it lost (`lost`) only after it
//   resumed; or a server fault (sessions killed, server paused) began before the other began and
//   ended (plus SETTLE_MS) after the earlier one began, and the earlier one was told it lost.
// - A leader paused past its TTL is told it lost (`lost`) once it resumes, within a TTL.
// - The observer: each term it saw is led by the node that said it led that term, and the terms
//   it saw never go down.
// - Resign -> observer: for each clean resignation (resign() resolved, no loss told) outside a
//   server fault's window, the time from the resigned event's `at` to the first observation at
//   or after it, and after the observer first showed the term, that shows nobody or a later term.

/** One line a campaigner printed (see test/support/campaigner.mjs). */
export interface ChildEvent {
  readonly node: string;
  readonly at: number;
  readonly ready?: boolean;
  readonly leading?: number;
  readonly resigned?: number;
  readonly doneAt?: number;
  readonly lost?: number;
  readonly reason?: string;
  readonly error?: string;
}

/** What the observer saw, stamped when observe() yielded it. */
export interface Observation {
  readonly at: number;
  readonly held: boolean;
  readonly term?: number;
  readonly node?: string;
}

/** A process the test froze (SIGSTOP at `from`, SIGCONT at `to`). */
export interface Pause {
  readonly node: string;
  readonly from: number;
  readonly to: number;
}

/** A server-side fault: from when it began until the server answered normally again. */
export interface ServerFault {
  readonly kind: string;
  readonly from: number;
  readonly to: number;
}

/** Everything one run recorded. */
export interface ElectionRun {
  readonly ttlMs: number;
  readonly events: readonly ChildEvent[];
  readonly observations: readonly Observation[];
  readonly pauses: readonly Pause[];
  /** Processes the test killed (SIGKILL), stamped before the signal. */
  readonly kills: readonly { readonly node: string; readonly at: number }[];
  readonly serverFaults: readonly ServerFault[];
  /** When the run stopped looking (before its processes were stopped). */
  readonly endAt: number;
}

/** How long after a server fault its window stays open: a loss it caused may be told a little after the server is back. */
export const SETTLE_MS = 500;

/** One leadership as a process lived it. */
export interface Span {
  readonly node: string;
  readonly term: number;
  readonly start: number;
  readonly end: number;
  readonly how: "resigned" | "lost" | "killed" | "running";
  /** When the process was told it lost this term, if it was. */
  readonly lostAt?: number;
}

/** What the checker found. */
export interface ElectionReport {
  readonly leaderships: number;
  /** Terms led by two processes, or led twice. */
  readonly sharedTerms: number;
  /** Leaderships whose term is not above the term of the leadership that began before it. */
  readonly termRegressions: number;
  readonly overlaps: number;
  readonly unexplainedOverlaps: number;
  /** Explained overlaps by what explains them ("paused", or the server fault's kind): how many, and the longest, in ms. */
  readonly explainedBy: Readonly<Record<string, { readonly count: number; readonly longestMs: number }>>;
  /** Leaders frozen past their TTL, and how long after resuming each was told it lost (undefined: never). */
  readonly pausedLeaders: readonly { readonly node: string; readonly term: number; readonly toldAfterMs: number | undefined }[];
  /** Paused leaders not told they lost within a TTL of resuming. */
  readonly untoldPausedLeaders: number;
  /** Observations naming a different node for a term than the process that led it, or a term below one seen before. */
  readonly observerMismatches: number;
  /**
   * Resign -> observer latencies of clean resignations outside fault windows, ms: from when the
   * process decided to step down (before resign() was called), so an upper bound of the time
   * from the release to the observer; `resolvedLatencies` count from when resign() resolved, a
   * lower bound (it may be negative: the observer can show the end before the resigner hears
   * its release confirmed).
   */
  readonly resignLatencies: readonly number[];
  readonly resolvedLatencies: readonly number[];
  /** The slowest clean resignations: when the process decided, how long resign() took, when the observer showed it. */
  readonly slowestResignations: readonly {
    readonly node: string;
    readonly term: number;
    readonly at: number;
    readonly resignMs: number;
    readonly seenMs: number;
  }[];
  /**
   * Clean resignations whose term the observer never showed, nor any later one (a stuck
   * observer; left out of the latencies).
   */
  readonly unseenResignations: number;
  /**
   * Clean resignations whose term the observer never showed but went past (it showed a later
   * term): an observer reads the record once per wake, so a term that began and ended between
   * two reads (a 30 ms one, while a loaded machine held the observer back) is not shown.
   */
  readonly coalescedResignations: number;
  /** Resignations left out: in a fault window, failed, or told of a loss meanwhile. */
  readonly skippedResignations: number;
  readonly spans: readonly Span[];
  /** The first few problems, for the failure message. */
  readonly samples: readonly string[];
}

/** Reads the leaderships out of the processes' events: one span per (node, term). */
export function spansOf(run: ElectionRun): Span[] {
  const kills = new Map(run.kills.map((k) => [k.node, k.at]));
  const spans: Span[] = [];
  for (const e of run.events) {
    if (e.leading === undefined) continue;
    const term = e.leading;
    const mine = run.events.filter((x) => x.node === e.node && x.at >= e.at);
    const resigned = mine.find((x) => x.resigned === term);
    const lost = mine.find((x) => x.lost === term);
    const killedAt = kills.get(e.node);
    const ends: { at: number; how: Span["how"] }[] = [{ at: run.endAt, how: "running" }];
    if (resigned) ends.push({ at: resigned.at, how: "resigned" });
    if (lost) ends.push({ at: lost.at, how: "lost" });
    if (killedAt !== undefined && killedAt >= e.at) ends.push({ at: killedAt, how: "killed" });
    const end = ends.reduce((a, b) => (b.at < a.at ? b : a));
    spans.push({ node: e.node, term, start: e.at, end: end.at, how: end.how, ...(lost && { lostAt: lost.at }) });
  }
  return spans.sort((a, b) => a.start - b.start || a.term - b.term);
}

/** Checks one run (see the file comment). */
export function checkElection(run: ElectionRun): ElectionReport {
  const samples: string[] = [];
  const note = (text: string): void => void (samples.length < 12 && samples.push(text));
  const spans = spansOf(run);

  // Terms: one leader each, rising in the order leaderships began.
  let sharedTerms = 0;
  const byTerm = new Map<number, Span>();
  for (const s of spans) {
    const other = byTerm.get(s.term);
    if (other) {
      sharedTerms++;
      note(`term ${s.term} led by ${other.node} (at ${other.start}) and by ${s.node} (at ${s.start})`);
    } else {
      byTerm.set(s.term, s);
    }
  }
  let termRegressions = 0;
  for (let i = 1; i < spans.length; i++) {
    const [a, b] = [spans[i - 1]!, spans[i]!];
    if (b.term <= a.term) {
      termRegressions++;
      note(`term ${b.term} (${b.node}) began at ${b.start}, after term ${a.term} (${a.node}) began at ${a.start}`);
    }
  }

  // One leader at a time, unless a fault explains it.
  let overlaps = 0;
  let unexplainedOverlaps = 0;
  const explainedBy: Record<string, { count: number; longestMs: number }> = {};
  for (let i = 0; i < spans.length; i++) {
    const a = spans[i]!;
    for (let j = i + 1; j < spans.length; j++) {
      const b = spans[j]!;
      if (b.start >= a.end) continue;
      overlaps++;
      const why = explain(run, a, b);
      if (why === undefined) {
        unexplainedOverlaps++;
      } else {
        const by = (explainedBy[why.by] ??= { count: 0, longestMs: 0 });
        by.count++;
        by.longestMs = Math.max(by.longestMs, Math.min(a.end, b.end) - b.start);
      }
      note(
        `${b.node} led term ${b.term} from ${b.start} while ${a.node} still led term ${a.term} (from ${a.start} until its ${a.how} at ${a.end}, ` +
          `${Math.min(a.end, b.end) - b.start} ms of overlap): ${why?.text ?? "NO FAULT EXPLAINS IT"}`,
      );
    }
  }

  // A leader frozen past its TTL is told it lost once it resumes.
  const pausedLeaders: { node: string; term: number; toldAfterMs: number | undefined }[] = [];
  let untoldPausedLeaders = 0;
  for (const p of run.pauses) {
    if (p.to - p.from <= run.ttlMs) continue;
    for (const s of spans) {
      if (s.node !== p.node || s.start > p.from || s.end < p.from) continue;
      // It led when it froze (its span had not ended before the pause began).
      const toldAfterMs = s.lostAt !== undefined && s.lostAt >= p.to ? s.lostAt - p.to : undefined;
      pausedLeaders.push({ node: s.node, term: s.term, toldAfterMs });
      if (toldAfterMs === undefined || toldAfterMs > run.ttlMs) {
        untoldPausedLeaders++;
        note(
          `${s.node} led term ${s.term} when it was paused for ${p.to - p.from} ms (past its TTL) and ` +
            `was ${toldAfterMs === undefined ? "not told it lost after it resumed" : `told it lost only ${toldAfterMs} ms after it resumed`} (span ` +
            `ends: ${s.how} at ${s.end})`,
        );
      }
    }
  }

  // The observer agrees with the processes, and its terms never go down.
  let observerMismatches = 0;
  let highest = -Infinity;
  for (const o of run.observations) {
    if (!o.held || o.term === undefined) continue;
    const led = byTerm.get(o.term);
    if (led !== undefined && led.node !== o.node) {
      observerMismatches++;
      note(`the observer saw ${o.node} lead term ${o.term} at ${o.at}, but ${led.node} said it led that term`);
    }
    if (o.term < highest) {
      observerMismatches++;
      note(`the observer saw term ${o.term} at ${o.at} after term ${highest}`);
    }
    highest = Math.max(highest, o.term);
  }

  // Resign -> observer.
  const resignLatencies: number[] = [];
  const resolvedLatencies: number[] = [];
  const measured: { node: string; term: number; at: number; resignMs: number; seenMs: number }[] = [];
  let unseenResignations = 0;
  let coalescedResignations = 0;
  let skippedResignations = 0;
  /** Where the observer first showed each term. */
  const firstSeen = new Map<number, number>();
  run.observations.forEach((o, i) => {
    if (o.held && o.term !== undefined && !firstSeen.has(o.term)) firstSeen.set(o.term, i);
  });
  for (const r of run.events) {
    if (r.resigned === undefined) continue;
    const term = r.resigned;
    const toldLost = run.events.some((x) => x.node === r.node && x.lost === term);
    const inFault = run.serverFaults.some((f) => r.at >= f.from && r.at <= f.to + SETTLE_MS);
    if (r.error !== undefined || toldLost || inFault || r.at > run.endAt) {
      skippedResignations++;
      continue;
    }
    const shown = firstSeen.get(term);
    if (shown === undefined && run.observations.some((o) => o.held && (o.term ?? -Infinity) > term)) {
      coalescedResignations++;
      continue;
    }
    if (shown === undefined) {
      unseenResignations++;
      note(`the observer never showed term ${term} (${r.node} led it and resigned at ${r.at})`);
      continue;
    }
    // The first change after the observer showed the term (an older "nobody" is not its end).
    const seen = run.observations.find((o, i) => i > shown && o.at >= r.at && (!o.held || (o.term ?? -Infinity) > term));
    if (seen === undefined) {
      // Nothing after it: the observer never showed the change (a stuck observer).
      resignLatencies.push(Infinity);
      note(`the observer never showed the end of term ${term} (${r.node} resigned at ${r.at})`);
      continue;
    }
    resignLatencies.push(seen.at - r.at);
    if (r.doneAt !== undefined) resolvedLatencies.push(seen.at - r.doneAt);
    measured.push({ node: r.node, term, at: r.at, resignMs: (r.doneAt ?? NaN) - r.at, seenMs: seen.at - r.at });
  }

  return {
    leaderships: spans.length,
    sharedTerms,
    termRegressions,
    overlaps,
    unexplainedOverlaps,
    explainedBy,
    pausedLeaders,
    untoldPausedLeaders,
    observerMismatches,
    resignLatencies,
    resolvedLatencies,
    slowestResignations: measured.sort((a, b) => b.seenMs - a.seenMs).slice(0, 3),
    unseenResignations,
    coalescedResignations,
    skippedResignations,
    spans,
    samples,
  };
}

/** Why `a` (began first) may still have believed it led when `b` began; undefined when nothing explains it. */
function explain(run: ElectionRun, a: Span, b: Span): { readonly by: string; readonly text: string } | undefined {
  if (a.lostAt === undefined) return undefined; // never told it lost: not explained by anything
  for (const p of run.pauses) {
    if (p.node === a.node && p.from >= a.start && p.from <= b.start && a.lostAt >= p.to) {
      return { by: "paused", text: `${a.node} was paused from ${p.from} to ${p.to} and told it lost ${a.lostAt - p.to} ms after it resumed` };
    }
  }
  for (const f of run.serverFaults) {
    if (f.from <= b.start && f.to + SETTLE_MS >= a.start) {
      return { by: f.kind, text: `server fault ${f.kind} from ${f.from} to ${f.to}; ${a.node} was told it lost ${a.lostAt - f.from} ms after it began` };
    }
  }
  return undefined;
}
