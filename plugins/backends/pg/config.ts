// `[locking.pg]`: every field declared once; the host's config reader, the defaults and the
// README's config reference come from this schema. Also its translation to the node-postgres
// settings every connection shares, TLS included (pgConnection).
import type pg from "pg";
import {
  completeDefaultsOf,
  field,
  readTlsFiles,
  table,
  tlsFields,
  tlsOptionsOf,
  tlsProblem,
  type TableProblem,
  type TlsConfig,
  type TlsFiles,
} from "../../../kit/index.js";

/**
 * `[locking.pg]`. The TLS fields (kit/tls.ts) apply to every connection; absent in a config
 * built in code means off / empty.
 */
export interface PgConfig extends Partial<TlsConfig> {
  /** May carry a password; never logged. */
  readonly url: string;
  /** Dedicated session connections that hold the advisory locks (many locks each). */
  readonly sessions: number;
  /**
   * The fence table, created on first use (`name` or `schema.name`), with its unlogged
   * holders table `<name>_holders` beside it, and, once a queue kind (read/write lock, semaphore,
   * fair mutex) is used, the `<name>_shared_*` tables and the `<name>_shared_acquire` function.
   */
  readonly table: string;
  /** Longest a lock call waits on PostgreSQL (connecting included) before BACKEND_UNAVAILABLE. */
  readonly commandTimeoutMs: number;
}

/** An unquoted PostgreSQL identifier, optionally schema-qualified; interpolated into SQL, so kept strict. */
const PG_TABLE = /^[a-z_][a-z0-9_]{0,62}(\.[a-z_][a-z0-9_]{0,62})?$/;

/** The schema of `[locking.pg]`. */
export const pgConfigSchema = table<PgConfig>({
  doc: "the PostgreSQL backend (node-postgres)",
  fields: {
    url: field.url({
      schemes: ["postgres", "postgresql"],
      default: "postgres://postgres@127.0.0.1:5432/test",
      doc: "postgres:// or postgresql://; a password in it is never logged",
    }),
    sessions: field.int({ default: 4, min: 1, max: 64, doc: "session connections that hold the advisory locks" }),
    table: field.string({
      default: "lockhost_locks",
      doc:
        'fence table ("name" or "schema.name") + <table>_holders; created on first use (the queue kinds add <table>_shared_* tables and a ' +
        "function on their first use)",
      check: (v) => (PG_TABLE.test(v) ? undefined : `must be a lowercase SQL identifier, optionally schema-qualified (${PG_TABLE})`),
    }),
    commandTimeoutMs: field.int({
      default: 2000,
      min: 1,
      max: 600_000,
      unit: "ms",
      doc: "longest a lock call waits on PostgreSQL before BACKEND_UNAVAILABLE",
    }),
    ...tlsFields("sslmode=require, verify-ca or verify-full in the url"),
  },
  check: (c) => urlSslProblem(c) ?? tlsProblem(c, pgTlsOn(c), "sslmode=verify-full in url"),
});

/** The url's query parameters node-postgres (pg-connection-string) reads for TLS. */
const SSL_PARAMS = new Set(["ssl", "sslmode", "sslcert", "sslkey", "sslrootcert", "uselibpqcompat", "sslnegotiation"]);
/** sslmode values that mean TLS is on and verified (as node-postgres 8 reads them, see docs/backends.md). */
const SSL_ON = new Set(["prefer", "require", "verify-ca", "verify-full"]);

/** The url's TLS parameters, by name (their last value); empty when it has none or does not parse. */
export function urlSslParams(url: string): Map<string, string> {
  const out = new Map<string, string>();
  const q = url.indexOf("?");
  if (q < 0) return out;
  for (const part of url
    .slice(q + 1)
    .split("#")[0]!
    .split("&")) {
    const eq = part.indexOf("=");
    let name: string;
    let value: string;
    try {
      name = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
      value = eq < 0 ? "" : decodeURIComponent(part.slice(eq + 1).replace(/\+/g, " "));
    } catch {
      continue;
    }
    if (SSL_PARAMS.has(name)) out.set(name, value);
  }
  return out;
}

/** Whether the TLS fields are in use (then they, not the url's parameters, configure TLS). */
export function pgTlsFields(c: Partial<TlsConfig>): boolean {
  return c.tls === true || !!c.caFile || !!c.certFile || !!c.keyFile || !!c.servername;
}

/** Whether connections use TLS: `tls = true`, or the url asks for it (sslmode other than disable, ssl=true). */
export function pgTlsOn(c: Pick<PgConfig, "url" | "tls">): boolean {
  if (c.tls === true) return true;
  const p = urlSslParams(c.url);
  const mode = p.get("sslmode");
  return (mode !== undefined && mode !== "disable") || p.get("ssl") === "true" || p.get("ssl") === "1";
}

/**
 * With the TLS fields in use, the url may still say sslmode=prefer|require|verify-ca|verify-full
 * or ssl=true (TLS on, verified: removed before node-postgres reads the url, which would
 * otherwise replace the files with its own settings), but nothing that contradicts them or names
 * a file a second time.
 */
function urlSslProblem(c: PgConfig): TableProblem | undefined {
  if (!pgTlsFields(c)) return undefined;
  for (const [name, value] of urlSslParams(c.url)) {
    if (name === "sslmode" && SSL_ON.has(value)) continue;
    if (name === "ssl" && (value === "true" || value === "1")) continue;
    const instead = name === "sslrootcert" ? "ca_file" : name === "sslcert" ? "cert_file" : name === "sslkey" ? "key_file" : undefined;
    const why = instead
      ? `give the file as ${instead} only`
      : `it contradicts or changes the TLS fields (with tls / ca_file / cert_file / key_file / servername set, the server's certificate is always verified)`;
    return { key: "url", problem: `has ${name}=${value}: ${why}` };
  }
  return undefined;
}

/** `url` without its TLS parameters (the TLS fields say it all), the rest as written. */
export function withoutSslParams(url: string): string {
  const q = url.indexOf("?");
  if (q < 0) return url;
  const hash = url.indexOf("#", q);
  const query = url.slice(q + 1, hash < 0 ? undefined : hash);
  const kept = query.split("&").filter((part) => {
    const name = part.split("=")[0]!;
    try {
      return !SSL_PARAMS.has(decodeURIComponent(name));
    } catch {
      return true;
    }
  });
  return url.slice(0, q) + (kept.length > 0 ? `?${kept.join("&")}` : "") + (hash < 0 ? "" : url.slice(hash));
}

/**
 * The node-postgres settings of every connection of a backend (its sessions', its listener's,
 * its DDL's), and the TLS files they use when the fields set them. TLS from the fields: files
 * read once, here; the url's own TLS parameters (only those that agree, above) are removed,
 * since node-postgres would let them replace these settings.
 */
export function pgConnection(config: PgConfig): { readonly connection: pg.ClientConfig; readonly tlsFiles: TlsFiles | undefined } {
  const tlsFiles = pgTlsFields(config) ? readTlsFiles("[locking.pg]", config) : undefined;
  const connection = {
    connectionString: tlsFiles ? withoutSslParams(config.url) : config.url,
    ...(tlsFiles && { ssl: tlsOptionsOf(tlsFiles) }),
    connectionTimeoutMillis: config.commandTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
  };
  return { connection, tlsFiles };
}

/** `[locking.pg]` as a config that leaves it out gets it: every field at its default. */
export const pgDefaults: Readonly<PgConfig> = completeDefaultsOf(pgConfigSchema);

declare module "../../../kit/descriptor.js" {
  interface BackendConfigMap {
    pg: PgConfig;
  }
}
