// Turns what ioredis rejects with into one LockhostError (BACKEND_UNAVAILABLE) whose message
// says what happened in operator terms, names the server (or cluster) by its redacted URL, and
// says when the command may have been applied anyway (so nobody assumes a timed-out acquire
// did nothing). A refusal by the server's ACL says which permission the Redis user lacks, as far
// as Redis tells (docs/backends.md, "Least-privilege grants"), and is permanent: retrying the
// same call as the same user cannot help.
import { LockhostError, TLS_REFUSED_PATTERN } from "../../../kit/index.js";
import type { Scrubber } from "../../../kit/index.js";

/**
 * Connection errors that retrying cannot cure: credentials refused, a TLS handshake refused (a
 * certificate does not fix itself); not a name that does not resolve yet. (index.ts ping marks them permanent.)
 */
export const REDIS_PERMANENT = new RegExp(`WRONGPASS|NOAUTH|invalid password|invalid username|NOPERM|${TLS_REFUSED_PATTERN.source}`, "i");

/** What a message needs to know about the connection. */
export interface ErrorContext {
  /** The server's URL (a cluster's: its seed's), password masked. */
  readonly url: string;
  /** How messages name it: `redis at <url>`, or `redis cluster at <url>`. */
  readonly server: string;
  /** A cluster client: one call may use a connection to any of its nodes. */
  readonly cluster: boolean;
  readonly commandTimeoutMs: number;
  readonly scrub: Scrubber;
  /** The last connection error seen (already scrubbed), if any. */
  readonly lastError: string | undefined;
  /** `[locking.redis] key_prefix`, which the user's key and channel patterns must cover. */
  readonly keyPrefix?: string | undefined;
}

/** Where the docs list the ACL rules, for messages that name a missing one. */
const GRANTS = "docs/backends.md#least-privilege-grants";

/**
 * The LockhostError for a failed Redis call. The raw error is not kept as `cause`: ioredis
 * hangs the AUTH/HELLO arguments (the password) on `command.args` of some errors, and a cause
 * travels wherever the error is logged or serialized.
 */
export function backendError(err: unknown, ctx: ErrorContext): LockhostError {
  if (err instanceof LockhostError) return err;
  const name = err instanceof Error ? err.name : "";
  const message = ctx.scrub(err instanceof Error ? err.message : String(err));
  const lacks = name === "ReplyError" ? missingPermission(message, ctx.keyPrefix) : undefined;
  if (lacks) {
    return new LockhostError("BACKEND_UNAVAILABLE", `${ctx.server} refused the command: the Redis user lacks ${lacks} (${GRANTS}): ${message}`, {
      details: { permanent: 1 },
    });
  }
  return new LockhostError("BACKEND_UNAVAILABLE", describe(name, message, ctx));
}

/**
 * What the user lacks, when `message` is an ACL refusal: a command Redis names (`NOPERM ... the
 * 'evalsha' command`), the key or channel pattern, or (a script's command, which Redis 7.0 does
 * not name) "a command one of lockhost's scripts runs". Undefined for any other error.
 */
function missingPermission(message: string, keyPrefix = "lockhost:"): string | undefined {
  const command = /no permissions to run the '([^']+)' command/i.exec(message)?.[1];
  if (command) return `the '${command}' command (+${command.replace(" ", "|")})`;
  if (/no permissions to access one of the keys|can't access at least one of the keys|no permissions to access a key/i.test(message)) {
    return `access to lockhost's keys (its key pattern must cover the key prefix: ~${keyPrefix}*)`;
  }
  if (/no permissions to access one of the channels|can't publish to the channel|no permissions to access a channel/i.test(message)) {
    return `access to lockhost's channels (its channel pattern must cover the key prefix: &${keyPrefix}*)`;
  }
  if (/can't run this command or subcommand|NOPERM|ACL failure/i.test(message)) return "a command one of lockhost's scripts runs (Redis does not say which)";
  return undefined;
}

/** The message of an unreachable server, with the last connection error when there is one. */
export function unreachableMessage(ctx: ErrorContext, what: string): string {
  return `${ctx.server} ${what}${ctx.lastError ? ` (last error: ${ctx.lastError})` : ""}`;
}

function describe(name: string, message: string, ctx: ErrorContext): string {
  if (message === "Command timed out") {
    return `${ctx.server} did not answer within ${ctx.commandTimeoutMs} ms (commandTimeoutMs); the command may still have been applied`;
  }
  if (name === "MaxRetriesPerRequestError" || message.startsWith("Command aborted")) {
    return `the connection to ${ctx.server} was lost with the command in flight; it may or may not have been applied`;
  }
  if (message === "Connection is closed." && ctx.cluster) {
    // A cluster client says this both for a node it could not reach and for a connection that
    // dropped under a sent command: it cannot tell which, so neither can the caller.
    return (
      `the connection to a node of ${ctx.server} closed; the command may or may not have been ` +
      `applied${ctx.lastError ? ` (last error: ${ctx.lastError})` : ""}`
    );
  }
  if (message.startsWith("Stream isn't writeable") || message === "Connection is closed.") {
    return unreachableMessage(ctx, "is not connected");
  }
  if (name === "ReplyError") return `${ctx.server} refused the command: ${message}`;
  return `${ctx.server}: ${message}`;
}
