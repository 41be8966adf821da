// The validated, frozen configuration of a host. Produced from TOML by loadConfig/parseConfig;
// embedders and tests may also build one in code and pass it through resolveConfig.

/** Backends an operator can name. */
export type BackendKind = "memory" | "redis" | "pg";

/** How a plugin's guest runs. */
export type Isolation = "worker" | "inline";

/** How a schedule coordinates across the nodes of a cluster. */
export type LockingHint = "node_local" | "require_global" | "prefer_global";

/** The levels of the host's logger, least to most severe; "silent" logs nothing. */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

/** `[locking.redis]` */
export interface RedisConfig {
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

/** `[locking.pg]` */
export interface PgConfig {
  /** May carry a password; never logged. */
  readonly url: string;
  /** Dedicated session connections that hold the advisory locks (many locks each). */
  readonly sessions: number;
  /**
   * The fence table, created on first use (`name` or `schema.name`), with its unlogged
   * holders table `<name>_holders` beside it.
   */
  readonly table: string;
  /** Longest a lock call waits on PostgreSQL (connecting included) before BACKEND_UNAVAILABLE. */
  readonly commandTimeoutMs: number;
}

/** `[locking.keepalive]`: how the host's renewal manager keeps keepalive leases alive. */
export interface KeepaliveSettings {
  /** Renew once this fraction of the TTL has passed (0 < ratio < 1; default 0.5). */
  readonly renewAtRatio: number;
  /** Retries of a renewal that failed on I/O, inside the safety margin (default 3). */
  readonly maxRetries: number;
  /**
   * A renewal not confirmed this fraction of the TTL before the lease would end makes the
   * lease lost (0 <= ratio < 1 - renewAtRatio; default 0.1).
   */
  readonly safetyMarginRatio: number;
  /** Renewals due within this many ms of each other go to the backend as one batch (default 20). */
  readonly batchWindowMs: number;
}

/** `[locking.waiting]`: how waiting acquisitions fall back to polling. */
export interface WaitingSettings {
  /** Longest time between two tries of a waiter that heard no release (jittered ±20%; default 1000). */
  readonly pollIntervalMs: number;
}

/** `[locking]` */
export interface LockingConfig {
  readonly backend: BackendKind;
  readonly redis?: RedisConfig;
  readonly pg?: PgConfig;
  /** Absent means the defaults (a config read by the loader always has it). */
  readonly keepalive?: KeepaliveSettings;
  /** Absent means the defaults (a config read by the loader always has it). */
  readonly waiting?: WaitingSettings;
}

/** Where the admin listener listens. */
export interface ListenAddress {
  /** Default "127.0.0.1": loopback only. */
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
}

/** `[admin]`: the optional admin HTTP listener (status, metrics, force-release). */
export interface AdminSettings {
  readonly listen: ListenAddress;
  /**
   * Bearer token that force-release requires; absent: force-release through HTTP is refused.
   * Never logged.
   */
  readonly token?: string;
}

/** One `[[plugins]]` entry. */
export interface PluginConfig {
  /** Lowercase letters, digits, '-' and '_'; namespaces the plugin's keys. */
  readonly name: string;
  /** Absolute path of the .wasm (relative paths in TOML resolve against the config file's folder). */
  readonly wasm: string;
  readonly isolation: Isolation;
  /** The cap of the guest's WebAssembly.Memory. */
  readonly memoryLimitMib: number;
  /** A call running longer is stopped and the guest restarted. */
  readonly callTimeoutMs: number;
  /** Global keys the plugin may use; `*` matches any run of characters. */
  readonly globalKeys: readonly string[];
}

/** When a schedule fires. */
export type ScheduleSpec =
  | { readonly kind: "interval"; readonly everyMs: number; readonly text: string }
  | { readonly kind: "cron"; readonly expression: string };

/** One `[[scheduled]]` entry. */
export interface ScheduledConfig {
  /** Unique per config; the cluster-wide lock of a schedule is keyed on it. Default "{plugin}.{export}". */
  readonly id: string;
  readonly plugin: string;
  readonly export: string;
  readonly schedule: ScheduleSpec;
  readonly hint: LockingHint;
  /** TTL of the schedule's lock. */
  readonly ttlMs: number;
  /** Renew the schedule's lock while the job runs (so a job may outlast the TTL). Default false. */
  readonly keepalive: boolean;
}

/** `[host]` */
export interface HostSettings {
  /** This node's name, recorded as the holder of its locks. Default: the machine's hostname. */
  readonly node: string;
  /** On shutdown, how long in-flight calls may take before their guests are stopped. */
  readonly shutdownTimeoutMs: number;
  readonly logLevel: LogLevel;
}

/** A whole, validated lockhost configuration. */
export interface LockhostConfig {
  /** The file it was read from, if any (for messages). */
  readonly source?: string;
  readonly host: HostSettings;
  readonly locking: LockingConfig;
  readonly plugins: readonly PluginConfig[];
  readonly scheduled: readonly ScheduledConfig[];
  /** The admin listener; absent: none is started. */
  readonly admin?: AdminSettings;
}

// What resolveConfig accepts: the shapes above with every defaulted field optional. Kept here,
// next to the types they mirror, so a field added to one is not missed in the other.

/** A `[[plugins]]` entry built in code: the fields of PluginConfig, defaults optional. */
export interface PluginInput {
  readonly name: string;
  /** Relative paths resolve against ConfigInput.baseDir. */
  readonly wasm: string;
  readonly isolation?: Isolation;
  readonly memoryLimitMib?: number;
  readonly callTimeoutMs?: number;
  readonly globalKeys?: readonly string[];
}

/** A `[[scheduled]]` entry built in code: the fields of ScheduledConfig, defaults optional. */
export interface ScheduledInput {
  readonly id?: string;
  readonly plugin: string;
  readonly export: string;
  /** The TOML form ("5s", "0 * * * *") or an already parsed ScheduleSpec. */
  readonly schedule: string | ScheduleSpec;
  readonly hint?: LockingHint;
  readonly ttlMs?: number;
  readonly keepalive?: boolean;
}

/** A config built in code for resolveConfig. A LockhostConfig is itself a valid ConfigInput. */
export interface ConfigInput {
  /** Names the config in messages, and is kept as LockhostConfig.source. */
  readonly source?: string;
  /** Where relative wasm paths resolve from; default: the process's working directory. */
  readonly baseDir?: string;
  readonly host?: Partial<HostSettings>;
  readonly locking?: {
    readonly backend?: BackendKind;
    readonly redis?: Partial<RedisConfig>;
    readonly pg?: Partial<PgConfig>;
    readonly keepalive?: Partial<KeepaliveSettings>;
    readonly waiting?: Partial<WaitingSettings>;
  };
  readonly plugins?: readonly PluginInput[];
  readonly scheduled?: readonly ScheduledInput[];
  readonly admin?: { readonly listen?: Partial<ListenAddress> | string; readonly token?: string };
}
