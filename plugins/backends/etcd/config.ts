// `[locking.etcd]`: every field declared once; the host's config reader, the defaults and the
// README's config reference come from this schema.
import { completeDefaultsOf, field, table, tlsFields, tlsProblem, type TlsConfig } from "../../../kit/index.js";

/**
 * `[locking.etcd]`. The TLS fields (kit/tls.ts) apply to every member; https:// endpoints turn
 * TLS on. Absent in a config built in code means off / empty.
 */
export interface EtcdConfig extends Partial<TlsConfig> {
  /** Client URLs of the cluster's members (http:// or https://, all the same); the client fails over in order. */
  readonly endpoints: readonly string[];
  /** Empty: no authentication. */
  readonly username: string;
  /** Never logged. */
  readonly password: string;
  /** Prepended to every key this backend writes. */
  readonly keyPrefix: string;
  /** Longest the host's start and health checks wait for a member to answer. */
  readonly dialTimeoutMs: number;
  /** Longest a lock call waits on etcd before it fails with BACKEND_UNAVAILABLE. */
  readonly commandTimeoutMs: number;
  /**
   * How far each lease is kept ahead of the locks it carries: a lock of a host that died lasts at
   * most its TTL plus this, rounded up to whole seconds (etcd's leases count whole seconds). The
   * host renews its leases every half of it.
   */
  readonly leaseMarginMs: number;
  /**
   * Fences are etcd revisions times this (a power of two, 1 to 1024); above 1 the mutex can be
   * delegated (`[locking.delegation]`), a grant reserving up to this many fences. A property of
   * the key prefix: stored in etcd by the first host, and a host with another value refuses to start.
   */
  readonly fenceScale: number;
}

/** The schema of `[locking.etcd]`. */
export const etcdConfigSchema = table<EtcdConfig>({
  doc: "the etcd backend (etcd v3 over gRPC)",
  fields: {
    endpoints: field.stringList({
      default: ["http://127.0.0.1:2379"],
      doc: "client URLs of the members, http:// or https:// (all alike); tried in order",
      check: (list) => {
        if (list.length === 0) return "must name at least one endpoint";
        for (const e of list) {
          let url: URL;
          try {
            url = new URL(e);
          } catch {
            return `has "${e}", which is not a URL (e.g. "http://127.0.0.1:2379")`;
          }
          if (url.protocol !== "http:" && url.protocol !== "https:") return `has "${e}": the scheme must be http or https`;
          if (url.port === "") return `has "${e}" without a port (etcd's is usually 2379)`;
        }
        const tls = new Set(list.map((e) => e.startsWith("https:")));
        return tls.size > 1 ? "mixes http:// and https:// endpoints" : undefined;
      },
    }),
    username: field.string({ default: "", doc: "etcd user (empty: no authentication)" }),
    password: field.secret({ default: "", doc: "the user's password; never logged" }),
    keyPrefix: field.string({ default: "lockhost/", nonEmpty: true, doc: "prepended to every key" }),
    dialTimeoutMs: field.int({ default: 5_000, min: 1, max: 600_000, unit: "ms", doc: "longest the start and health checks wait for a member" }),
    commandTimeoutMs: field.int({ default: 2_000, min: 1, max: 600_000, unit: "ms", doc: "longest a lock call waits on etcd before BACKEND_UNAVAILABLE" }),
    leaseMarginMs: field.int({
      default: 2_000,
      min: 200,
      max: 600_000,
      unit: "ms",
      doc: "how far leases are kept ahead of their locks: a dead host's lock lasts at most TTL + this, in whole seconds",
    }),
    fenceScale: field.int({
      default: 1,
      min: 1,
      max: 1024,
      doc: "fences are revisions times this (a power of two); above 1 the mutex can be delegated (blocks of up to this many fences); one value per key prefix",
      check: (n) => ((n & (n - 1)) === 0 ? undefined : `must be a power of two, got ${n}`),
    }),
    ...tlsFields("https:// endpoints"),
  },
  check: (c) => {
    if (c.tls === true && !etcdTlsOn(c)) return { key: "endpoints", problem: "are http://, but tls = true: write them as https://" };
    return tlsProblem(c, etcdTlsOn(c), "https:// endpoints");
  },
});

/** Whether the members are reached over TLS: https:// endpoints (all alike). */
export function etcdTlsOn(c: Pick<EtcdConfig, "endpoints">): boolean {
  return c.endpoints.some((e) => e.startsWith("https:"));
}

/** `[locking.etcd]` as a config that leaves it out gets it: every field at its default. */
export const etcdDefaults: Readonly<EtcdConfig> = completeDefaultsOf(etcdConfigSchema);

declare module "../../../kit/descriptor.js" {
  interface BackendConfigMap {
    etcd: EtcdConfig;
  }
}
