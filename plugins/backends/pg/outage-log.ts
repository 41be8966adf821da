// What the pg backend's connections say about an outage, said once for all of them: a frozen or
// stopped server fails every session and the LISTEN connection, each in its own way (a connect
// timeout, a statement timeout, the session ended with its locks), and each used to warn. The
// first failure of an outage is the warning; the others of it go to debug (a session's lost
// locks to info: each lock's loss is also the lock service's own line); the first connection
// back says so at info. A warning is repeated at most every REPEAT_MS while the outage lasts.
import type { Logger } from "pino";

/** Longest an outage goes without its warning being said again. */
export const REPEAT_MS = 5 * 60_000;

/** One backend's connections' outage, as its log says it. */
export class OutageLog {
  /** performance.now() of the outage's last warning; undefined while every connection is fine. */
  #warnedAt: number | undefined;

  /** A connection failed: the outage's first failure (or one REPEAT_MS after its last warning) at warn, others at `quiet`. */
  down(log: Logger, fields: Record<string, unknown>, message: string, quiet: "info" | "debug" = "debug"): void {
    const now = performance.now();
    if (this.#warnedAt === undefined || now - this.#warnedAt >= REPEAT_MS) {
      this.#warnedAt = now;
      log.warn(fields, message);
    } else {
      log[quiet](fields, message);
    }
  }

  /** A connection is back: the first after an outage at info, others at debug. */
  up(log: Logger, fields: Record<string, unknown>, message: string): void {
    const was = this.#warnedAt !== undefined;
    this.#warnedAt = undefined;
    log[was ? "info" : "debug"](fields, message);
  }
}
