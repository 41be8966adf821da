// A test guest's log: a pino logger whose lines are kept, parsed, in order, so a test reads what
// the guest logged (and what the host logged about it) as data.
import { pino, type Logger } from "pino";

/** One line of a test guest's log. */
export interface GuestLogLine {
  /** Its pino level's name. */
  readonly level: "trace" | "debug" | "info" | "warn" | "error" | "fatal";
  /**
   * The message. A line the guest wrote (AssemblyScript's trace, the SDKs' log calls, WASI
   * stdout and stderr) without the host's "guest: " prefix.
   */
  readonly msg: string;
  /** Whether the guest wrote it; false for what the host logged about the guest (a failed host function, a restart, a lost lock). */
  readonly guest: boolean;
  /** The line's other fields, as pino wrote them (plugin, instance, code, err...). */
  readonly fields: Readonly<Record<string, unknown>>;
}

/** The prefix the host puts before a line the guest wrote (host/runtime/guest-log.ts). */
const GUEST_PREFIX = "guest: ";

/** A logger at debug level and the lines it has written, parsed. */
export function keptLog(): { readonly logger: Logger; readonly lines: GuestLogLine[] } {
  const lines: GuestLogLine[] = [];
  // pino writes each line to this object synchronously: a line is there once its call returned.
  const sink = {
    write(text: string): void {
      for (const json of text.split("\n")) if (json) lines.push(lineOf(JSON.parse(json) as Record<string, unknown>));
    },
  };
  return { logger: pino({ level: "debug", base: null, timestamp: false }, sink), lines };
}

function lineOf(raw: Record<string, unknown>): GuestLogLine {
  const { level, msg, ...fields } = raw;
  const text = typeof msg === "string" ? msg : "";
  const guest = text.startsWith(GUEST_PREFIX);
  return Object.freeze({
    level: (pino.levels.labels[level as number] ?? "info") as GuestLogLine["level"],
    msg: guest ? text.slice(GUEST_PREFIX.length) : text,
    guest,
    fields: Object.freeze(fields),
  });
}
