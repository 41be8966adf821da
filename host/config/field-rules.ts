// Small pieces the config declarations share (tables.ts, and the capability rows that declare
// their own [[plugins]] keys): a list's first bad entry, and the members of a union as a list.
import type { LogLevel } from "./types.js";

/** The levels of the host's logger, as `log_level` keys take them. */
export const LOG_LEVELS = keysOf<LogLevel>({ trace: 1, debug: 1, info: 1, warn: 1, error: 1, fatal: 1, silent: 1 });

/**
 * The first problem of any entry of `list` (each problem names its entry), without the key's
 * name in front when the problem starts with it: the reader names the key already.
 */
export function firstProblem(list: readonly string[], problem: (entry: string, index: number) => string | undefined, key?: string): string | undefined {
  for (const [i, entry] of list.entries()) {
    const p = problem(entry, i);
    if (p !== undefined) return key !== undefined && p.startsWith(`${key} `) ? p.slice(key.length + 1) : p;
  }
  return undefined;
}

/**
 * The members of a union, from a record keyed by them: adding a member to the union fails to
 * compile at the record until the loader accepts it.
 */
export function keysOf<T extends string>(record: Record<T, 1>): readonly T[] {
  return Object.keys(record) as T[];
}
