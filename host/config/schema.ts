// The lockhost schema: which tables and keys a config has, what each may hold, the defaults
// applied to what is left out, and the checks that span entries (unique names, schedules that
// name a declared plugin). Reading and messages are the reader's job; this file says only what
// is allowed.
import { resolve } from "node:path";
import { Cron } from "croner";
import { MAX_TTL_MS } from "../../abi/status.js";
import { LIFECYCLE_LIMITS } from "../locking/options.js";
import { PLUGIN_NAME_PATTERN, RESERVED_PLUGIN_NAMES } from "../locking/scope.js";
import type { TableSchema } from "../../kit/schema.js";
import { backendDescriptor, backendNames } from "../backends/registry.js";
import { CONFIG_DEFAULTS } from "./defaults.js";
import { parseDuration } from "./duration.js";
import { checkHost, parseListen } from "./listen.js";
import { readTable } from "./read-table.js";
import { isTable, type Key, type Table } from "./reader.js";
import type {
  AdminSettings,
  HostSettings,
  Isolation,
  KeepaliveSettings,
  ListenAddress,
  LockhostConfig,
  LockingConfig,
  LockingHint,
  LogLevel,
  PluginConfig,
  ScheduledConfig,
  ScheduleSpec,
  WaitingSettings,
} from "./types.js";

const LIMITS = {
  memoryLimitMib: [1, 4096],
  callTimeoutMs: [1, 3_600_000],
  shutdownTimeoutMs: [0, 3_600_000],
  ttlMs: [1, MAX_TTL_MS],
  everyMs: [1, Number.MAX_SAFE_INTEGER],
  // The lock service checks services built in code against the same ranges.
  ...LIFECYCLE_LIMITS,
  port: [0, 65535],
} as const satisfies Record<string, readonly [number, number]>;

// Records keyed by the union types, so adding a member to a union in types.ts fails to compile
// here until the loader accepts it.
const ISOLATIONS = keysOf<Isolation>({ worker: 1, inline: 1 });
const HINTS = keysOf<LockingHint>({ node_local: 1, require_global: 1, prefer_global: 1 });
const LOG_LEVELS = keysOf<LogLevel>({ trace: 1, debug: 1, info: 1, warn: 1, error: 1, fatal: 1, silent: 1 });

const SCHEDULE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
/** Sent as `Authorization: Bearer <token>`: printable ASCII without spaces, so it survives a header. */
const TOKEN_CHARS = /^[\x21-\x7E]*$/;
const TOKEN_LENGTH = [16, 4096] as const;

const K = {
  shutdownTimeoutMs: ["shutdown_timeout_ms", "shutdownTimeoutMs"],
  logLevel: ["log_level", "logLevel"],
  memoryLimitMib: ["memory_limit_mib", "memoryLimitMib"],
  callTimeoutMs: ["call_timeout_ms", "callTimeoutMs"],
  globalKeys: ["global_keys", "globalKeys"],
  ttlMs: ["ttl_ms", "ttlMs"],
  renewAtRatio: ["renew_at_ratio", "renewAtRatio"],
  maxRetries: ["max_retries", "maxRetries"],
  safetyMarginRatio: ["safety_margin_ratio", "safetyMarginRatio"],
  batchWindowMs: ["batch_window_ms", "batchWindowMs"],
  pollIntervalMs: ["poll_interval_ms", "pollIntervalMs"],
} as const satisfies Record<string, Key>;

/**
 * Checks a whole config against the schema and fills in the defaults.
 *
 * @param root the top level of the input, read as TOML or as an object built in code.
 * @param source kept as LockhostConfig.source; omitted from the result when undefined.
 * @throws LockhostError CONFIG_INVALID at the first key that breaks the schema.
 */
export function buildConfig(root: Table, source: string | undefined): LockhostConfig {
  if (root.ctx.mode === "code") {
    root.onlyKeys(["source", "baseDir", "host", "locking", "plugins", "scheduled", "admin"]);
    // Read only to be type-checked: the caller has already taken both values.
    root.string("source");
    root.nonEmptyString("baseDir");
  } else {
    root.onlyKeys(["host", "locking", "plugins", "scheduled", "admin"]);
  }
  const host = hostSettings(root.table("host", "host"));
  const locking = lockingConfig(root.emptyTable("locking", "locking"));
  const plugins = pluginList(root);
  const scheduled = scheduledList(root, new Set(plugins.map((p) => p.name)));
  const admin = adminSettings(root.table("admin", "admin"));
  return { ...(source === undefined ? {} : { source }), host, locking, plugins, scheduled, ...(admin && { admin }) };
}

function hostSettings(t: Table | undefined): HostSettings {
  const d = CONFIG_DEFAULTS.host;
  if (!t) return { ...d };
  t.onlyKeys(["node", K.shutdownTimeoutMs, K.logLevel]);
  const node = t.string("node") ?? d.node;
  // The node name is shown as a lock's holder, in status output and logs.
  if (node.length === 0 || node.length > 255 || /\p{Cc}/u.test(node)) {
    t.fail("node", `must be 1 to 255 characters without control characters, got ${t.show(node)}`);
  }
  return {
    node,
    shutdownTimeoutMs: t.int(K.shutdownTimeoutMs, LIMITS.shutdownTimeoutMs) ?? d.shutdownTimeoutMs,
    logLevel: t.oneOf(K.logLevel, LOG_LEVELS) ?? d.logLevel,
  };
}

function lockingConfig(t: Table): LockingConfig {
  const names = backendNames();
  t.onlyKeys(["backend", "packages", "keepalive", "waiting", ...names]);
  const backend = t.oneOf("backend", names) ?? CONFIG_DEFAULTS.backend;
  const packages = t.stringList("packages");
  // Every backend's table is validated whatever the backend, so a typo in a standby backend's
  // settings is caught before a switch to it. The chosen one is read even when left out (its
  // defaults), so whoever opens the backend can rely on its settings being present.
  const tables: Record<string, unknown> = {};
  for (const name of names) {
    const schema = backendDescriptor(name)!.config;
    const dotted = `locking.${name}`;
    const table = name === backend && hasFields(schema) ? t.emptyTable(name, dotted) : t.table(name, dotted);
    if (table) tables[name] = readTable(table, schema);
  }
  const keepalive = keepaliveSettings(t.table("keepalive", "locking.keepalive"));
  const waiting = waitingSettings(t.table("waiting", "locking.waiting"));
  return { backend, ...(packages && { packages }), ...tables, keepalive, waiting };
}

const hasFields = (schema: TableSchema<unknown>): boolean => Object.keys(schema.fields).length > 0;

function keepaliveSettings(t: Table | undefined): KeepaliveSettings {
  const d = CONFIG_DEFAULTS.keepalive;
  if (!t) return { ...d };
  t.onlyKeys([K.renewAtRatio, K.maxRetries, K.safetyMarginRatio, K.batchWindowMs]);
  const renewAtRatio = t.number(K.renewAtRatio, { gt: 0, lt: 1 }) ?? d.renewAtRatio;
  const safetyMarginRatio = t.number(K.safetyMarginRatio, { ge: 0, lt: 1 }) ?? d.safetyMarginRatio;
  // A renewal falls due at renewAtRatio of the TTL and must be confirmed before the margin;
  // with no room between the two, every keepalive lease would be declared lost.
  if (renewAtRatio + safetyMarginRatio >= 1) {
    const renewKey = t.nameOf(K.renewAtRatio);
    const whose = t.get(K.renewAtRatio) === undefined ? ` (its default)` : "";
    t.fail(
      K.safetyMarginRatio,
      `must be less than 1 - ${renewKey}, got ${safetyMarginRatio} with ${renewKey} = ${renewAtRatio}${whose}: a renewal must fall due before the safety margin starts`,
    );
  }
  return {
    renewAtRatio,
    maxRetries: t.int(K.maxRetries, LIMITS.maxRetries) ?? d.maxRetries,
    safetyMarginRatio,
    batchWindowMs: t.int(K.batchWindowMs, LIMITS.batchWindowMs) ?? d.batchWindowMs,
  };
}

function waitingSettings(t: Table | undefined): WaitingSettings {
  const d = CONFIG_DEFAULTS.waiting;
  if (!t) return { ...d };
  t.onlyKeys([K.pollIntervalMs]);
  return { pollIntervalMs: t.int(K.pollIntervalMs, LIMITS.pollIntervalMs) ?? d.pollIntervalMs };
}

/** `[admin]`: present means the host starts the admin listener. */
function adminSettings(t: Table | undefined): AdminSettings | undefined {
  if (!t) return undefined;
  t.onlyKeys(["listen", "token"]);
  const listen = listenAddress(t);
  const token = t.secret("token");
  if (token !== undefined) {
    // Neither message shows the token, nor any part of it.
    const [min, max] = TOKEN_LENGTH;
    if (token.length < min || token.length > max) {
      t.fail("token", `must be ${min} to ${max} characters long, got ${token.length} characters (the value is not shown: it is a secret)`);
    }
    if (!TOKEN_CHARS.test(token)) {
      t.fail("token", "must be printable ASCII without spaces, as it is sent in an Authorization header (the value is not shown: it is a secret)");
    }
  }
  return { listen, ...(token !== undefined && { token }) };
}

function listenAddress(t: Table): ListenAddress {
  const d = CONFIG_DEFAULTS.adminListen;
  // Code may pass {host, port} (a LockhostConfig holds that form); TOML has only the text.
  if (t.ctx.mode === "code" && isTable(t.get("listen"))) {
    const l = t.table("listen", `${t.label}.listen`) as Table;
    l.onlyKeys(["host", "port"]);
    const host = l.string("host") ?? d.host;
    const problem = checkHost(host);
    if (problem) l.fail("host", `${problem} (an IPv6 address goes without brackets here), got ${l.show(host)}`);
    return { host, port: l.int("port", LIMITS.port) ?? d.port };
  }
  const text = t.string("listen");
  if (text === undefined) return { ...d };
  const parsed = parseListen(text);
  if ("problem" in parsed) return t.fail("listen", `${parsed.problem}, got ${t.show(text)}`);
  return parsed;
}

function pluginList(root: Table): PluginConfig[] {
  const seen = new Map<string, string>();
  return root.entries("plugins").map((entry) => {
    const name = entry.string("name");
    const t = entry.named(name);
    t.onlyKeys(["name", "wasm", "isolation", K.memoryLimitMib, K.callTimeoutMs, K.globalKeys]);
    if (name === undefined) return t.fail("name", "is required");
    if (!PLUGIN_NAME_PATTERN.test(name)) {
      t.fail("name", `must be lowercase letters, digits, '-' and '_' (${PLUGIN_NAME_PATTERN}), got ${t.show(name)}`);
    }
    if (RESERVED_PLUGIN_NAMES.has(name)) {
      t.fail("name", `${t.show(name)} is reserved (reserved names: ${[...RESERVED_PLUGIN_NAMES].join(", ")})`);
    }
    t.unique("name", name, seen);
    const d = CONFIG_DEFAULTS.plugin;
    return {
      name,
      wasm: resolve(t.ctx.baseDir, t.nonEmptyString("wasm") ?? t.fail("wasm", "is required")),
      isolation: t.oneOf("isolation", ISOLATIONS) ?? d.isolation,
      memoryLimitMib: t.int(K.memoryLimitMib, LIMITS.memoryLimitMib) ?? d.memoryLimitMib,
      callTimeoutMs: t.int(K.callTimeoutMs, LIMITS.callTimeoutMs) ?? d.callTimeoutMs,
      globalKeys: t.stringList(K.globalKeys) ?? [...d.globalKeys],
    };
  });
}

function scheduledList(root: Table, pluginNames: ReadonlySet<string>): ScheduledConfig[] {
  const seen = new Map<string, string>();
  return root.entries("scheduled").map((entry) => {
    const givenId = entry.string("id");
    const plugin = entry.string("plugin");
    const exportName = entry.nonEmptyString("export");
    const derived = plugin !== undefined && exportName !== undefined ? `${plugin}.${exportName}` : undefined;
    const id = givenId ?? derived;
    const t = entry.named(id);
    t.onlyKeys(["id", "plugin", "export", "schedule", "hint", K.ttlMs, "keepalive"]);
    if (plugin === undefined) return t.fail("plugin", "is required");
    if (exportName === undefined) return t.fail("export", "is required");
    if (!pluginNames.has(plugin)) {
      const declared = pluginNames.size ? `declared: ${[...pluginNames].join(", ")}` : "none is declared";
      t.fail("plugin", `${t.show(plugin)} is not declared by any ${t.plural("plugins")} entry (${declared})`);
    }
    if (id === undefined || !SCHEDULE_ID.test(id)) {
      const why = givenId === undefined ? ` (derived from plugin and export; set id explicitly)` : "";
      return t.fail("id", `must be 1 to 128 characters from A-Z a-z 0-9 . _ : -, got ${t.show(id)}${why}`);
    }
    t.unique("id", id, seen);
    const d = CONFIG_DEFAULTS.scheduled;
    return {
      id,
      plugin,
      export: exportName,
      schedule: scheduleSpec(t),
      hint: t.oneOf("hint", HINTS) ?? d.hint,
      ttlMs: t.int(K.ttlMs, LIMITS.ttlMs) ?? d.ttlMs,
      keepalive: t.bool("keepalive") ?? d.keepalive,
    };
  });
}

function scheduleSpec(t: Table): ScheduleSpec {
  if (t.ctx.mode === "code" && isTable(t.get("schedule"))) return scheduleSpecObject(t);
  const text = (t.string("schedule") ?? t.fail("schedule", "is required")).trim();
  const everyMs = parseDuration(text);
  if (everyMs !== undefined) return { kind: "interval", everyMs, text };
  const fields = text.split(/\s+/).length;
  if (text === "" || fields === 1) {
    t.fail("schedule", `must be an interval ("500ms", "5s", "1m", "2h": a whole number greater than 0) or a cron expression of 5 or 6 fields, got ${t.show(text)}`);
  }
  if (fields !== 5 && fields !== 6) {
    t.fail("schedule", `must be a cron expression of 5 fields (minute hour day month weekday) or 6 (seconds first), got ${fields} fields: ${t.show(text)}`);
  }
  return { kind: "cron", expression: checkCron(t, "schedule", text) };
}

/** A ScheduleSpec object given in code, held to the same rules as the TOML form. */
function scheduleSpecObject(parent: Table): ScheduleSpec {
  // Called only once scheduleSpec has seen a table at "schedule", so it is never undefined.
  const t = parent.table("schedule", `${parent.label}.schedule`) as Table;
  const kind = t.oneOf("kind", ["interval", "cron"] as const) ?? t.fail("kind", "is required");
  if (kind === "cron") {
    t.onlyKeys(["kind", "expression"]);
    return { kind, expression: checkCron(t, "expression", t.nonEmptyString("expression") ?? t.fail("expression", "is required")) };
  }
  t.onlyKeys(["kind", "everyMs", "text"]);
  const everyMs = t.int("everyMs", LIMITS.everyMs) ?? t.fail("everyMs", "is required");
  return { kind, everyMs, text: t.string("text") ?? `${everyMs}ms` };
}

function checkCron(t: Table, key: Key, expression: string): string {
  let job: Cron;
  try {
    // Paused and without a callback: croner only parses, it arms no timer.
    job = new Cron(expression, { paused: true, mode: "5-or-6-parts" });
  } catch (err) {
    const why = err instanceof Error ? err.message.replace(/^CronPattern: /, "") : String(err);
    return t.fail(key, `is not a valid cron expression (${why}), got ${t.show(expression)}`);
  }
  try {
    // "0 0 30 2 *" parses but never runs; a schedule that silently never fires is a typo.
    if (job.nextRun() === null) t.fail(key, `is a cron expression that never fires, got ${t.show(expression)}`);
  } finally {
    job.stop();
  }
  return expression;
}

function keysOf<T extends string>(record: Record<T, 1>): readonly T[] {
  return Object.keys(record) as T[];
}
