// The validated, frozen configuration of a host. Produced from TOML by loadConfig/parseConfig;
// embedders and tests may also build one in code and pass it through resolveConfig.
import type { Runtime } from "../../abi/ops.js";
import type { BackendConfigMap } from "../../kit/descriptor.js";
import type { KeepaliveSettings, WaitingSettings } from "../locking/options.js";
import type { HttpGrant } from "../runtime/capabilities/http/index.js";

export type { KeepaliveSettings, WaitingSettings };

/**
 * A backend an operator can name: a registered backend's name. The config checks it against
 * the registry; the type cannot know the backends a config's packages bring.
 */
export type BackendKind = string;

/**
 * How a plugin's guest should run, as the operator asks: `worker` (its own thread, a time limit
 * per call), `inline` (the host's thread, lock calls through JSPI; refused where JSPI is missing),
 * or `auto` (inline where JSPI exists and no time limit is set, else worker).
 */
export type Isolation = "worker" | "inline" | "auto";

/** How a plugin's guest does run: the runtime an Isolation resolved to at config load. */
export type GuestRuntime = Runtime;

/** How a schedule coordinates across the nodes of a cluster. */
export type LockingHint = "node_local" | "require_global" | "prefer_global" | "leader_only";

/** The levels of the host's logger, least to most severe; "silent" logs nothing. */
export type LogLevel = "trace" | "debug" | "info" | "warn" | "error" | "fatal" | "silent";

/**
 * Each backend's `[locking.<name>]` table, read by its own schema: typed for the backends whose
 * package adds itself to BackendConfigMap (redis, pg), `unknown` for the others. The chosen
 * backend's table is always there (its defaults when the file has none) unless its schema has
 * no fields; another backend's only when written, since it is validated whatever the backend.
 */
export type BackendTables = { readonly [K in keyof BackendConfigMap]?: BackendConfigMap[K] } & {
  readonly [table: string]: unknown;
};

/** `[locking]` */
export type LockingConfig = BackendTables & {
  readonly backend: BackendKind;
  /** Backend packages loaded (and registered) before the config was validated. */
  readonly packages?: readonly string[];
  /** Absent means the defaults (a config read by the loader always has it). */
  readonly keepalive?: KeepaliveSettings;
  /** Absent means the defaults (a config read by the loader always has it). */
  readonly waiting?: WaitingSettings;
};

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
  /**
   * Which routes need the token: "writes" (force-release) or "all" (every route but the probes
   * and the dashboard's files). Absent: "all" when listen is beyond loopback, else "writes"
   * (the listener decides, host/admin/access.ts).
   */
  readonly auth?: AdminAuth;
  /** /metrics answers without the token even when auth is "all" (default false). */
  readonly metricsOpen?: boolean;
  /** HTTPS: absolute paths of the PEM certificate and key (both or neither). */
  readonly certFile?: string;
  readonly keyFile?: string;
  /** Mutual TLS: absolute path of the PEM CA bundle that signs the clients' certificates. */
  readonly clientCaFile?: string;
}

/** Which admin routes need the token. */
export type AdminAuth = "writes" | "all";

/** One `[[plugins]]` entry. */
export interface PluginConfig {
  /** Lowercase letters, digits, '-' and '_'; namespaces the plugin's keys. */
  readonly name: string;
  /** Absolute path of the .wasm (relative paths in TOML resolve against the config file's folder). */
  readonly wasm: string;
  readonly isolation: Isolation;
  /** The runtime `isolation` resolved to when the config was loaded (derived, not a key). */
  readonly runtime: GuestRuntime;
  /** The cap of the guest's WebAssembly.Memory. */
  readonly memoryLimitMib: number;
  /**
   * A call running longer is stopped and the guest restarted (worker runtime). An inline guest
   * has no time limit: the field keeps its default there and is not enforced.
   */
  readonly callTimeoutMs: number;
  /**
   * Guest instances run side by side (1..64): each runs one call at a time, with its own memory
   * and handles; a call takes a free one.
   */
  readonly instances: number;
  /** Global keys the plugin may use; `*` matches any run of characters. */
  readonly globalKeys: readonly string[];
  /** Host function namespaces its guest may import (the embedder registers the functions). */
  readonly functions: readonly string[];
  /** Its guest's lines below this level are dropped; absent: the host's log level. */
  readonly logLevel?: LogLevel;
  /** `[plugins.config]`: values its guest reads with config.get (secrets among them: never logged). */
  readonly config: Readonly<Record<string, string>>;
  /** `[plugins.http]`: absent, its guest may not make HTTP requests. */
  readonly http?: HttpGrant;
  /** The guest may import WASI basics (stdout/stderr to the log, clocks, random); default false. */
  readonly wasi: boolean;
  /** Pins the module: the SHA-256 (hex) its .wasm's bytes must have; absent: any module. */
  readonly sha256?: string;
}

/** When a schedule fires. */
export type ScheduleSpec =
  | { readonly kind: "interval"; readonly everyMs: number; readonly text: string }
  | { readonly kind: "cron"; readonly expression: string }
  /**
   * A short [[scheduled]] entry (plugin, maybe export, no schedule): the plugin's own
   * `lockhost_schedules()` export says when, read when the host loads it (host/scheduler/declared.ts).
   */
  | { readonly kind: "declared" };

/** One `[[scheduled]]` entry. */
export interface ScheduledConfig {
  /** Unique per config; the cluster-wide lock of a schedule is keyed on it. Default "{plugin}.{export}". */
  readonly id: string;
  readonly plugin: string;
  /** The export to run; "*" in a short entry: every export the plugin declares a schedule for. */
  readonly export: string;
  readonly schedule: ScheduleSpec;
  readonly hint: LockingHint;
  /** TTL of the schedule's lock. */
  readonly ttlMs: number;
  /** Renew the schedule's lock while the job runs (so a job may outlast the TTL). Default false. */
  readonly keepalive: boolean;
  /**
   * With hint "leader_only": the election whose leader runs every tick (schedules naming the same
   * one run on the same node). Default: the schedule's id.
   */
  readonly election?: string;
  /**
   * Take the schedule's lock as a fair mutex (kit/kinds.ts). A tick only tries it, as ever (a
   * waiting tick would run after the tick's holder let go: twice); fair means a tick is skipped
   * while anyone waits for the key, so a caller that waits for it fairly is never starved by
   * ticks. Default false.
   */
  readonly fair: boolean;
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
  /** Derived from `isolation` on this Node when the config is resolved; a value given is ignored. */
  readonly runtime?: GuestRuntime;
  readonly memoryLimitMib?: number;
  readonly callTimeoutMs?: number;
  readonly instances?: number;
  readonly globalKeys?: readonly string[];
  readonly functions?: readonly string[];
  readonly logLevel?: LogLevel;
  readonly config?: Readonly<Record<string, string>>;
  /** `headers` optional; the limits take their defaults. */
  readonly http?: Partial<HttpGrant> & { readonly allowedHosts: readonly string[] };
  readonly wasi?: boolean;
  readonly sha256?: string;
}

/** A `[[scheduled]]` entry built in code: the fields of ScheduledConfig, defaults optional. */
export interface ScheduledInput {
  readonly id?: string;
  readonly plugin: string;
  /** Left out (or "*") with `schedule`: every schedule the plugin declares. */
  readonly export?: string;
  /** The TOML form ("5s", "0 * * * *") or an already parsed ScheduleSpec; left out: the plugin declares it. */
  readonly schedule?: string | ScheduleSpec;
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
  readonly locking?: { readonly [K in keyof BackendConfigMap]?: Partial<BackendConfigMap[K]> } & {
    readonly [table: string]: unknown;
  } & {
    readonly backend?: BackendKind;
    readonly packages?: readonly string[];
    readonly keepalive?: Partial<KeepaliveSettings>;
    readonly waiting?: Partial<WaitingSettings>;
  };
  readonly plugins?: readonly PluginInput[];
  readonly scheduled?: readonly ScheduledInput[];
  readonly admin?: { readonly listen?: Partial<ListenAddress> | string; readonly token?: string; readonly auth?: AdminAuth; readonly metricsOpen?: boolean; readonly certFile?: string; readonly keyFile?: string; readonly clientCaFile?: string };
}
