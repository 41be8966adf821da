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

/**
 * A logger on `to` (stdout; stderr for a command whose stdout is its result) in `format`
 * (default: pretty on a terminal, JSON otherwise).
 */
export async function cliLogger(
  level: LogLevel,
  format: LogFormat | undefined,
  base: Record<string, unknown>,
  to: "stdout" | "stderr" = "stdout",
): Promise<Logger> {
  const stream = to === "stdout" ? process.stdout : process.stderr;
  const fd = to === "stdout" ? 1 : 2;
  const chosen = format ?? (stream.isTTY ? "pretty" : "json");
  if (chosen === "json") return to === "stdout" ? pino({ level, base }) : pino({ level, base }, pino.destination({ dest: fd, sync: true }));
  // pino-pretty is a well-kept formatter (levels, colours, times); loaded lazily, only for a terminal.
  const { default: pretty } = await import("pino-pretty");
  return pino(
    { level, base },
    pretty({ destination: fd, colorize: stream.isTTY === true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", singleLine: true, sync: true }),
  );
}
