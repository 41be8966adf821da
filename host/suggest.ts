// "Did you mean": the known name a mistyped one most likely meant, for config keys and for a
// plugin's exports alike, so every such hint follows one rule.

/**
 * The name of `known` closest to `name`, if any is close enough to be a likely typo: compared
 * without case or separators ("memoryLimitMib" finds "memory_limit_mib", "tick_count"
 * "tickCount"), a dropped suffix counting as one edit, and at most max(2, a quarter of the
 * candidate's length) edits away (Levenshtein).
 */
export function nearest(name: string, known: Iterable<string>): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[_-]/g, "");
  const n = norm(name);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const c = norm(candidate);
    // A dropped suffix ("memory_limit" for "memory_limit_mib") is as likely as a typo.
    const d = n.length >= 3 && c.startsWith(n) ? 1 : editDistance(n, c);
    if (d <= Math.max(2, Math.floor(c.length / 4)) && d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

/** `did you mean "<nearest>"? ` (to open a parenthesis of hints), or "" when nothing is close. */
export function didYouMean(name: string, known: Iterable<string>): string {
  const guess = nearest(name, known);
  return guess === undefined ? "" : `did you mean "${guess}"? `;
}

/** Levenshtein distance, one row at a time. */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
    }
    prev = row;
  }
  return prev[b.length] as number;
}
