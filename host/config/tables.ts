// The host's own config tables, each field declared once: type, default, range, unit and doc.
// The reader (schema.ts), CONFIG_DEFAULTS and the README's config reference come from these;
// backends declare their [locking.<name>] tables the same way, in their own folders.
import { hostname } from "node:os";
import { MAX_TTL_MS } from "../../abi/status.js";
import { field, table } from "../../kit/schema.js";
import { LISTEN_FORM } from "./listen.js";
import type { HostSettings, Isolation, LockingHint, LogLevel, PluginConfig, ScheduledConfig } from "./types.js";

// Records keyed by the union types, so adding a member to a union in types.ts fails to compile
// here until the loader accepts it.
const ISOLATIONS = keysOf<Isolation>({ worker: 1, inline: 1, auto: 1 });
const HINTS = keysOf<LockingHint>({ node_local: 1, require_global: 1, prefer_global: 1 });
const LOG_LEVELS = keysOf<LogLevel>({ trace: 1, debug: 1, info: 1, warn: 1, error: 1, fatal: 1, silent: 1 });

/** `[host]` */
export const HOST_SCHEMA = table<HostSettings>({
  doc: "this process",
  fields: {
    node: field.string({
      // Read once at startup: a node keeps one name for the life of the process, so the holder
      // recorded on its locks never changes under it.
      default: hostname(),
      defaultDoc: "the machine's hostname",
      example: "node-a",
      doc: "holder name in lock metadata",
      // The node name is shown as a lock's holder, in status output and logs.
      check: (v) => (v.length === 0 || v.length > 255 || /\p{Cc}/u.test(v) ? "must be 1 to 255 characters without control characters" : undefined),
    }),
    shutdownTimeoutMs: field.int({ default: 10_000, min: 0, max: 3_600_000, unit: "ms", doc: "how long running calls may finish on shutdown" }),
    logLevel: field.oneOf(LOG_LEVELS, { default: "info", doc: LOG_LEVELS.join(" | ") }),
  },
});

/** `[locking]` itself (its sub-tables are the backends', keepalive and waiting). */
export const LOCKING_SCHEMA = table<{ backend: string; packages: readonly string[] }>({
  doc: "which backend holds the locks",
  fields: {
    // Read against the registry (its values are whatever backends are registered).
    backend: field.custom({ toml: '"memory"', doc: "a registered backend: memory | redis | pg, or one a package brings" }),
    packages: field.stringList({ optional: true, example: [], doc: "npm packages of third-party backends, loaded before the rest is validated" }),
  },
});

/** `[admin]`: the optional admin HTTP listener. */
export const ADMIN_SCHEMA = table<{ listen: string; token: string }>({
  doc: "optional: the admin HTTP listener (stats, metrics, status, force-release)",
  fields: {
    // Parsed by the reader: TOML has the text, code may pass { host, port }.
    listen: field.custom({ toml: '"127.0.0.1:9464"', doc: `${LISTEN_FORM}; loopback by default` }),
    token: field.secret({
      optional: true,
      example: "${LOCKHOST_ADMIN_TOKEN}",
      env: "LOCKHOST_ADMIN_TOKEN",
      doc: "16+ printable characters; force-release needs it; never logged",
      // Neither message shows the token, nor any part of it.
      check: (token) =>
        token.length < 16 || token.length > 4096
          ? `must be 16 to 4096 characters long, got ${token.length} characters (the value is not shown: it is a secret)`
          : // Sent as `Authorization: Bearer <token>`: printable ASCII without spaces, so it survives a header.
            !/^[\x21-\x7E]*$/.test(token)
            ? "must be printable ASCII without spaces, as it is sent in an Authorization header (the value is not shown: it is a secret)"
            : undefined,
    }),
  },
});

/** One `[[plugins]]` entry. */
export const PLUGIN_SCHEMA = table<Omit<PluginConfig, "runtime">>({
  doc: "a guest plugin",
  fields: {
    // Checked by the reader: a pattern, reserved names, unique across entries.
    name: field.custom({ toml: '"report"', doc: '[a-z0-9][a-z0-9_.-]*, or npm-style @scope/name (at most 64 chars), unique; "global", "host", "lockhost" are reserved' }),
    // Resolved by the reader against the config file's folder.
    wasm: field.custom({ toml: '"plugins/guests/build/report.wasm"', doc: "the guest module; relative to the config file" }),
    isolation: field.oneOf(ISOLATIONS, { default: "worker", doc: "worker (own thread, time limit) | inline (host's thread, needs JSPI) | auto (inline where JSPI exists and call_timeout_ms is not set)" }),
    memoryLimitMib: field.int({ default: 16, min: 1, max: 4096, unit: "MiB", doc: "cap of the guest's memory" }),
    callTimeoutMs: field.int({ default: 5000, min: 1, max: 3_600_000, unit: "ms", doc: "a call running longer is stopped and the guest restarted; worker runtime only" }),
    globalKeys: field.stringList({ default: [], example: ["ledger", "jobs/*"], doc: "global keys it may use; * matches anything" }),
    wasi: field.bool({ default: false, doc: "let the guest import WASI basics (stdout/stderr to the log, clocks, random; ENOSYS for the rest)" }),
  },
});

/** One `[[scheduled]]` entry. */
export const SCHEDULED_SCHEMA = table<ScheduledConfig>({
  doc: "a job run under the schedule's lock",
  fields: {
    // These four are read together by the reader: the id derives from plugin and export.
    id: field.custom({ defaultDoc: '"<plugin>.<export>"', toml: '"report.run"', doc: "the schedule's lock is keyed on it" }),
    plugin: field.custom({ toml: '"report"', doc: "a declared plugin" }),
    export: field.custom({ toml: '"run"', doc: 'an export taking no arguments; "*" or left out: the schedules the plugin declares (lockhost_schedules)' }),
    schedule: field.custom({ toml: '"5s"', doc: "an interval (500ms, 5s, 1m, 2h) or a cron expression (5 or 6 fields); left out: the plugin's declared one" }),
    hint: field.oneOf(HINTS, { default: "require_global", doc: HINTS.join(" | ") }),
    ttlMs: field.int({ default: 60_000, min: 1, max: MAX_TTL_MS, unit: "ms", doc: "TTL of the schedule's lock" }),
    keepalive: field.bool({ default: false, doc: "renew the schedule's lock while the job runs (jobs longer than ttl_ms)" }),
  },
});

function keysOf<T extends string>(record: Record<T, 1>): readonly T[] {
  return Object.keys(record) as T[];
}
