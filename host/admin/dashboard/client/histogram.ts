// Hold-time and wait-time histograms: durations counted in buckets whose edges grow by 1-2-5
// steps from 1 ms to 5 min, so waits of a millisecond and holds of minutes share one chart. Pure
// functions (the unit tests import them in Node).
import { formatMs } from "./format.js";
import type { DurationSample } from "./wire.js";

/** The buckets' upper edges in ms; a last bucket takes everything above the highest. */
export const EDGES_MS: readonly number[] = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 20_000, 60_000, 300_000];

/** The bucket of a duration: the first whose upper edge is above it. */
export function bucketOf(ms: number): number {
  let i = 0;
  while (i < EDGES_MS.length && ms >= EDGES_MS[i]!) i++;
  return i;
}

/** Counts per bucket of the samples that ended within the last `windowMs` before `nowMs`. */
export function histogram(samples: readonly DurationSample[], nowMs: number, windowMs: number): number[] {
  const counts = new Array<number>(EDGES_MS.length + 1).fill(0);
  for (const [atMs, ms] of samples) if (atMs > nowMs - windowMs) counts[bucketOf(ms)]!++;
  return counts;
}

/** A bucket's range as the chart's tooltip and the tests read it: "< 1 ms", "1 ms – 2 ms", "≥ 5 min". */
export function bucketLabel(i: number): string {
  if (i === 0) return `< ${formatMs(EDGES_MS[0]!)}`;
  if (i >= EDGES_MS.length) return `≥ ${formatMs(EDGES_MS[EDGES_MS.length - 1]!)}`;
  return `${formatMs(EDGES_MS[i - 1]!)} – ${formatMs(EDGES_MS[i]!)}`;
}

/** The x-axis ticks: bucket boundaries at powers of ten of the ms and at whole minutes, labelled with their unit. */
export function edgeTicks(): readonly { readonly edge: number; readonly label: string }[] {
  return EDGES_MS.flatMap((ms, i) => (Number.isInteger(Math.log10(ms)) || ms === 60_000 || ms === 300_000 ? [{ edge: i + 1, label: formatMs(ms) }] : []));
}
