// Builds the backend's ioredis client: one `Redis` for a single server, or a `Cluster` client
// when `[locking.redis] cluster = true`. Both are tuned to the same rule (see client.ts): a lock
// call never waits on a dead server for long and a command whose connection died is never
// sent again, while the client keeps reconnecting by itself.
import type { ConnectionOptions } from "node:tls";
import { Cluster, Redis, type ClusterOptions, type RedisOptions } from "ioredis";
import type { RedisConfig } from "./config.js";
import { defineLockCommands, type LockCommands } from "./scripts.js";
import { clusterSeed } from "./seed.js";
import { defineQueueCommands, type QueueCommands } from "./queue-scripts.js";
import { watchStalls } from "./stall-watch.js";

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
 * (stall-watch.ts) that does the same with one timer.
 */
function connectionOptions(config: Pick<RedisConfig, "commandTimeoutMs">, tls: ConnectionOptions | undefined) {
  return {
    // TLS from [locking.redis] (its files read once at start, client.ts); undefined: plain TCP,
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
 * @param tls the TLS options of every connection, when TLS is on (client.ts tlsOf).
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

function noop(): void {}

/** One server's client: its commands time out through one watchdog (stall-watch.ts), not a timer each. */
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
 * A second client, for the release channels only (watcher.ts): a subscribed connection can
 * run nothing else, and the lock calls must not wait behind it. Unlike the lock client it
 * queues a SUBSCRIBE made while (re)connecting, since nothing blocks on it (a watch's `ready`
 * has its own deadline), and it does not re-subscribe by itself: the watcher re-subscribes
 * every channel on each reconnect, also those whose SUBSCRIBE failed while Redis was down,
 * which ioredis's autoResubscribe would forget. Not connected yet, like createClient's.
 */
export function createSubscriber(config: Pick<RedisConfig, "url" | "commandTimeoutMs" | "cluster">, shown: string, tls?: ConnectionOptions): Redis | Cluster {
  if (config.cluster) return guardSocketErrors(clusterClient(config, shown, tls));
  return guardSocketErrors(new Redis(config.url, {
    ...connectionOptions(config, tls),
    socketTimeout: undefined, // a subscriber waits for messages as long as it takes
    connectionName: "lockhost-watch",
    autoResubscribe: false,
    retryStrategy: reconnectDelay,
  }));
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
