// The backend's Redis connections: how each client is built (createClient for the lock calls,
// createSubscriber for the release channels), and how the lock connection fails fast,
// reconnects, logs, keeps its commands from stalling, and closes (RedisConnection).
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
// clusterClient says why the cluster client's own queue stays on for that).
//
// The clients (createClient, below): one `Redis` for a single server, or a `Cluster` client
// when `[locking.redis] cluster = true`. Both are tuned to the same rule (above): a lock
// call never waits on a dead server for long and a command whose connection died is never
// sent again, while the client keeps reconnecting by itself.
//
// The stall watch (watchStalls): one timer per connection, in place of ioredis's commandTimeout
// and socketTimeout, which arm and clear a timer per command (and add a 'data' listener per
// reply): on the lock path that was ~4% of a try+release pair one at a time and ~7% of the
// throughput of 16 concurrent loops (bench part "redis"). Both rules stay as they were:
// - a command with no reply commandTimeoutMs after it was sent rejects with ioredis's own
//   "Command timed out" (errors.ts says it may have been applied), the connection kept;
// - a connection that received nothing for commandTimeoutMs while a command waited is
//   destroyed, so later calls fail at once and ioredis reconnects.
// One connection to one server answers in the order it was asked, so the commands waiting
// are the last ones sent, oldest first: their send times in a list, the time of the last
// reply, and one timer armed for the earliest of the two deadlines tell both. A cluster
// client's commands go to many connections; it keeps ioredis's per-command timers.
//
// On its first connection, a one-time look at the server's eviction policy (warnIfEvictingFences). Fence counters never expire, so only an
// allkeys-* policy can evict one; an evicted counter starts again at 1, and fences would no
// longer keep increasing: the one guarantee a fence exists for. Warn rather than refuse: the
// operator may not be able to change a managed server's policy, and exclusion still holds.
import type { ConnectionOptions } from "node:tls";
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { Logger } from "pino";
import { clusterSeed, redisTlsOn, type RedisConfig } from "./config.js";
import {
  LockhostError,
  maskUrl,
  readTlsFiles,
  type Scrubber,
  scrubberFor,
  tlsOptionsOf,
  tlsRefusal,
  type TlsConfig,
  type TlsFiles,
} from "../../../kit/index.js";
import { backendError, unreachableMessage, type ErrorContext } from "./errors.js";
import { defineLockCommands, type LockCommands } from "./mutex-lua.js";
import { defineQueueCommands, type QueueCommands } from "./queue-lua.js";

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
        ready: () =>
          run()
            .then(resolve, reject)
            .finally(() => clearTimeout(timer)),
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
      url: this.url,
      server: this.#server,
      cluster: this.#cluster,
      commandTimeoutMs: this.#timeoutMs,
      scrub: this.#scrub,
      lastError: this.#lastError,
      keyPrefix: this.#keyPrefix,
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
      if (message !== this.#lastLogged)
        this.#log.debug({ url: this.url, error: message, downMs: now - this.#downSince }, `${this.#server} still unreachable: ${message}`);
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

// The clients: how each connection is built and tuned.
/** The client with the lock scripts registered: a single server's or a cluster's. */
export type LockClient = (Redis | Cluster) & LockCommands & QueueCommands;

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
/**
 * Floor of the time a cluster client gives one node to answer CLUSTER SLOTS (on a fresh
 * connection: TCP, TLS, AUTH included). ioredis's default; a small commandTimeoutMs must not
 * make the cluster's layout unreadable over a slow link.
 */
const SLOTS_REFRESH_MIN_MS = 1_000;

/** Exponential backoff with jitter, never giving up (a number keeps ioredis reconnecting). */
function reconnectDelay(attempt: number): number {
  const ceiling = Math.min(RECONNECT_MAX_MS, RECONNECT_MIN_MS * 2 ** Math.min(attempt - 1, 16));
  return Math.round(ceiling / 2 + (Math.random() * ceiling) / 2);
}

/** After failover a former primary answers READONLY: reconnecting finds the new primary behind the same address. */
const reconnectOnReadonly = (err: Error): boolean => err.message.startsWith("READONLY");

/**
 * Options of every connection, whether to the one server or to each node of a cluster. The one
 * server's lock connection replaces commandTimeout and socketTimeout by a watchdog
 * (watchStalls, below) that does the same with one timer.
 */
function connectionOptions(config: Pick<RedisConfig, "commandTimeoutMs">, tls: ConnectionOptions | undefined) {
  return {
    // TLS from [locking.redis] (its files read once at start, RedisConnection); undefined: plain TCP,
    // unless the url is rediss:// (ioredis then uses TLS with the system's CAs).
    ...(tls && { tls }),
    lazyConnect: true, // listeners first: an 'error' without one would go to console.error
    maxRetriesPerRequest: 0,
    autoResendUnfulfilledCommands: false,
    commandTimeout: config.commandTimeoutMs,
    // A server that stops answering without closing the socket (paused, partitioned) is
    // dropped after one command timeout, so later calls fail at once instead of each waiting.
    socketTimeout: config.commandTimeoutMs,
    connectTimeout: Math.max(CONNECT_TIMEOUT_MIN_MS, config.commandTimeoutMs),
    connectionName: "lockhost",
  } satisfies RedisOptions;
}

/**
 * The client for `config`, not yet connected (call connect() once listeners are on).
 * @param shown the URL with its password masked, for errors.
 * @param tls the TLS options of every connection, when TLS is on (RedisConnection.tls).
 * @throws for a URL ioredis cannot parse; LockhostError CONFIG_INVALID for a URL that cannot
 *   seed a cluster.
 */
export function createClient(config: Pick<RedisConfig, "url" | "commandTimeoutMs" | "cluster">, shown: string, tls?: ConnectionOptions): LockClient {
  const client = config.cluster ? clusterClient(config, shown, tls) : singleClient(config, tls);
  return defineQueueCommands(defineLockCommands(guardSocketErrors(client)));
}

/**
 * ioredis listens to a socket's 'error' only once, but a TLS socket can emit two (a server that
 * refuses the client's certificate under TLS 1.3: the write fails with ECONNRESET, then the read
 * finds its alert), and an 'error' without a listener ends the process. Every socket of
 * `client` (of each node, on a cluster) gets a listener of its own as its connector makes it;
 * ioredis still hears the first error and reconnects as usual.
 */
function guardSocketErrors<C extends Redis | Cluster>(client: C): C {
  const guard = (redis: Redis): void => {
    const connector = (redis as unknown as { connector?: { connect?: (...args: unknown[]) => Promise<NodeJS.EventEmitter> } }).connector;
    const connect = connector?.connect?.bind(connector);
    if (!connector || !connect) return;
    connector.connect = async (...args) => {
      const stream = await connect(...args);
      stream.on("error", noop);
      return stream;
    };
  };
  if (client instanceof Cluster) client.on("+node", guard);
  else guard(client as Redis);
  return client;
}

/** One server's client: its commands time out through one watchdog (watchStalls), not a timer each. */
function singleClient(config: Pick<RedisConfig, "url" | "commandTimeoutMs">, tls: ConnectionOptions | undefined): Redis {
  const client = new Redis(config.url, {
    ...connectionOptions(config, tls),
    commandTimeout: undefined,
    socketTimeout: undefined,
    enableOfflineQueue: false,
    retryStrategy: reconnectDelay,
    reconnectOnError: reconnectOnReadonly,
  });
  watchStalls(client, config.commandTimeoutMs);
  return client;
}

/**
 * A second client, for the release channels only (watch.ts ReleaseWatcher): a subscribed connection can
 * run nothing else, and the lock calls must not wait behind it. Unlike the lock client it
 * queues a SUBSCRIBE made while (re)connecting, since nothing blocks on it (a watch's `ready`
 * has its own deadline), and it does not re-subscribe by itself: the watcher re-subscribes
 * every channel on each reconnect, also those whose SUBSCRIBE failed while Redis was down,
 * which ioredis's autoResubscribe would forget. Not connected yet, like createClient's.
 */
export function createSubscriber(config: Pick<RedisConfig, "url" | "commandTimeoutMs" | "cluster">, shown: string, tls?: ConnectionOptions): Redis | Cluster {
  if (config.cluster) return guardSocketErrors(clusterClient(config, shown, tls));
  return guardSocketErrors(
    new Redis(config.url, {
      ...connectionOptions(config, tls),
      socketTimeout: undefined, // a subscriber waits for messages as long as it takes
      connectionName: "lockhost-watch",
      autoResubscribe: false,
      retryStrategy: reconnectDelay,
    }),
  );
}

function clusterClient(config: Pick<RedisConfig, "url" | "commandTimeoutMs">, shown: string, tls: ConnectionOptions | undefined): Cluster {
  const seed = clusterSeed(config.url, shown);
  // rediss:// without TLS options (a client built in code): TLS with the system's CAs.
  const nodeTls = tls ?? (seed.tls ? {} : undefined);
  const options: ClusterOptions = {
    lazyConnect: true,
    // Unlike a single server, the cluster client's own queue must stay on: with it off, ioredis
    // rejects every command sent to a node whose connection is still opening, so the first
    // concurrent calls to each node fail. Nothing waits in it while the cluster is known down:
    // RedisConnection sends only while the client is ready and fails calls at once otherwise,
    // and every command sent to a node carries commandTimeoutMs from then on.
    enableOfflineQueue: true,
    clusterRetryStrategy: reconnectDelay,
    // ioredis resends a command whose node connection closed ("Connection is closed.") unless
    // this is 0. The command may have run: a resent acquire would find its own lock and report
    // contention, leaking it. MOVED, ASK and TRYAGAIN are still followed: a node that answers
    // with one of those has not run the command.
    retryDelayOnFailover: 0,
    // A cluster that says it is down stays down for seconds (a failover waits out
    // cluster-node-timeout): fail the call now, naming the reason, instead of at the timeout.
    retryDelayOnClusterDown: 0,
    slotsRefreshTimeout: Math.max(SLOTS_REFRESH_MIN_MS, config.commandTimeoutMs),
    // Over TLS the seed is reached by its name, not the address it resolves to, so the
    // certificate is checked against the name it was issued for.
    ...(nodeTls && { dnsLookup: keepHostname }),
    redisOptions: {
      ...connectionOptions(config, nodeTls),
      ...(seed.username !== undefined && { username: seed.username }),
      ...(seed.password !== undefined && { password: seed.password }),
    },
  };
  return new Cluster([{ host: seed.host, port: seed.port }], options);
}

/** A dnsLookup that resolves nothing: ioredis then connects to the host name itself. */
function keepHostname(hostname: string, callback: (err: null, address: string) => void): void {
  callback(null, hostname);
}

// The one server's stall watch (see the header): one timer per connection.
/**
 * Applies commandTimeout and socketTimeout, both `timeoutMs`, to `client` (a single server's
 * client, created without them) with one timer.
 */
export function watchStalls(client: Redis, timeoutMs: number): void {
  /** Send times of the commands written, oldest first; the last `commandQueue.length` wait for replies. */
  let sent: number[] = [];
  /** When the connection last received anything, or last went from idle to waiting. */
  let progressAt = 0;
  let timer: NodeJS.Timeout | undefined;

  const onData = (): void => {
    progressAt = performance.now();
  };
  // Each (re)connect makes a new socket.
  client.on("connect", () => client.stream.on("data", onData));

  const check = (): void => {
    timer = undefined;
    const waiting = client.commandQueue.length;
    // The answered ones are the oldest: drop them.
    if (sent.length > waiting) sent = sent.slice(sent.length - waiting);
    if (waiting === 0) return;
    // Timers fire on a whole-ms clock: within a ms of the limit counts as reached.
    const due = performance.now() - timeoutMs + 1;
    let expired = 0;
    while (expired < waiting && sent[expired]! <= due) expired++;
    // Nothing received for the whole timeout: the server (or the path to it) is silent.
    const silent = progressAt <= due;
    rejectFirst(client, silent ? waiting : expired);
    if (silent) {
      client.stream.destroy(new Error(`Socket timeout: nothing received in ${timeoutMs} ms`));
      sent = [];
      return;
    }
    arm(Math.min(progressAt, sent[expired] ?? Infinity) + timeoutMs - performance.now());
  };
  const arm = (ms: number): void => {
    timer = setTimeout(check, Math.max(1, Math.ceil(ms)));
    timer.unref();
  };

  const send = client.sendCommand.bind(client);
  client.sendCommand = (command, stream) => {
    const queue = client.commandQueue;
    const before = queue.length;
    const result = send(command, stream);
    // Only a command written to the socket waits for a reply (one refused at once does not).
    if (queue.length > before) {
      const now = performance.now();
      // Sent to an idle connection: the clock of silence starts now, not at the last reply.
      if (before === 0) progressAt = now;
      sent.push(now);
      if (timer === undefined) arm(timeoutMs);
    }
    return result;
  };
}

/** Rejects the first `count` commands queued on `client` with "Command timed out" (a command already settled ignores it). */
function rejectFirst(client: Redis, count: number): void {
  const queue = client.commandQueue;
  for (let i = 0; i < count; i++) queue.peekAt(i)?.command.reject(new Error("Command timed out"));
}

// The eviction-policy check, once per backend on its first connection (see the header).
/**
 * Logs a warning when the server may evict keys without a TTL; on a cluster, each primary is
 * asked (fence counters are spread over all of them, and each has its own config). Never throws.
 */
export async function warnIfEvictingFences(client: Redis | Cluster, log: Logger, url: string): Promise<void> {
  if (!(client instanceof Cluster)) return checkNode(client, log, url);
  await Promise.all(client.nodes("master").map((node) => checkNode(node, log, url, `${node.options.host}:${node.options.port}`)));
}

/** @param node a cluster node's host:port; absent for a single server. */
async function checkNode(redis: Redis, log: Logger, url: string, node?: string): Promise<void> {
  try {
    const info = await redis.info("memory");
    const policy = /^maxmemory_policy:(\S+)/m.exec(info)?.[1];
    if (policy?.startsWith("allkeys-")) {
      log.warn(
        { url, ...(node && { node }), maxmemoryPolicy: policy },
        `redis at ${node ?? url} uses maxmemory-policy ${policy}: under memory pressure it may evict fence counters, and fences would restart at 1; ` +
          `use noeviction or a volatile-* policy`,
      );
    }
  } catch {
    // INFO may be renamed or denied by an ACL; the check is advisory.
  }
}
