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
//
// A Redis Cluster client (cluster = true) keeps one connection per node; the states below are
// those of the client as a whole: up once it has read the slot layout from a node, down while
// no node answers. ioredis drops a failed node's connection and opens a new one on the next
// call for one of its slots (a call then waits for that attempt, at most commandTimeoutMs;
// connect.ts says why the cluster client's own queue stays on for that).
import type { ConnectionOptions } from "node:tls";
import type { Logger } from "pino";
import { redisTlsOn, type RedisConfig } from "./config.js";
import { LockhostError, maskUrl, readTlsFiles, type Scrubber, scrubberFor, tlsOptionsOf, tlsRefusal, type TlsConfig, type TlsFiles } from "../../../kit/index.js";
import { createClient, type LockClient } from "./connect.js";
import { backendError, unreachableMessage, type ErrorContext } from "./errors.js";
import { warnIfEvictingFences } from "./policy.js";

/** The server's refusal of SELECT for a database number it does not have. */
const NO_SUCH_DATABASE = /DB index is out of range|invalid DB index/i;

/** What a call's error says of the client while Redis is down (a refusal for good says otherwise: index.ts ping). */
export const RECONNECTING = "reconnecting in the background";
/**
 * While Redis stays unreachable, it is said again (at warn) at most this often, whatever the
 * errors look like meanwhile: a frozen server fails each reconnect attempt in turn with a
 * connect timeout, a socket timeout and a command timeout, and each was one more line.
 */
export const REPEAT_LOG_MS = 5 * 60_000;

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

/** Owns the ioredis client of one RedisBackend: one server's, or a cluster's. */
export class RedisConnection {
  /** The client, with the lock scripts registered. */
  readonly redis: LockClient;
  /** The server's URL (a cluster's: its seed's) with its password masked: the only form that is logged or quoted. */
  readonly url: string;
  /** The TLS options of every connection (the subscriber's too) when [locking.redis] sets any; files read once, here. */
  readonly tls: ConnectionOptions | undefined;
  readonly #tlsFiles: TlsFiles | undefined;
  /** How log lines name what they are about. */
  readonly #kind: "redis" | "redis cluster";
  /** `${kind} at ${url}`: how messages name the server. */
  readonly #server: string;
  readonly #cluster: boolean;
  readonly #scrub: Scrubber;
  readonly #log: Logger;
  readonly #timeoutMs: number;
  readonly #keyPrefix: string | undefined;
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
  /**
   * Set when the server refused the URL's database (SELECT failed: a number past its
   * `databases`): every call fails with it, for good. ioredis goes on to 'ready' all the same,
   * and its commands would land in database 0.
   */
  #refused: LockhostError | undefined;
  #closed?: Promise<void>;

  /**
   * Starts connecting in the background; never throws for an unreachable server.
   * @throws LockhostError CONFIG_INVALID for a URL ioredis cannot parse, or (cluster) one that
   *   cannot seed a cluster, or a TLS file that cannot be read.
   */
  constructor(config: Pick<RedisConfig, "url" | "commandTimeoutMs" | "cluster"> & Partial<TlsConfig> & { readonly keyPrefix?: string }, log: Logger) {
    this.#scrub = scrubberFor(config.url);
    this.url = this.#scrub(maskUrl(config.url));
    this.#tlsFiles = redisTlsOn(config) ? readTlsFiles("[locking.redis]", config) : undefined;
    this.tls = this.#tlsFiles && tlsOptionsOf(this.#tlsFiles);
    this.#cluster = config.cluster === true;
    this.#kind = this.#cluster ? "redis cluster" : "redis";
    this.#server = `${this.#kind} at ${this.url}`;
    this.#log = log;
    this.#timeoutMs = config.commandTimeoutMs;
    this.#keyPrefix = config.keyPrefix;
    let client: LockClient;
    try {
      client = createClient(config, this.url, this.tls);
    } catch (err) {
      if (err instanceof LockhostError) throw err;
      // Only a malformed URL gets here; its message may quote the URL.
      throw new LockhostError("CONFIG_INVALID", `[locking.redis] url ${this.url} is not a valid Redis URL: ${this.#scrub(String(err))}`);
    }
    this.redis = client;
    client.on("error", this.#onError);
    client.on("ready", this.#onReady);
    client.on("close", this.#onClose);
    client.on("end", this.#onEnd);
    // A cluster client reports its nodes' connection errors apart from its own 'error'.
    if (this.#cluster) client.on("node error", this.#onNodeError);
    client.connect().catch(() => undefined); // failures arrive as 'error' and 'close' events
  }

  /**
   * Runs `run` now when connected; while a connection attempt whose outcome is not known yet
   * is running, runs it once connected, the wait and `run` together bounded by
   * commandTimeoutMs. Rejects at once with BACKEND_UNAVAILABLE when Redis is known to be
   * down, or the connection closed.
   */
  whenReady<T>(run: () => Promise<T>): Promise<T> {
    if (this.#state === "closed") return Promise.reject(this.#closedError());
    if (this.#refused !== undefined) return Promise.reject(this.#refused);
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
    this.#log.info({ url: this.url }, `${this.#kind} connection closed`);
  }

  #context(): ErrorContext {
    return {
      url: this.url, server: this.#server, cluster: this.#cluster,
      commandTimeoutMs: this.#timeoutMs, scrub: this.#scrub, lastError: this.#lastError, keyPrefix: this.#keyPrefix,
    };
  }

  #downError(): LockhostError {
    const downMs = this.#downSince ? Date.now() - this.#downSince : 0;
    const since = downMs > 0 ? ` for ${downMs} ms` : "";
    const next = this.#ended ? "the client stopped and will not reconnect" : RECONNECTING;
    return new LockhostError("BACKEND_UNAVAILABLE", unreachableMessage(this.#context(), `has been unreachable${since}; ${next}`));
  }

  /**
   * The server refused this config for good: said once, as an error; the client stops (nothing
   * to reconnect for: its commands would go to another database) and every call fails with `err`.
   */
  #refuse(err: LockhostError): void {
    if (this.#refused !== undefined || this.#state === "closed") return;
    this.#refused = err;
    this.#state = "down";
    this.#log.error({ url: this.url }, err.message);
    this.#failWaiters(err);
    this.redis.disconnect();
  }

  /** The error of a URL whose database the server does not have (`message`: the server's refusal). */
  #noSuchDatabase(message: string): LockhostError {
    const db = (this.redis as { options?: { db?: number } }).options?.db;
    return new LockhostError(
      "BACKEND_UNAVAILABLE",
      `[locking.redis] url ${this.url} names database ${db ?? "?"}, which ${this.#server} does not have (${message}); ` +
        "name one below the server's `databases` setting (0 to 15 by default), or leave the path out for database 0",
      { details: { permanent: 1, database: db ?? -1 } },
    );
  }

  #closedError(): LockhostError {
    return new LockhostError("BACKEND_UNAVAILABLE", `the ${this.#kind} backend (${this.url}) is closed`);
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
        ? `cannot connect to ${this.#server}${reason}; lock calls fail until it answers, reconnecting in the background`
        : `${this.#kind} connection to ${this.url} lost${reason}; lock calls fail until it is back, reconnecting in the background`,
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
    // Refused for good (#refuse): 'ready' came after the refusal, and the client is stopped.
    if (this.#refused !== undefined) return;
    const downMs = Date.now() - this.#downSince;
    if (this.#state === "starting") {
      this.#log.info({ url: this.url }, `${this.#kind} connected at ${this.url}`);
    } else if (this.#state === "reconnecting") {
      this.#log.info({ url: this.url, downMs }, `${this.#kind} connection to ${this.url} dropped and was re-established in ${downMs} ms`);
    } else {
      this.#log.info({ url: this.url, downMs }, `${this.#kind} connection to ${this.url} recovered after ${downMs} ms`);
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

  /** The message of a client error, a refused TLS handshake told as such. */
  #describe(err: unknown): string {
    const tlsOn = this.#tlsFiles !== undefined || /^rediss:/i.test(this.url);
    return errorText(err, (e) => (tlsOn ? tlsRefusal(e, this.#tlsFiles, "[locking.redis]") : undefined));
  }

  /** Every dropped connection and every failed attempt ends in 'close'. */
  readonly #onClose = (): void => {
    if (this.#refused !== undefined) return;
    switch (this.#state) {
      case "up":
        // Maybe only an idle connection the server closed: wait for the first reconnect attempt to tell.
        this.#state = "reconnecting";
        this.#downSince = Date.now();
        this.#log.debug({ url: this.url, error: this.#lastError }, `${this.#kind} connection to ${this.url} dropped; reconnecting`);
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
   * ioredis repeats an error on every reconnect attempt: while down, each is logged at debug,
   * and at warn at most every REPEAT_LOG_MS (the outage was said when it began). Before that,
   * an error comes just ahead of the 'close' it causes, and is logged with the state change,
   * as its reason.
   */
  readonly #onError = (err: unknown): void => {
    const message = this.#scrub(this.#describe(err));
    this.#lastError = message;
    if (NO_SUCH_DATABASE.test(message)) return this.#refuse(this.#noSuchDatabase(message));
    if (this.#refused !== undefined) return;
    if (this.#state !== "down") {
      if (this.#state !== "closed") this.#log.debug({ url: this.url, error: message }, `${this.#kind} client error: ${message}`);
      return;
    }
    const now = Date.now();
    if (now - this.#lastLoggedAt < REPEAT_LOG_MS) {
      if (message !== this.#lastLogged) this.#log.debug({ url: this.url, error: message, downMs: now - this.#downSince }, `${this.#server} still unreachable: ${message}`);
      this.#lastLogged = message;
      return;
    }
    this.#lastLogged = message;
    this.#lastLoggedAt = now;
    this.#log.warn({ url: this.url, error: message, downMs: now - this.#downSince }, `${this.#server} still unreachable: ${message}`);
  };

  /** The reconnect strategy never gives up, so 'end' without close() means ioredis could not even open a socket. */
  readonly #onEnd = (): void => {
    if (this.#state === "closed" || this.#refused !== undefined) return;
    this.#state = "down";
    this.#ended = true;
    this.#downSince ||= Date.now();
    this.#log.error({ url: this.url, error: this.#lastError }, `${this.#kind} client for ${this.url} stopped and will not reconnect`);
    this.#failWaiters(this.#downError());
  };

  /**
   * A cluster node's connection failed. The cluster as a whole may still be up (other nodes
   * serve their slots), so this changes no state; it is what a failed call will quote.
   */
  readonly #onNodeError = (err: unknown, node: unknown): void => {
    if (this.#state === "closed") return;
    const message = this.#scrub(`${String(node)}: ${this.#describe(err)}`);
    this.#lastError = message;
    this.#log.debug({ url: this.url, node: String(node), error: message }, `redis cluster node error: ${message}`);
  };
}

/**
 * An error's message. A cluster client that reached none of its nodes says only "Failed to
 * refresh slots cache."; the reason is on its `lastNodeError` (ioredis does not export the
 * class), and is told here in operator terms. A refused TLS handshake says who refused and
 * which option to check (`tls`: how, see kit/tls.ts).
 */
function errorText(err: unknown, tls: (err: unknown) => string | undefined): string {
  if (!(err instanceof Error)) return String(err);
  const last: unknown = (err as { lastNodeError?: unknown }).lastNodeError;
  if (last instanceof Error) return `no node answered CLUSTER SLOTS (last node error: ${tls(last) ?? last.message})`;
  return tls(err) ?? err.message;
}

function noop(): void {}
