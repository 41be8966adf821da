// `[locking.redis]`: every field declared once; the host's config reader, the defaults and the
// README's config reference come from this schema.
import { completeDefaultsOf, field, table, tlsFields, tlsProblem, type TlsConfig } from "../../../kit/index.js";

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

declare module "../../../kit/descriptor.js" {
  interface BackendConfigMap {
    redis: RedisConfig;
  }
}
