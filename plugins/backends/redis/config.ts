// `[locking.redis]`: every field declared once; the host's config reader, the defaults and the
// README's config reference come from this schema. Also how the url seeds a Redis Cluster
// (clusterSeed): ioredis's Cluster takes a list of host:port pairs plus connection options for
// every node, not a URL, so the URL is split here: host and port name the first node to ask for
// the cluster's layout, and the credentials and TLS it carries apply to every node the client
// then finds.
import { completeDefaultsOf, field, LockhostError, table, tlsFields, tlsProblem, type TlsConfig } from "../../../kit/index.js";

/**
 * `[locking.redis]`. The TLS fields (kit/tls.ts) apply to the one server or to every node of a
 * cluster; absent in a config built in code means off / empty.
 */
export interface RedisConfig extends Partial<TlsConfig> {
  /** May carry a password; never logged. */
  readonly url: string;
  /** Prepended to every Redis key; never contains `{` or `}` (the hash tag is the lock name). */
  readonly keyPrefix: string;
  /**
   * Longest a lock call waits on Redis (connecting included) before it fails with
   * BACKEND_UNAVAILABLE; calls never queue while Redis is unreachable.
   */
  readonly commandTimeoutMs: number;
  /**
   * Whether a restarted node may take back at once a lock that an earlier process with the
   * same node name still holds, instead of waiting for its TTL. Safe only when every running
   * process has its own node name.
   */
  readonly reclaimOwnLocks: boolean;
  /**
   * Whether `url` is a seed node of a Redis Cluster rather than a single server: the client
   * learns the other nodes from it, and applies its user name, password and TLS (`rediss://`)
   * to every node. The database must be 0. Absent means false (a config read by the loader
   * always has it).
   */
  readonly cluster?: boolean;
}

/** The schema of `[locking.redis]`. */
export const redisConfigSchema = table<RedisConfig>({
  doc: "the Redis backend (ioredis)",
  fields: {
    url: field.url({
      schemes: ["redis", "rediss"],
      default: "redis://127.0.0.1:6379",
      doc: "redis:// or rediss://; a password in it is never logged",
    }),
    keyPrefix: field.string({
      default: "lockhost:",
      doc: 'prepended to every key; no "{" or "}"',
      // Redis Cluster hashes only the first {...} of a key: the backend puts the lock name
      // there, so a brace in the prefix would split a lock from its fence counter.
      check: (v) => (/[{}]/.test(v) ? 'must not contain "{" or "}"' : undefined),
    }),
    commandTimeoutMs: field.int({
      default: 2000,
      min: 1,
      max: 600_000,
      unit: "ms",
      doc: "longest a lock call waits on Redis before BACKEND_UNAVAILABLE",
    }),
    reclaimOwnLocks: field.bool({ default: false, doc: "a restarted node takes back its own stale locks at once" }),
    cluster: field.bool({ default: false, doc: "true: url is a seed node of a Redis Cluster" }),
    ...tlsFields("a rediss:// url"),
  },
  check: (c) => tlsProblem(c, redisTlsOn(c), "use a rediss:// url"),
});

/** Whether the backend connects over TLS: `tls = true` or a rediss:// url. */
export function redisTlsOn(c: Pick<RedisConfig, "url" | "tls">): boolean {
  return c.tls === true || /^rediss:/i.test(c.url);
}

/** `[locking.redis]` as a config that leaves it out gets it: every field at its default. */
export const redisDefaults: Readonly<RedisConfig> = completeDefaultsOf(redisConfigSchema);

/** What a Redis URL says about a cluster: where to start, and how to log in to every node. */
export interface ClusterSeed {
  readonly host: string;
  readonly port: number;
  /** Set when the URL has a user name (Redis 6 ACL user). */
  readonly username?: string;
  /** Set when the URL has a password (in the userinfo, or `?password=`). */
  readonly password?: string;
  /** `rediss://`: every node is reached over TLS. */
  readonly tls: boolean;
}

const DEFAULT_PORT = 6379;
/** Query parameters ioredis would also read from a single-node URL, and that mean the same on a cluster. */
const KNOWN_PARAMS = new Set(["username", "password", "db"]);

/**
 * Splits a `redis://` or `rediss://` URL into the seed node and its credentials.
 * @param shown the URL with its password masked, quoted in errors.
 * @throws LockhostError CONFIG_INVALID for a URL that does not parse, a database other than 0
 *   (a cluster has only database 0), or a query parameter the cluster client would not apply.
 */
export function clusterSeed(url: string, shown: string): ClusterSeed {
  const invalid = (why: string): LockhostError =>
    new LockhostError("CONFIG_INVALID", `[locking.redis] url ${shown} cannot seed a Redis Cluster (cluster = true): ${why}`);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw invalid("it is not a valid URL");
  }
  if (parsed.protocol !== "redis:" && parsed.protocol !== "rediss:") throw invalid("it must be a redis:// or rediss:// URL");
  if (!parsed.hostname) throw invalid("it names no host");
  for (const key of parsed.searchParams.keys()) {
    if (!KNOWN_PARAMS.has(key)) throw invalid(`the query parameter "${key}" is not supported in cluster mode`);
  }
  const db = parsed.pathname.length > 1 ? parsed.pathname.slice(1) : parsed.searchParams.get("db");
  if (db !== null && db !== "" && db !== "0") throw invalid(`it selects database ${db}, but a cluster has only database 0`);
  // As ioredis reads a single-node URL: the userinfo wins over the query parameters.
  const fromUserinfo = parsed.username !== "" || parsed.password !== "";
  let username: string;
  let password: string;
  try {
    username = fromUserinfo ? decodeURIComponent(parsed.username) : (parsed.searchParams.get("username") ?? "");
    password = fromUserinfo ? decodeURIComponent(parsed.password) : (parsed.searchParams.get("password") ?? "");
  } catch {
    throw invalid("its user name or password has a malformed %-escape");
  }
  return {
    // WHATWG keeps the brackets of an IPv6 literal; a socket address has none.
    host: parsed.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: parsed.port ? Number(parsed.port) : DEFAULT_PORT,
    ...(username && { username }),
    ...(password && { password }),
    tls: parsed.protocol === "rediss:",
  };
}

declare module "../../../kit/descriptor.js" {
  interface BackendConfigMap {
    redis: RedisConfig;
  }
}
