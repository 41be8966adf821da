// The lockhost schema at work: the tables a config has, read with their declarations
// (tables.ts, the lock service's keepalive and waiting, each backend's own), plus what only
// code can say: values parsed from text, names unique across entries, schedules that name a
// declared plugin, a keepalive margin that leaves room for a renewal. Reading and messages are
// the reader's job; the declarations say what is allowed.
import { resolve } from "node:path";
import { Cron } from "croner";
import type { TableSchema } from "../../kit/schema.js";
import { backendDescriptor, backendNames } from "../backends/registry.js";
import { KEEPALIVE_SCHEMA, marginFits, WAITING_SCHEMA } from "../locking/options.js";
import { PLUGIN_NAME_PATTERN, RESERVED_PLUGIN_NAMES } from "../locking/scope.js";
import { CONFIG_DEFAULTS } from "./defaults.js";
import { parseDuration } from "./duration.js";
import { checkHost, parseListen } from "./listen.js";
import { checkKeys, keyOf, readFields, readTable } from "./read-table.js";
import { isTable, type Key, type Table } from "./reader.js";
import { ADMIN_SCHEMA, HOST_SCHEMA, HTTP_SCHEMA, LOCKING_SCHEMA, PLUGIN_SCHEMA, SCHEDULED_SCHEMA } from "./tables.js";
import { headerProblem, type HttpGrant } from "../runtime/capabilities/http/index.js";
import { jspiAvailable, jspiRequirement } from "../runtime/jspi.js";
import type {
  AdminSettings,
  GuestRuntime,
  Isolation,
  KeepaliveSettings,
  ListenAddress,
  LockhostConfig,
  LockingConfig,
  PluginConfig,
  ScheduledConfig,
  ScheduleSpec,
} from "./types.js";

// '@' and '/' so an id derived from a scoped plugin name ("@acme/cron.run") is one.
const SCHEDULE_ID = /^[A-Za-z0-9._:@/-]{1,128}$/;
/** The export of a short [[scheduled]] entry without one: every schedule its plugin declares. */
export const ALL_DECLARED = "*";

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
  const host = readTable(root.emptyTable("host", "host"), HOST_SCHEMA);
  const locking = lockingConfig(root.emptyTable("locking", "locking"));
  const plugins = pluginList(root);
  const scheduled = scheduledList(root, new Set(plugins.map((p) => p.name)));
  const admin = adminSettings(root.table("admin", "admin"));
  return { ...(source === undefined ? {} : { source }), host, locking, plugins, scheduled, ...(admin && { admin }) };
}

function lockingConfig(t: Table): LockingConfig {
  const names = backendNames();
  t.onlyKeys([...Object.keys(LOCKING_SCHEMA.fields), "keepalive", "waiting", ...names]);
  const backend = t.oneOf("backend", names) ?? CONFIG_DEFAULTS.backend;
  const { packages } = readFields(t, LOCKING_SCHEMA);
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
  const keepalive = keepaliveSettings(t.emptyTable("keepalive", "locking.keepalive"));
  const waiting = readTable(t.emptyTable("waiting", "locking.waiting"), WAITING_SCHEMA);
  return { backend, ...(packages && { packages }), ...tables, keepalive, waiting };
}

const hasFields = (schema: TableSchema<unknown>): boolean => Object.keys(schema.fields).length > 0;

function keepaliveSettings(t: Table): KeepaliveSettings {
  const settings = readTable(t, KEEPALIVE_SCHEMA);
  const { renewAtRatio, safetyMarginRatio } = settings;
  // A renewal falls due at renewAtRatio of the TTL and must be confirmed before the margin;
  // with no room between the two, every keepalive lease would be declared lost.
  if (!marginFits(renewAtRatio, safetyMarginRatio)) {
    const renew = keyOf("renewAtRatio");
    const renewKey = t.nameOf(renew);
    const whose = t.get(renew) === undefined ? ` (its default)` : "";
    t.fail(
      keyOf("safetyMarginRatio"),
      `must be less than 1 - ${renewKey}, got ${safetyMarginRatio} with ${renewKey} = ${renewAtRatio}${whose}: a renewal must fall due before the safety margin starts`,
    );
  }
  return settings;
}

/** `[admin]`: present means the host starts the admin listener. */
function adminSettings(t: Table | undefined): AdminSettings | undefined {
  if (!t) return undefined;
  checkKeys(t, ADMIN_SCHEMA);
  const listen = listenAddress(t);
  const { token } = readTable(t, ADMIN_SCHEMA);
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
    return { host, port: l.int("port", [0, 65535]) ?? d.port };
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
    // A config built in code may hand back a loaded one, whose runtime is re-derived here.
    if (t.ctx.mode === "code") t.onlyKeys([...Object.keys(PLUGIN_SCHEMA.fields).map(keyOf), "runtime"]);
    else checkKeys(t, PLUGIN_SCHEMA);
    if (name === undefined) return t.fail("name", "is required");
    if (!PLUGIN_NAME_PATTERN.test(name)) {
      t.fail("name", `must be 1 to 64 of lowercase letters, digits, '-', '_' and '.', optionally scoped as "@scope/name" (${PLUGIN_NAME_PATTERN}), got ${t.show(name)}`);
    }
    if (RESERVED_PLUGIN_NAMES.has(name)) {
      t.fail("name", `${t.show(name)} is reserved (reserved names: ${[...RESERVED_PLUGIN_NAMES].join(", ")})`);
    }
    t.unique("name", name, seen);
    const wasm = resolve(t.ctx.baseDir, t.nonEmptyString("wasm") ?? t.fail("wasm", "is required"));
    const { config: _config, http: _http, ...fields } = readFields(t, PLUGIN_SCHEMA);
    const http = httpGrant(t.table("http", "plugins.http")?.named(name));
    const config = stringTable(t.table("config", "plugins.config")?.named(name));
    return { ...fields, name, wasm, config, ...(http && { http }), runtime: guestRuntime(t, fields.isolation) };
  });
}

/** `[plugins.http]`: present means the plugin may make HTTP requests within it. */
function httpGrant(t: Table | undefined): HttpGrant | undefined {
  if (!t) return undefined;
  const { headers: _headers, ...rest } = readTable(t, HTTP_SCHEMA);
  const headers = stringTable(t.table("headers", "plugins.http.headers")?.named(t.entryName), headerProblem);
  return { ...rest, headers };
}

/**
 * A table of strings (`[plugins.config]`, `[plugins.http.headers]`), `${ENV}` substituted; its
 * values are secrets as far as messages go: none ever shows one.
 */
function stringTable(t: Table | undefined, problem?: (key: string, value: string) => string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!t) return out;
  for (const key of t.keys()) {
    const value = t.secret(key) ?? "";
    const bad = problem?.(key, value);
    if (bad !== undefined) t.fail(key, `${bad} (the value is not shown: it may be a secret)`);
    out[key] = value;
  }
  return out;
}

/**
 * The runtime a plugin's `isolation` resolves to on this Node. What cannot be honoured is
 * refused here, at load, rather than when the guest starts: inline without JSPI, and inline
 * with a time limit (a guest on the host's thread cannot be stopped mid-call).
 */
function guestRuntime(t: Table, isolation: Isolation): GuestRuntime {
  const timeLimitKey = keyOf("callTimeoutMs");
  const timeLimitSet = t.get(timeLimitKey) !== undefined;
  if (isolation === "worker") return "worker";
  if (isolation === "auto") return jspiAvailable() && !timeLimitSet ? "inline" : "worker";
  if (!jspiAvailable()) {
    t.fail("isolation", `"inline" is not available on this Node: ${jspiRequirement()}; use "worker", or "auto" to fall back to it`);
  }
  if (timeLimitSet) {
    t.fail(
      timeLimitKey,
      `cannot be honoured with isolation = "inline": a guest on the host's thread cannot be stopped mid-call; remove it, or use isolation = "worker" (or "auto") for a time limit`,
    );
  }
  return "inline";
}

function scheduledList(root: Table, pluginNames: ReadonlySet<string>): ScheduledConfig[] {
  const seen = new Map<string, string>();
  return root.entries("scheduled").map((entry) => {
    const givenId = entry.string("id");
    const plugin = entry.string("plugin");
    // A short entry leaves out the schedule (and maybe the export): the plugin declares them.
    const given = entry.get("schedule");
    const short = given === undefined || (isTable(given) && given.kind === "declared");
    const exportName = entry.nonEmptyString("export") ?? (short ? ALL_DECLARED : undefined);
    const derived = plugin !== undefined && exportName !== undefined ? (exportName === ALL_DECLARED ? plugin : `${plugin}.${exportName}`) : undefined;
    const id = givenId ?? derived;
    const t = entry.named(id);
    checkKeys(t, SCHEDULED_SCHEMA);
    if (plugin === undefined) return t.fail("plugin", "is required");
    if (exportName === undefined) return t.fail("export", "is required when schedule is given (leave both out to run every schedule the plugin declares)");
    if (exportName === ALL_DECLARED && !short) t.fail("export", `may be "${ALL_DECLARED}" only without a schedule (every schedule the plugin declares)`);
    if (!pluginNames.has(plugin)) {
      const declared = pluginNames.size ? `declared: ${[...pluginNames].join(", ")}` : "none is declared";
      t.fail("plugin", `${t.show(plugin)} is not declared by any ${t.plural("plugins")} entry (${declared})`);
    }
    if (id === undefined || !SCHEDULE_ID.test(id)) {
      const why = givenId === undefined ? ` (derived from plugin and export; set id explicitly)` : "";
      return t.fail("id", `must be 1 to 128 characters from A-Z a-z 0-9 . _ : - @ /, got ${t.show(id)}${why}`);
    }
    t.unique("id", id, seen);
    const schedule: ScheduleSpec = short ? { kind: "declared" } : scheduleSpec(t);
    return { ...readTable(t, SCHEDULED_SCHEMA), id, plugin, export: exportName, schedule };
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
  const kind = t.oneOf("kind", ["interval", "cron", "declared"] as const) ?? t.fail("kind", "is required");
  if (kind === "declared") {
    t.onlyKeys(["kind"]);
    return { kind };
  }
  if (kind === "cron") {
    t.onlyKeys(["kind", "expression"]);
    return { kind, expression: checkCron(t, "expression", t.nonEmptyString("expression") ?? t.fail("expression", "is required")) };
  }
  t.onlyKeys(["kind", "everyMs", "text"]);
  const everyMs = t.int("everyMs", [1, Number.MAX_SAFE_INTEGER]) ?? t.fail("everyMs", "is required");
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

