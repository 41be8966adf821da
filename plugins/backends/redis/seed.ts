// Reads `[locking.redis] url` as the seed of a Redis Cluster. ioredis's Cluster takes a list of
// host:port pairs plus connection options for every node, not a URL, so the URL is split
// here: host and port name the first node to ask for the cluster's layout, and the
// credentials and TLS it carries apply to every node the client then finds.
import { LockhostError } from "../../../kit/index.js";

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
    username = fromUserinfo ? decodeURIComponent(parsed.username) : parsed.searchParams.get("username") ?? "";
    password = fromUserinfo ? decodeURIComponent(parsed.password) : parsed.searchParams.get("password") ?? "";
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
