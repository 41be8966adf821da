// Checks a shared critical-section log, in the order the kernel appended its lines:
//
//   E <key> <fence> <node> [mode]   entered: holds the lock with that fence
//   W <key> <fence> <node>   wrote to the key's fenced register (from inside the section)
//   X <key> <fence> <node>   about to release
//   P <node> / C <node>      the test paused (SIGSTOP) / continued (SIGCONT) that host process
//   K <node>                 the test killed that host process (SIGKILL)
//   F <fault> / R <fault>    a server-side fault began / is over (restart, pause, sessions killed)
//
// A section's mode says what it may share the key with: none (a mutex) or "w" (a writer) with
// nobody, "r" (a reader) with other readers, "p<N>" (a permit of a semaphore with N permits)
// with fewer than N other permits. Mutual exclusion holds when no section enters a key beside
// sections its mode may not share it with; fencing holds when each key's fences rise: an
// exclusive section's fence exceeds every fence entered on the key before it, a shared one's
// every exclusive fence before it (two readers may log their entries in either order). The register is the resource a
// fence protects: it accepts a write whose fence is at least the highest it accepted and refuses
// a lower one. A fault can let two sections overlap (a paused holder outlives its TTL, a server
// that restarts empty forgets its locks): such an overlap is *explained* when the older section
// lived through a fault, and its late writes must then be refused. Anything else is a bug.

/** What the checker found in one log. */
export interface ExclusionReport {
  /** Critical sections entered. */
  readonly acquisitions: number;
  /** Times a section was entered while another on the same key was still open. */
  readonly overlaps: number;
  /** Overlaps no fault explains: the open section had lived through no pause, kill or server fault. */
  readonly unexplainedOverlaps: number;
  /** Times a key's fence did not exceed the previous fence of that key (never explained). */
  readonly fenceRegressions: number;
  /** Exits (and writes) that did not match an open section (a broken log, or a writer bug). */
  readonly unmatchedExits: number;
  /** Register writes, and those the register refused for a fence below one it had accepted. */
  readonly writes: number;
  readonly refusedWrites: number;
  /** Refused writes from sections that lived through no fault: a holder locked out for nothing. */
  readonly unexplainedRefusals: number;
  /** Keys a killed host held that no other host entered afterwards. */
  readonly keysNotFreedAfterKill: readonly string[];
  /** Sections entered per node, in the whole log and after its last fault line. */
  readonly perNode: Readonly<Record<string, number>>;
  readonly perNodeAfterFaults: Readonly<Record<string, number>>;
  /** Sections entered per key. */
  readonly perKey: Readonly<Record<string, number>>;
  /** The first few problems, as "line N: ..." for the failure message. */
  readonly samples: readonly string[];
}

interface Section {
  readonly line: number;
  readonly node: string;
  /** "x" (mutex or writer), "r" (reader) or "p" (semaphore permit). */
  readonly mode: "x" | "r" | "p";
  /** It lived through a fault (its host paused, a server fault while it was open). */
  affected: boolean;
}

const SECTION = /^[EWX]$/;

/** Reads the log text and reports acquisitions, overlaps, fence regressions and register refusals. */
export function checkExclusion(log: string): ExclusionReport {
  /** Per key, the sections entered and not yet exited, by "fence node". */
  const open = new Map<string, Map<string, Section>>();
  /** Per key, the highest fence entered, and the highest exclusive one. */
  const lastFence = new Map<string, number>();
  const lastExclusive = new Map<string, number>();
  const accepted = new Map<string, number>();
  const paused = new Set<string>();
  const faults = new Set<string>();
  /** Keys a killed node held, until another node enters them. */
  const heldByKilled = new Set<string>();
  const perNode: Record<string, number> = {};
  let perNodeAfterFaults: Record<string, number> = {};
  const perKey: Record<string, number> = {};
  const samples: string[] = [];
  const counts = {
    acquisitions: 0,
    overlaps: 0,
    unexplainedOverlaps: 0,
    fenceRegressions: 0,
    unmatchedExits: 0,
    writes: 0,
    refusedWrites: 0,
    unexplainedRefusals: 0,
  };
  const note = (line: number, text: string): void => void (samples.length < 10 && samples.push(`line ${line}: ${text}`));
  const everyOpen = function* (): Generator<Section> {
    for (const sections of open.values()) yield* sections.values();
  };

  log.split("\n").forEach((raw, i) => {
    if (raw === "") return;
    const line = i + 1;
    const fields = raw.split(" ");
    const kind = fields[0] ?? "";
    if (!SECTION.test(kind)) {
      const [, who, extra] = fields;
      if (!/^[PCKFR]$/.test(kind) || who === undefined || who === "" || extra !== undefined) {
        throw new Error(`line ${line} is not "E|W|X key fence node" nor "P|C|K|F|R name": ${JSON.stringify(raw)}`);
      }
      perNodeAfterFaults = {};
      if (kind === "P") {
        paused.add(who);
        for (const s of everyOpen()) if (s.node === who) s.affected = true;
      } else if (kind === "C") {
        paused.delete(who);
      } else if (kind === "K") {
        // A killed host writes nothing more: its sections end here, its locks wait for their TTL.
        for (const [key, sections] of open) {
          for (const [id, s] of sections) {
            if (s.node !== who) continue;
            sections.delete(id);
            heldByKilled.add(key);
          }
        }
      } else if (kind === "F") {
        faults.add(who);
        for (const s of everyOpen()) s.affected = true;
      } else {
        faults.delete(who);
      }
      return;
    }
    const [, key, fenceText, node, modeText, extra] = fields;
    const fence = Number(fenceText);
    const mode = modeOf(modeText);
    if (
      key === undefined ||
      node === undefined ||
      extra !== undefined ||
      !Number.isSafeInteger(fence) ||
      mode === undefined ||
      (kind !== "E" && modeText !== undefined)
    ) {
      throw new Error(`line ${line} is not "E key fence node [w|r|p<N>]" nor "W|X key fence node": ${JSON.stringify(raw)}`);
    }
    const id = `${fence} ${node}`;
    let inside = open.get(key);
    if (!inside) open.set(key, (inside = new Map()));
    if (kind === "E") {
      counts.acquisitions++;
      perNode[node] = (perNode[node] ?? 0) + 1;
      perNodeAfterFaults[node] = (perNodeAfterFaults[node] ?? 0) + 1;
      perKey[key] = (perKey[key] ?? 0) + 1;
      const conflicting = [...inside.entries()].filter(([, s]) => conflicts(mode, s.mode, inside.size));
      if (conflicting.length > 0) {
        counts.overlaps++;
        const [otherId, other] = conflicting[0]!;
        const unexplained = conflicting.some(([, s]) => !s.affected);
        if (unexplained) counts.unexplainedOverlaps++;
        const what = mode.kind === "p" ? `as permit ${inside.size + 1} of ${mode.permits}` : `while fence ${otherId} (line ${other.line}) was inside`;
        note(line, `key ${key}: fence ${fence} (${node}) entered ${what}${unexplained ? "" : " (explained: it lived through a fault)"}`);
      }
      // An exclusive section follows every section entered before it; a shared one only the exclusive ones.
      const previous = (mode.kind === "x" ? lastFence : lastExclusive).get(key);
      if (previous !== undefined && fence <= previous) {
        counts.fenceRegressions++;
        note(line, `key ${key}: fence ${fence} came after fence ${previous}`);
      }
      lastFence.set(key, Math.max(fence, lastFence.get(key) ?? fence));
      if (mode.kind === "x") lastExclusive.set(key, Math.max(fence, previous ?? fence));
      heldByKilled.delete(key); // taken again: the killed host's lock was freed
      inside.set(id, { line, node, mode: mode.kind, affected: faults.size > 0 || paused.has(node) });
      return;
    }
    const section = inside.get(id);
    if (!section) {
      counts.unmatchedExits++;
      note(line, `key ${key}: ${kind === "X" ? "exit" : "write"} of fence ${fence} (${node}) that never entered`);
      return;
    }
    if (kind === "X") {
      inside.delete(id);
      return;
    }
    counts.writes++;
    const highest = accepted.get(key);
    if (highest === undefined || fence >= highest) {
      accepted.set(key, fence);
      return;
    }
    counts.refusedWrites++;
    if (!section.affected) {
      counts.unexplainedRefusals++;
      note(line, `key ${key}: the register refused fence ${fence} (${node}), below ${highest}, from a section no fault touched`);
    }
  });
  return { ...counts, keysNotFreedAfterKill: [...heldByKilled].sort(), perNode, perNodeAfterFaults, perKey, samples };
}

type Mode = { readonly kind: "x" | "r" } | { readonly kind: "p"; readonly permits: number };

/** The mode field of an E line: absent or "w" exclusive, "r" a reader, "p<N>" a permit of N; undefined when malformed. */
function modeOf(text: string | undefined): Mode | undefined {
  if (text === undefined || text === "w") return { kind: "x" };
  if (text === "r") return { kind: "r" };
  const permits = /^p([1-9][0-9]*)$/.exec(text)?.[1];
  return permits === undefined ? undefined : { kind: "p", permits: Number(permits) };
}

/** Whether a section entering in `mode` may not share its key with an open section in `other` (of `open` open ones). */
function conflicts(mode: Mode, other: Section["mode"], open: number): boolean {
  if (mode.kind !== "p") return mode.kind === "x" || other !== "r";
  return other !== "p" || open >= mode.permits;
}
