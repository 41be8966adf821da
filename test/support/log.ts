// A pino logger whose lines the test can read back.
import { Writable } from "node:stream";
import { pino, type Logger } from "pino";

/** One parsed log line. */
export type LogLine = Record<string, unknown> & { level: number; msg: string };

/** A logger at debug level that keeps every line in memory. */
export function captureLogger(): { logger: Logger; lines: LogLine[]; messages: () => string[] } {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) if (line) lines.push(JSON.parse(line) as LogLine);
      done();
    },
  });
  return { logger: pino({ level: "debug" }, sink), lines, messages: () => lines.map((l) => l.msg) };
}

/** What the guest traced, from a captured log: its "guest: " lines without that prefix. */
export function guestTraces(log: { messages: () => string[] }): string[] {
  return log
    .messages()
    .filter((m) => m.startsWith("guest: "))
    .map((m) => m.slice(7));
}

/** A logger that writes nothing, for tests that do not read what is logged. */
export const silent: Logger = pino({ level: "silent" });
