// Checks a shared critical-section log: lines "E <key> <fence> <node>" (entered, holding the
// lock with that fence) and "X <key> <fence> <node>" (about to release), in the order the
// kernel appended them. Mutual exclusion holds when, per key, every E is followed by its own X
// before the next E; fencing holds when each key's fences strictly increase.

/** What the checker found in one log. */
export interface ExclusionReport {
  /** Critical sections entered. */
  readonly acquisitions: number;
  /** Times a section was entered while another on the same key was still open. */
  readonly overlaps: number;
  /** Times a key's fence did not exceed the previous fence of that key. */
  readonly fenceRegressions: number;
  /** Exits that did not match the open section (a broken log, or a writer bug). */
  readonly unmatchedExits: number;
  /** Sections entered per node. */
  readonly perNode: Readonly<Record<string, number>>;
  /** Sections entered per key. */
  readonly perKey: Readonly<Record<string, number>>;
  /** The first few problems, as "line N: ..." for the failure message. */
  readonly samples: readonly string[];
}

/** Reads the log text and reports acquisitions, overlaps and fence regressions. */
export function checkExclusion(log: string): ExclusionReport {
  /** Per key, the sections entered and not yet exited, by "fence node". */
  const open = new Map<string, Map<string, number>>();
  const lastFence = new Map<string, number>();
  const perNode: Record<string, number> = {};
  const perKey: Record<string, number> = {};
  const samples: string[] = [];
  let acquisitions = 0;
  let overlaps = 0;
  let fenceRegressions = 0;
  let unmatchedExits = 0;
  const note = (line: number, text: string): void => void (samples.length < 10 && samples.push(`line ${line}: ${text}`));

  log.split("\n").forEach((raw, i) => {
    if (raw === "") return;
    const line = i + 1;
    const [kind, key, fenceText, node, extra] = raw.split(" ");
    const fence = Number(fenceText);
    if ((kind !== "E" && kind !== "X") || key === undefined || node === undefined || extra !== undefined || !Number.isSafeInteger(fence)) {
      throw new Error(`line ${line} is not "E|X key fence node": ${JSON.stringify(raw)}`);
    }
    const id = `${fence} ${node}`;
    let inside = open.get(key);
    if (!inside) open.set(key, (inside = new Map()));
    if (kind === "E") {
      acquisitions++;
      perNode[node] = (perNode[node] ?? 0) + 1;
      perKey[key] = (perKey[key] ?? 0) + 1;
      if (inside.size > 0) {
        overlaps++;
        const [other, at] = inside.entries().next().value!;
        note(line, `key ${key}: fence ${fence} (${node}) entered while fence ${other} (line ${at}) was inside`);
      }
      const previous = lastFence.get(key);
      if (previous !== undefined && fence <= previous) {
        fenceRegressions++;
        note(line, `key ${key}: fence ${fence} came after fence ${previous}`);
      }
      lastFence.set(key, Math.max(fence, previous ?? fence));
      inside.set(id, line);
    } else if (!inside.delete(id)) {
      unmatchedExits++;
      note(line, `key ${key}: exit of fence ${fence} (${node}) that never entered`);
    }
  });
  return { acquisitions, overlaps, fenceRegressions, unmatchedExits, perNode, perKey, samples };
}
