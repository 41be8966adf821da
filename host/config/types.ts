// The validated, frozen configuration of a host. Produced from TOML by loadConfig/parseConfig;
// embedders and tests may also build one in code and pass it through resolveConfig. The type of
// each table, and what resolveConfig accepts for it, are derived from its declaration in
// tables.ts (TableValue, TableInput): a field is declared once, there. What no table declares
// (the unions its fields take, ScheduleSpec, ListenAddress, the top level) is written here.
import type { Runtime } from "../../abi/ops.js";
import type { BackendConfigMap } from "../../kit/descriptor.js";
import type { DelegationSettings, KeepaliveSettings, WaitingSettings } from "../locking/options.js";
import type { TableInput, TableValue } from "../../kit/schema.js";
import type { ADMIN_SCHEMA, HOST_SCHEMA, LOCKING_SCHEMA, PLUGIN_SCHEMA, SCHEDULED_SCHEMA } from "./tables.js";

export type { DelegationSettings, KeepaliveSettings, WaitingSettings };

/**
 * A backend an operator can name: a registered backend's name. The config checks it against
 * the registry; the type cannot know the backends a config's packages bring.
 */
export type BackendName = string;

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
export type LockingConfig = BackendTables &
  TableValue<typeof LOCKING_SCHEMA> & {
    /** Absent means the defaults (a config read by the loader always has it). */
    readonly keepalive?: KeepaliveSettings;
    /** Absent means the defaults (a config read by the loader always has it). */
    readonly waiting?: WaitingSettings;
    /** Absent means the defaults (a config read by the loader always has it). */
    readonly delegation?: DelegationSettings;
  };

/** Where the admin listener listens. */
export interface ListenAddress {
  /** Default "127.0.0.1": loopback only. */
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
}

/**
 * `[admin]`: the optional admin HTTP listener (status, metrics, force-release). `auth` absent:
 * "all" when listen is beyond loopback, else "writes" (the listener decides, host/admin/access.ts);
 * the TLS files are absolute paths.
 */
export type AdminSettings = TableValue<typeof ADMIN_SCHEMA>;

/** Which admin routes need the token. */
export type AdminAuth = "writes" | "all";

/**
 * One `[[plugins]]` entry: its fields as tables.ts declares them (wasm an absolute path), and
 * the runtime its `isolation` resolved to when the config was loaded (derived, not a key).
 */
export type PluginConfig = Flat<TableValue<typeof PLUGIN_SCHEMA> & { readonly runtime: GuestRuntime }>;

/** When a schedule fires. */
export type ScheduleSpec =
  | { readonly kind: "interval"; readonly everyMs: number; readonly text: string }
  | { readonly kind: "cron"; readonly expression: string }
  /**
   * A short [[scheduled]] entry (plugin, maybe export, no schedule): the plugin's own
   * `lockhost_schedules()` export says when, read when the host loads it (host/scheduler/declared.ts).
   */
  | { readonly kind: "declared" };

/** One `[[scheduled]]` entry, as tables.ts declares it. */
export type ScheduledConfig = TableValue<typeof SCHEDULED_SCHEMA>;

/** `[host]` */
export type HostSettings = TableValue<typeof HOST_SCHEMA>;

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

// What resolveConfig accepts: the shapes above with every defaulted field optional, derived from
// the same declarations.

/** A `[[plugins]]` entry built in code: the fields of PluginConfig, defaults optional; a relative wasm path resolves against ConfigInput.baseDir. */
export type PluginInput = Flat<
  TableInput<typeof PLUGIN_SCHEMA> & {
    /** Derived from `isolation` on this Node when the config is resolved; a value given is ignored. */
    readonly runtime?: GuestRuntime;
  }
>;

/** A `[[scheduled]]` entry built in code: the fields of ScheduledConfig, defaults optional. */
export type ScheduledInput = TableInput<typeof SCHEDULED_SCHEMA>;

/** A config built in code for resolveConfig. A LockhostConfig is itself a valid ConfigInput. */
export interface ConfigInput {
  /** Names the config in messages, and is kept as LockhostConfig.source. */
  readonly source?: string;
  /** Where relative wasm paths resolve from; default: the process's working directory. */
  readonly baseDir?: string;
  readonly host?: TableInput<typeof HOST_SCHEMA>;
  readonly locking?: { readonly [K in keyof BackendConfigMap]?: Partial<BackendConfigMap[K]> } & {
    readonly [table: string]: unknown;
  } & TableInput<typeof LOCKING_SCHEMA> & {
      readonly keepalive?: Partial<KeepaliveSettings>;
      readonly waiting?: Partial<WaitingSettings>;
      readonly delegation?: Partial<DelegationSettings>;
    };
  readonly plugins?: readonly PluginInput[];
  readonly scheduled?: readonly ScheduledInput[];
  readonly admin?: TableInput<typeof ADMIN_SCHEMA>;
}

type Flat<T> = { readonly [K in keyof T]: T[K] };
