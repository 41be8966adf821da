// The backend's one Redis connection: how it fails fast, reconnects, logs and closes.
//
// A lock call must never wait on a dead server for long: the guest that made it is blocked
// until it returns. So there is no offline queue (a call while Redis is known to be down
// fails at once), no retry of a command whose connection died (maxRetriesPerRequest 0, no
// resend: a replayed acquire would find its own lock and report contention, leaking it), and
// every command has a timeout. The reconnect loop, on the other hand, never gives up, so the
// backend recovers by itself.
//
// While it is not yet known whether Redis is reachable, a call waits (at most
// commandTimeoutMs) instead of failing: right after start, before the first connection
// attempt has finished, and right after a connection drops, until the first reconnect attempt
// has finished. A host that locks at startup should not fail because the TCP handshake was
// still running, nor a call fail because the server closed an idle connection a moment ago.
// As soon as an attempt fails (or takes longer than commandTimeoutMs), calls fail at once.
import { Redis, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import type { RedisConfig } from "../../../host/config/types.js";
import { LockhostError } from "../../../host/errors.js";
import { backendError, unreachableMessage, type ErrorContext } from "./errors.js";
import { warnIfEvictingFences } from "./policy.js";
import { defineLockCommands, type LockCommands } from "./scripts.js";
import { scrubberFor, type Scrubber } from "./secrets.js";

/** First reconnect delay; it doubles per failed attempt up to RECONNECT_MAX_MS. */
const RECONNECT_MIN_MS = 50;
/**
 * Longest pause between reconnect attempts: how long after Redis is back the backend may
 * still fail calls. An attempt against a down server is one refused TCP connect, so a short
 * cap costs nothing; jitter keeps a fleet of hosts from reconnecting in lockstep.
 */
const RECONNECT_MAX_MS = 1_000;
/**
 * Floor of the TCP connect timeout. It does not delay calls (they wait at most
 * commandTimeoutMs), so it can be generous enough for a slow network; it bounds how long one
 * attempt at an unresponsive address lasts before the next.
 */
const CONNECT_TIMEOUT_MIN_MS = 5_000;
/** While Redis stays unreachable, the same error is logged again at most this often. */
const REPEAT_LOG_MS = 60_000;

/** Exponential backoff with jitter, never giving up (a number keeps ioredis reconnecting). */
function reconnectDelay(attempt: number): number {
  const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt - 1, 16));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** After failover a former primary answers READONLY: reconnecting finds the new primary behind the same address. */
const reconnectOnReadonly = (err: Error): boolean => err.message.startsWith("READONLY");

/**
 * starting: first attempt running; up: ready; reconnecting: dropped, first reconnect attempt
 * running; down: known unreachable; closed: close() called. Calls wait in starting and
 * reconnecting, run in up, fail at once in down and closed.
 */
type State = "starting" | "up" | "reconnecting" | "down" | "closed";

/** A call waiting for the connection. */
interface Waiter {
  ready(): void;
  fail(err: LockhostError): void;
}

/** Owns the ioredis client of one RedisBackend. */
export class RedisConnection {
  /** The client, with the lock scripts registered. */
  readonly redis: Redis & LockCommands;
  /** The server's URL with its password masked: the only form that is logged or quoted. */
  readonly url: string;
  readonly #scrub: Scrubber;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #waiters = new Set<Waiter>();
  #state: State = "starting";
  /** The last connection error (scrubbed); cleared when the connection is ready. */
  #lastError: string | undefined;
  /** When the connection was last lost (or first failed); 0 while up. */
  #downSince = 0;
  #lastLogged: string | undefined;
  #lastLoggedAt = 0;
  #checkedPolicy = false;
  /** Set when ioredis stopped for good (it could not even open a socket): no reconnect will come. */
  #ended = false;
  #closed?: Promise<void>;

  /**
   * Starts connecting in the background; never throws for an unreachable server.
   * @throws LockhostError CONFIG_INVALID for a URL ioredis cannot parse.
   */
  constructor(config: Pick<RedisConfig, "url" | "commandTimeoutMs">, log: Logger) {
    this.#scrub = scrubberFor(config.url);
    this.url = this.#scrub(config.url);
    this.#log = log;
    this.#timeoutMs = config.commandTimeoutMs;
    const options: RedisOptions = {
      lazyConnect: true, // listeners first: an 'error' without one would go to console.error
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      commandTimeout: config.commandTimeoutMs,
      // A server that stops answering without closing the socket (paused, partitioned) is
      // dropped after one command timeout, so later calls fail at once instead of each waiting.
      socketTimeout: config.commandTimeoutMs,
      connectTimeout: Math.max(CONNECT_TIMEOUT_MIN_MS, config.commandTimeoutMs),
      retryStrategy: reconnectDelay,
      reconnectOnError: reconnectOnReadonly,
      connectionName: "lockhost",
    };
    let redis: Redis;
    try {
      redis = new Redis(config.url, options);
    } catch (err) {
      // Only a malformed URL gets here; its message may quote the URL.
      throw new LockhostError("CONFIG_INVALID", `[locking.redis] url ${this.url} is not a valid Redis URL: ${this.#scrub(String(err))}`);
    }
    this.redis = defineLockCommands(redis);
    redis.on("error", this.#onError);
    redis.on("ready", this.#onReady);
    redis.on("close", this.#onClose);
    redis.on("end", this.#onEnd);
    redis.connect().catch(() => undefined); // failures arrive as 'error' and 'close' events
  }

  /**
   * Runs `run` now when connected; while a connection attempt whose outcome is not known yet
   * is running, runs it once connected, the wait and `run` together bounded by
   * commandTimeoutMs. Rejects at once with BACKEND_UNAVAILABLE when Redis is known to be
   * down, or the connection closed.
   */
  whenReady<T>(run: () => Promise<T>): Promise<T> {
    if (this.#state === "closed") return Promise.reject(this.#closedError());
    if (this.redis.status === "ready") return run();
    // "up" but not ready: the connection just dropped and its 'close' event is on its way.
    if (this.#state === "down") return Promise.reject(this.#downError());
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        // Still waiting for the connection: so is everyone else, and the attempt is too slow.
        if (this.#waiters.delete(waiter)) this.#attemptTooSlow();
        reject(new LockhostError("BACKEND_UNAVAILABLE", unreachableMessage(this.#context(), this.#tooSlow())));
      }, this.#timeoutMs);
      const waiter: Waiter = {
        ready: () => run().then(resolve, reject).finally(() => clearTimeout(timer)),
        fail: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      this.#waiters.add(waiter);
    });
  }

  /** The LockhostError (BACKEND_UNAVAILABLE) for what a command rejected with. */
  toError(err: unknown): LockhostError {
    return backendError(err, this.#context());
  }

  /** Quits cleanly when connected (bounded by commandTimeoutMs), else drops the socket and the reconnect loop. */
  close(): Promise<void> {
    this.#closed ??= this.#close();
    return this.#closed;
  }

  async #close(): Promise<void> {
    const wasUp = this.redis.status === "ready";
    this.#state = "closed";
    this.#failWaiters(this.#closedError());
    if (wasUp) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<void>((r) => (timer = setTimeout(r, this.#timeoutMs)));
      await Promise.race([this.redis.quit().then(noop, noop), timedOut]);
      clearTimeout(timer);
    }
    // After QUIT this only tidies up; without it, it ends the socket and cancels any reconnect.
    this.redis.disconnect();
    this.#log.info({ url: this.url }, "redis connection closed");
  }

  #context(): ErrorContext {
    return { url: this.url, commandTimeoutMs: this.#timeoutMs, scrub: this.#scrub, lastError: this.#lastError };
  }

  #downError(): LockhostError {
    const downMs = this.#downSince ? Date.now() - this.#downSince : 0;
    const since = downMs > 0 ? ` for ${downMs} ms` : "";
    const next = this.#ended ? "the client stopped and will not reconnect" : "reconnecting in the background";
    return new LockhostError("BACKEND_UNAVAILABLE", unreachableMessage(this.#context(), `has been unreachable${since}; ${next}`));
  }

  #closedError(): LockhostError {
    return new LockhostError("BACKEND_UNAVAILABLE", `the redis backend (${this.url}) is closed`);
  }

  #tooSlow(): string {
    return `did not answer within ${this.#timeoutMs} ms (commandTimeoutMs, connecting included)`;
  }

  /** Now known: Redis is unreachable. Logs it once and fails every waiting call. */
  #goDown(reason: string): void {
    const first = this.#state === "starting";
    this.#state = "down";
    this.#downSince ||= Date.now();
    this.#lastLogged = this.#lastError;
    this.#lastLoggedAt = Date.now();
    this.#log.warn(
      { url: this.url, error: this.#lastError },
      first
        ? `cannot connect to redis at ${this.url}${reason}; lock calls fail until it answers, reconnecting in the background`
        : `redis connection to ${this.url} lost${reason}; lock calls fail until it is back, reconnecting in the background`,
    );
    this.#failWaiters(this.#downError());
  }

  /** A connection attempt outlasted commandTimeoutMs: treat Redis as down rather than make every call wait. */
  #attemptTooSlow(): void {
    if (this.#state === "starting" || this.#state === "reconnecting") this.#goDown(` (${this.#tooSlow()})`);
  }

  #failWaiters(err: LockhostError): void {
    for (const waiter of this.#waiters) waiter.fail(err);
    this.#waiters.clear();
  }

  readonly #onReady = (): void => {
    if (this.#state === "closed") return;
    const downMs = Date.now() - this.#downSince;
    if (this.#state === "starting") {
      this.#log.info({ url: this.url }, `redis connected at ${this.url}`);
    } else if (this.#state === "reconnecting") {
      this.#log.info({ url: this.url, downMs }, `redis connection to ${this.url} dropped and was re-established in ${downMs} ms`);
    } else {
      this.#log.info({ url: this.url, downMs }, `redis connection to ${this.url} recovered after ${downMs} ms`);
    }
    this.#state = "up";
    this.#downSince = 0;
    this.#lastError = undefined;
    this.#lastLogged = undefined;
    const waiters = [...this.#waiters];
    this.#waiters.clear();
    for (const waiter of waiters) waiter.ready();
    if (!this.#checkedPolicy) {
      this.#checkedPolicy = true;
      void warnIfEvictingFences(this.redis, this.#log, this.url);
    }
  };

  /** Every dropped connection and every failed attempt ends in 'close'. */
  readonly #onClose = (): void => {
    switch (this.#state) {
      case "up":
        // Maybe only an idle connection the server closed: wait for the first reconnect attempt to tell.
        this.#state = "reconnecting";
        this.#downSince = Date.now();
        this.#log.debug({ url: this.url, error: this.#lastError }, `redis connection to ${this.url} dropped; reconnecting`);
        return;
      case "starting":
      case "reconnecting":
        this.#goDown("");
        return;
      default:
        return;
    }
  };

  /**
   * ioredis repeats an error on every reconnect attempt: while down, a new message is logged
   * at once and a repeated one at most every REPEAT_LOG_MS. Before that, an error comes just
   * ahead of the 'close' it causes, and is logged with the state change, as its reason.
   */
  readonly #onError = (err: unknown): void => {
    const message = this.#scrub(err instanceof Error ? err.message : String(err));
    this.#lastError = message;
    if (this.#state !== "down") {
      if (this.#state !== "closed") this.#log.debug({ url: this.url, error: message }, `redis client error: ${message}`);
      return;
    }
    const now = Date.now();
    if (message === this.#lastLogged && now - this.#lastLoggedAt < REPEAT_LOG_MS) return;
    this.#lastLogged = message;
    this.#lastLoggedAt = now;
    this.#log.warn({ url: this.url, error: message, downMs: now - this.#downSince }, `redis at ${this.url} still unreachable: ${message}`);
  };

  /** The reconnect strategy never gives up, so 'end' without close() means ioredis could not even open a socket. */
  readonly #onEnd = (): void => {
    if (this.#state === "closed") return;
    this.#state = "down";
    this.#ended = true;
    this.#downSince ||= Date.now();
    this.#log.error({ url: this.url, error: this.#lastError }, `redis client for ${this.url} stopped and will not reconnect`);
    this.#failWaiters(this.#downError());
  };
}

function noop(): void {}
