// How driver and server errors become LockhostErrors: which ones end a session, which ones no
// retry cures (permanent), and messages that say what failed where, without ever carrying the
// connection password. Also how the backend's connections say an outage in the log (OutageLog).
import pg from "pg";
import type { Logger } from "pino";
import { LockhostError, TLS_REFUSED_PATTERN, tlsRefusal, type TlsFiles } from "../../../kit/index.js";

/** What an error message may say about the server, fixed per backend. */
export interface ErrorContext {
  /** The connection URL with its secrets masked, named in messages. */
  readonly target: string;
  /** commandTimeoutMs, named when a call ran out of time. */
  readonly commandTimeoutMs: number;
  /** Removes secrets from any text before it leaves the backend. */
  readonly scrub: (text: string) => string;
  /** Whether connections use TLS (a refused handshake is then told as such). */
  readonly tls?: boolean;
  /** The TLS files, when the fields set them (for messages). */
  readonly tlsFiles?: TlsFiles | undefined;
}

/** The error of any call on a closed backend. */
export const closedError = (): LockhostError => new LockhostError("CLOSED", "the pg backend is closed");

/**
 * Errors that retrying cannot cure: SQLSTATE 28P01/28000 (credentials or pg_hba refused) and
 * 3D000 (no such database), answers of the server itself. A host name that does not resolve is
 * not among them: it may resolve soon (a Kubernetes service not up yet).
 */
export const PG_PERMANENT = new RegExp(
  `SQLSTATE (28P01|28000|3D000)|password authentication failed|no pg_hba\\.conf entry|database "[^"]*" does not exist|${TLS_REFUSED_PATTERN.source}`,
  "i",
);

/** Whether `err` is an error the server sent (as opposed to the socket or the driver). */
export function isServerError(err: unknown): err is pg.DatabaseError {
  return err instanceof pg.DatabaseError;
}

/**
 * Whether `err` leaves the connection unusable: anything that is not a plain statement error
 * (socket errors, read timeouts, "not queryable", FATAL/PANIC, admin shutdown, connection
 * exceptions). When unsure the answer is yes: dropping a session only costs its locks, while
 * using a broken one could leave a lock nobody tracks.
 */
export function endsSession(err: unknown): boolean {
  if (!isServerError(err)) return true;
  const code = err.code ?? "";
  return err.severity === "FATAL" || err.severity === "PANIC" || code.startsWith("08") || code.startsWith("57P");
}

/** The LockhostError (BACKEND_UNAVAILABLE) for a failed `what` ("acquire", "connect", ...). */
export function backendError(err: unknown, what: string, ctx: ErrorContext): LockhostError {
  if (err instanceof LockhostError) return err;
  // A privilege the role lacks stays lacking however often the call is made.
  const refused = isServerError(err) && err.code === INSUFFICIENT_PRIVILEGE;
  return new LockhostError("BACKEND_UNAVAILABLE", ctx.scrub(describe(err, what, ctx)), refused ? { details: { permanent: 1 } } : undefined);
}

/** SQLSTATE insufficient_privilege: "permission denied for table ...", "... for schema ...". */
export const INSUFFICIENT_PRIVILEGE = "42501";

/** Where the docs list the grants, for messages about a missing one. */
export const GRANTS_DOC = "docs/backends.md#least-privilege-grants";

function describe(err: unknown, what: string, ctx: ErrorContext): string {
  const where = `PostgreSQL at ${ctx.target}`;
  if (isServerError(err)) {
    switch (err.code) {
      case "53200":
        return (
          `${where} ran out of lock table space during ${what} (SQLSTATE 53200, "${err.message}"): ` +
          `advisory locks share the server's lock table, which holds max_locks_per_transaction × ` +
          `(max_connections + max_prepared_transactions) locks; raise max_locks_per_transaction ` +
          `(a server restart is needed) or hold fewer locks at once`
        );
      case INSUFFICIENT_PRIVILEGE:
        return `${where}: ${what} failed: the role lacks a privilege: ${err.message} (SQLSTATE 42501; ${GRANTS_DOC} lists the grants)`;
      case "57014":
        return `${where} cancelled ${what} at its statement timeout (commandTimeoutMs ${ctx.commandTimeoutMs} ms): ${err.message}`;
      default:
        return `${where}: ${what} failed: ${err.message} (SQLSTATE ${err.code ?? "unknown"})`;
    }
  }
  const refused = ctx.tls ? tlsRefusal(err, ctx.tlsFiles, "[locking.pg]") : undefined;
  if (refused) return `${where}: ${refused}`;
  const message = err instanceof Error ? err.message : String(err);
  if (message === "Query read timeout") {
    return `${where} did not answer ${what} within commandTimeoutMs (${ctx.commandTimeoutMs} ms); the session was closed`;
  }
  if (/timeout/i.test(message)) {
    return `${where} did not answer ${what} within commandTimeoutMs (${ctx.commandTimeoutMs} ms): ${message}`;
  }
  return `${where} is unreachable (${what}): ${message}`;
}

// What the pg backend's connections say about an outage, said once for all of them: a frozen or
// stopped server fails every session and the LISTEN connection, each in its own way (a connect
// timeout, a statement timeout, the session ended with its locks), and each used to warn. The
// first failure of an outage is the warning; the others of it go to debug (a session's lost
// locks to info: each lock's loss is also the lock service's own line); the first connection
// back says so at info. A warning is repeated at most every REPEAT_MS while the outage lasts.

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
