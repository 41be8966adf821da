// A small reader of the Prometheus text exposition format (version 0.0.4), for tests that
// scrape /metrics: families by their TYPE lines, and every sample with its labels and value.

/** One sample line. */
export interface Sample {
  /** The sample's own name (a histogram's: `<family>_bucket`, `_sum` or `_count`). */
  readonly name: string;
  /** The family it belongs to (its TYPE line's name). */
  readonly family: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** One scrape, read. */
export interface Scrape {
  /** Each family's type, by name. */
  readonly types: ReadonlyMap<string, string>;
  readonly samples: readonly Sample[];
  /** The sum of the samples named `name` whose labels include `labels` (0 when none do). */
  value(name: string, labels?: Readonly<Record<string, string>>): number;
  /** Whether any sample is named `name` with labels that include `labels`. */
  has(name: string, labels?: Readonly<Record<string, string>>): boolean;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;

function unescapeLabel(value: string): string {
  return value.replace(/\\(.)/g, (_, c: string) => (c === "n" ? "\n" : c));
}

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let at = 0;
  for (let m = LABEL.exec(text); m; m = LABEL.exec(text)) {
    labels[m[1]!] = unescapeLabel(m[2]!);
    at = LABEL.lastIndex;
  }
  if (at !== text.length) throw new Error(`bad labels in ${JSON.stringify(line)}`);
  return labels;
}

/** Reads `text`; throws on a line that is neither a comment nor a sample. */
export function parsePrometheus(text: string): Scrape {
  const types = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const type = /^# TYPE (\S+) (\S+)$/.exec(line);
      if (type) types.set(type[1]!, type[2]!);
      continue;
    }
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`not a sample: ${JSON.stringify(line)}`);
    const name = m[1]!;
    const family = types.has(name) ? name : name.replace(/_(bucket|sum|count)$/, "");
    if (!types.has(family)) throw new Error(`sample ${name} has no TYPE line`);
    samples.push({ name, family, labels: parseLabels(m[2] ?? "", line), value: Number(m[3]) });
  }
  const matching = (name: string, labels: Readonly<Record<string, string>>): Sample[] =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  return {
    types,
    samples,
    value: (name, labels = {}) => matching(name, labels).reduce((sum, s) => sum + s.value, 0),
    has: (name, labels = {}) => matching(name, labels).length > 0,
  };
}
