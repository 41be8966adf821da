// Axes a reader can trust: ticks at round numbers (1, 2 or 5 times a power of ten) from zero to
// at least the largest value, each labelled with its unit, so a plot of waits of up to 1 ms reads
// "0 ms, 0.5 ms, 1 ms", never "1 / 1 / 0". Pure functions (the unit tests import them in Node).
import { formatCount } from "./format.js";

/** A value axis: its top, and its ticks from 0 up to the top. */
export interface Axis {
  readonly max: number;
  readonly ticks: readonly number[];
}

/**
 * Ticks from 0 to the first round number at or above `max`, about `count` steps apart.
 * `integer`: values are counts, so steps are whole numbers (at least 1).
 */
export function niceAxis(max: number, options: { readonly count?: number; readonly integer?: boolean } = {}): Axis {
  const count = options.count ?? 4;
  const top = Number.isFinite(max) && max > 0 ? max : 1;
  let step = niceStep(top / count);
  if (options.integer === true) step = Math.max(1, Math.round(step));
  const steps = Math.max(1, Math.ceil(top / step - 1e-9));
  const ticks = Array.from({ length: steps + 1 }, (_, i) => round(i * step));
  return { max: ticks[ticks.length - 1]!, ticks };
}

/** The round step (1, 2 or 5 times a power of ten) at or above `raw`. */
export function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  return round(nice * power);
}

/** `n` without binary noise (0.30000000000000004 -> 0.3). */
function round(n: number): number {
  return Number(n.toPrecision(12));
}

/** The time axis of the per-second plots: a tick per minute of the window, labelled from "-5 min" to "now". */
export function timeTicks(spanSeconds: number): readonly { readonly secondsAgo: number; readonly label: string }[] {
  const ticks: { secondsAgo: number; label: string }[] = [];
  for (let ago = spanSeconds; ago >= 0; ago -= 60) ticks.push({ secondsAgo: ago, label: ago === 0 ? "now" : `-${ago / 60} min` });
  return ticks;
}

/** An axis with its ticks' labels. */
export interface Scale {
  readonly axis: Axis;
  readonly labels: readonly string[];
}

/** Units a duration axis is labelled in, largest first, and the largest value from which each is used. */
const DURATION_UNITS: readonly (readonly [unit: string, ms: number, from: number])[] = [
  ["h", 3_600_000, 7_200_000],
  ["min", 60_000, 120_000],
  ["s", 1_000, 1_000],
  ["ms", 1, 0],
];

/**
 * A duration axis up to `maxMs`, in one unit chosen by it and round in that unit:
 * "0 s, 0.5 s, 1 s, 1.5 s", "0 min, 2 min, 4 min, 6 min", never "1 min, 1.67 min".
 */
export function durationScale(maxMs: number): Scale {
  const [unit, ms] = DURATION_UNITS.find(([, , from]) => maxMs >= from) ?? DURATION_UNITS[DURATION_UNITS.length - 1]!;
  const inUnit = niceAxis(maxMs / ms);
  return { axis: { max: inUnit.max * ms, ticks: inUnit.ticks.map((t) => t * ms) }, labels: inUnit.ticks.map((t) => `${t} ${unit}`) };
}

/** An axis of whole counts up to `max`, labelled with `suffix`: "0/s, 2/s, 4/s, 6/s". */
export function countScale(max: number, suffix = ""): Scale {
  const axis = niceAxis(max, { integer: true });
  return { axis, labels: axis.ticks.map((t) => `${formatCount(t)}${suffix}`) };
}
