// A guest's log line (trace, log.write) into the host's logger at its level, tagged by the
// plugin's child logger. Shared by both runtimes, so a line reads the same from either.
import type { Logger } from "pino";
import { LOG_DEBUG, LOG_ERROR, LOG_INFO, LOG_WARN } from "../../abi/status.js";

const METHOD = { [LOG_DEBUG]: "debug", [LOG_INFO]: "info", [LOG_WARN]: "warn", [LOG_ERROR]: "error" } as const;

/** Logs `message` at the ABI level `level` (info when it is none of them). */
export function logLine(log: Logger, level: number, message: string): void {
  log[METHOD[level as keyof typeof METHOD] ?? "info"](`guest: ${message}`);
}

/** The LOG_* level a pino level name stands for: the least severe level a plugin logs. */
export function abiLogLevel(level: string): number {
  switch (level) {
    case "trace":
    case "debug":
      return LOG_DEBUG;
    case "info":
      return LOG_INFO;
    case "warn":
      return LOG_WARN;
    case "error":
      return LOG_ERROR;
    default:
      // fatal, silent: no guest line is logged.
      return LOG_ERROR + 1;
  }
}
