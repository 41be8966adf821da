// How the page writes numbers and times. Pure functions (the unit tests import them in Node).

/** A duration: "850 ms", "0.25 ms", "12.5 s", "1 min", "3.2 min", "1.5 h". */
export function formatMs(ms: number): string {
  if (ms < 1_000) return `${trim(ms)} ms`;
  const s = ms / 1_000;
  if (s < 60) return `${trim(s)} s`;
  const min = s / 60;
  if (min < 120) return `${trim(min)} min`;
  return `${trim(min / 60)} h`;
}

/** A wall-clock time of this browser's day, "14:03:07". */
export function formatTime(atMs: number): string {
  return new Date(atMs).toLocaleTimeString(undefined, { hour12: false });
}

/** A count with thousands separated: "1,250". */
export function formatCount(n: number): string {
  return n.toLocaleString("en-US");
}

/** At most three significant digits, no trailing zeros: 12.5, 0.25, 850, 1200. */
export function trim(n: number): string {
  if (n === 0) return "0";
  const digits = Math.abs(n) >= 100 ? 0 : Math.abs(n) >= 10 ? 1 : Math.abs(n) >= 1 ? 2 : 3;
  return String(Number(n.toFixed(digits)));
}
