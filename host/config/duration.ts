// Interval schedules ("500ms", "5s", "1m", "2h"). Anything else is left for the caller to
// read as a cron expression, so this parser is deliberately narrow: no fractions, no
// compound forms like "1h30m", no spaces.

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const;

const INTERVAL = /^([0-9]+)(ms|s|m|h)$/;

/**
 * Reads an interval of the form `<integer><unit>` (unit `ms`, `s`, `m` or `h`) as milliseconds.
 *
 * @returns the interval in ms, or `undefined` when `text` is not of that form, is zero, or is
 *   too large to be counted exactly in ms.
 */
export function parseDuration(text: string): number | undefined {
  const match = INTERVAL.exec(text);
  if (!match) return undefined;
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  return Number.isSafeInteger(ms) && ms > 0 ? ms : undefined;
}
