// The CLI's logger: readable lines on a terminal (pino-pretty, loaded only then), JSON lines when
// the output is piped or --log-format json asks for it, so log shippers and `jq` get JSON and a
// person at a terminal gets text.
import { pino, type Logger } from "pino";
import { LockhostError } from "../../kit/errors.js";
import type { LogLevel } from "../config/types.js";

/** How log lines are written. */
export type LogFormat = "json" | "pretty";

/** --log-format, checked; undefined when not given. */
export function parseLogFormat(text: string | undefined): LogFormat | undefined {
  if (text === undefined) return undefined;
  if (text === "json" || text === "pretty") return text;
  throw new LockhostError("INVALID_ARGUMENT", `--log-format must be json or pretty, got "${text}"`);
}

/** A logger on stdout in `format` (default: pretty on a terminal, JSON otherwise). */
export async function cliLogger(level: LogLevel, format: LogFormat | undefined, base: Record<string, unknown>): Promise<Logger> {
  const chosen = format ?? (process.stdout.isTTY ? "pretty" : "json");
  if (chosen === "json") return pino({ level, base });
  // pino-pretty is a well-kept formatter (levels, colours, times); loaded lazily, only for a terminal.
  const { default: pretty } = await import("pino-pretty");
  return pino({ level, base }, pretty({ colorize: process.stdout.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", singleLine: true, sync: true }));
}
