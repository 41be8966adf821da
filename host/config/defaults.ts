// What a config leaves out. One frozen object, so the loader, the docs and the tests agree
// on a single set of values and nothing at runtime can change them.
import { hostname } from "node:os";
import { KEEPALIVE_DEFAULTS, WAITING_DEFAULTS } from "../locking/options.js";
import type {
  BackendKind,
  HostSettings,
  KeepaliveSettings,
  ListenAddress,
  PluginConfig,
  ScheduledConfig,
  WaitingSettings,
} from "./types.js";

/** Defaults of every optional config field, grouped by the table they belong to. */
export interface ConfigDefaults {
  readonly backend: BackendKind;
  readonly plugin: Pick<PluginConfig, "isolation" | "memoryLimitMib" | "callTimeoutMs" | "globalKeys">;
  readonly scheduled: Pick<ScheduledConfig, "hint" | "ttlMs" | "keepalive">;
  readonly host: HostSettings;
  /** `[locking.keepalive]`: the very object a LockService defaults to (KEEPALIVE_DEFAULTS). */
  readonly keepalive: KeepaliveSettings;
  /** `[locking.waiting]`: the very object a LockService defaults to (WAITING_DEFAULTS). */
  readonly waiting: WaitingSettings;
  /** `[admin]` listen: loopback only, unless the operator says otherwise. */
  readonly adminListen: ListenAddress;
}

/** The defaults applied by loadConfig, parseConfig and resolveConfig. */
export const CONFIG_DEFAULTS: ConfigDefaults = Object.freeze({
  backend: "memory",
  plugin: Object.freeze({
    isolation: "worker",
    memoryLimitMib: 16,
    callTimeoutMs: 5000,
    globalKeys: Object.freeze([]),
  }),
  scheduled: Object.freeze({ hint: "require_global", ttlMs: 60000, keepalive: false }),
  host: Object.freeze({
    // Read once at startup: a node keeps one name for the life of the process, so the
    // holder recorded on its locks never changes under it.
    node: hostname(),
    shutdownTimeoutMs: 10000,
    logLevel: "info",
  }),
  // Owned by the lock service, which applies them to services built without a config: one
  // set of values, so a config that leaves a key out means what the service does.
  keepalive: KEEPALIVE_DEFAULTS,
  waiting: WAITING_DEFAULTS,
  adminListen: Object.freeze({ host: "127.0.0.1", port: 9464 }),
});
