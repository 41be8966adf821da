// What a config leaves out, gathered from the declarations (tables.ts, the lock service's
// options). One frozen object, so the loader, the docs and the tests agree on a single set of
// values and nothing at runtime can change them.
import { completeDefaultsOf, defaultsOf } from "../../kit/schema.js";
import { DELEGATION_DEFAULTS, KEEPALIVE_DEFAULTS, WAITING_DEFAULTS } from "../locking/options.js";
import { parseListen } from "./listen.js";
import { ADMIN_SCHEMA, HOST_SCHEMA, LOCKING_SCHEMA, PLUGIN_SCHEMA, SCHEDULED_SCHEMA } from "./tables.js";
import type {
  BackendName,
  DelegationSettings,
  HostSettings,
  KeepaliveSettings,
  ListenAddress,
  PluginConfig,
  ScheduledConfig,
  WaitingSettings,
} from "./types.js";

/** Defaults of every optional config field, grouped by the table they belong to. */
export interface ConfigDefaults {
  readonly backend: BackendName;
  readonly plugin: Pick<PluginConfig, "isolation" | "memoryLimitMib" | "callTimeoutMs" | "globalKeys">;
  readonly scheduled: Pick<ScheduledConfig, "hint" | "ttlMs" | "keepalive" | "fair">;
  readonly host: HostSettings;
  /** `[locking.keepalive]`: the very object a LockService defaults to (KEEPALIVE_DEFAULTS). */
  readonly keepalive: KeepaliveSettings;
  /** `[locking.waiting]`: the very object a LockService defaults to (WAITING_DEFAULTS). */
  readonly waiting: WaitingSettings;
  /** `[locking.delegation]`: the very object a LockService defaults to (DELEGATION_DEFAULTS). */
  readonly delegation: DelegationSettings;
  /** `[admin]` listen: loopback only, unless the operator says otherwise. */
  readonly adminListen: ListenAddress;
}

/** The defaults applied by loadConfig, parseConfig and resolveConfig, read off the declarations. */
export const CONFIG_DEFAULTS: ConfigDefaults = Object.freeze({
  backend: JSON.parse(LOCKING_SCHEMA.fields.backend.toml!) as string,
  plugin: defaultsOf(PLUGIN_SCHEMA) as ConfigDefaults["plugin"],
  scheduled: defaultsOf(SCHEDULED_SCHEMA) as ConfigDefaults["scheduled"],
  host: completeDefaultsOf(HOST_SCHEMA),
  // Owned by the lock service, which applies them to services built without a config: one
  // set of values, so a config that leaves a key out means what the service does.
  keepalive: KEEPALIVE_DEFAULTS,
  waiting: WAITING_DEFAULTS,
  delegation: DELEGATION_DEFAULTS,
  adminListen: Object.freeze(listenDefault()),
});

function listenDefault(): ListenAddress {
  const parsed = parseListen(JSON.parse(ADMIN_SCHEMA.fields.listen.toml!) as string);
  if ("problem" in parsed) throw new Error(`the default [admin] listen does not parse: ${parsed.problem}`);
  return parsed;
}
