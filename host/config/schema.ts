// The lockhost schema at work: the tables a config has, read with their declarations
// (tables.ts, the lock service's keepalive and waiting, each backend's own), plus what only
// code can say: values parsed from text, names unique across entries, schedules that name a
// declared plugin, a keepalive margin that leaves room for a renewal. Reading and messages are
// the reader's job; the declarations say what is allowed.
import { resolve } from "node:path";
import { Cron } from "croner";
import type { TableSchema } from "../../kit/schema.js";
import { backendDescriptor, backendNames } from "../registry/registry.js";
import { DELEGATION_SCHEMA, KEEPALIVE_SCHEMA, marginFits, WAITING_SCHEMA } from "../locking/options.js";
import { PLUGIN_NAME_PATTERN, RESERVED_PLUGIN_NAMES } from "../locking/scope.js";
import { CONFIG_DEFAULTS } from "./defaults.js";
import { parseDuration } from "./duration.js";
import { checkHost, parseListen } from "./listen.js";
import { checkKeys, keyOf, readFields, readTable } from "./read-table.js";
import { allProblems, isTable, type Key, type Table } from "./reader.js";
import type { LockhostError } from "../../kit/errors.js";
import { ADMIN_SCHEMA, HOST_SCHEMA, LOCKING_SCHEMA, PLUGIN_SCHEMA, SCHEDULED_SCHEMA } from "./tables.js";
import { CAPABILITIES, type CapabilityRow, type CapabilityTable } from "../runtime/capabilities/table.js";
import { jspiAvailable, jspiRequirement } from "../runtime/jspi.js";
import type {
  AdminSettings,
  ConfigInput,
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

/** The top level of a config built in code: ConfigInput's keys, each one (checked below). */
const CODE_KEYS = ["source", "baseDir", "host", "locking", "plugins", "scheduled", "admin"] as const satisfies readonly (keyof ConfigInput)[];
// A key added to ConfigInput and not read here fails to compile.
const everyInputKeyRead: [Exclude<keyof ConfigInput, (typeof CODE_KEYS)[number]>] extends [never] ? true : false = true;
void everyInputKeyRead;

/**
 * Checks a whole config against the schema and fills in the defaults. Every table, entry and
 * key is read even after an error, so that one run reports every error (see allProblems).
 *
 * @param root the top level of the input, read as TOML or as an object built in code.
 * @param source kept as LockhostConfig.source; omitted from the result when undefined.
 * @throws LockhostError CONFIG_INVALID naming each key that breaks the schema.
 */
export function buildConfig(root: Table, source: string | undefined): LockhostConfig {
  const problems: LockhostError[] = [];
  const top = root.collecting(problems);
  const config = top.attempt(() => readConfig(top, source));
  if (problems.length > 0 || config === undefined) throw allProblems(top.ctx.source, problems);
  return config;
}

/**
 * One [[plugins]] entry on its own, read and checked as in a whole config (the same keys,
 * defaults, runtime and capability tables); no backend is named, so none need be registered.
 * `root` holds it as `plugins`, one entry.
 *
 * @throws LockhostError CONFIG_INVALID naming each key that breaks the schema.
 */
export function buildPlugin(root: Table): PluginConfig {
  const problems: LockhostError[] = [];
  const { plugins } = pluginList(root.collecting(problems));
  if (problems.length > 0 || plugins.length !== 1) throw allProblems(root.ctx.source, problems);
  return plugins[0]!;
}

function readConfig(root: Table, source: string | undefined): LockhostConfig {
  if (root.ctx.mode === "code") {
    root.onlyKeys(CODE_KEYS);
    // Read only to be type-checked: the caller has already taken both values.
    root.attempt(() => root.string("source"));
    root.attempt(() => root.nonEmptyString("baseDir"));
  } else {
    root.onlyKeys(["host", "locking", "plugins", "scheduled", "admin"]);
  }
  // Each part on its own: an error in one does not hide those of the next. What a failed part
  // returns (undefined) is never used: the errors are thrown before the config is.
  const host = root.attempt(() => readTable(root.emptyTable("host", "host"), HOST_SCHEMA));
  const locking = root.attempt(() => lockingConfig(root.emptyTable("locking", "locking")));
  const { plugins, names } = pluginList(root);
  const scheduled = scheduledList(root, names);
  const admin = root.attempt(() => adminSettings(root.table("admin", "admin")));
  return { ...(source === undefined ? {} : { source }), host: host!, locking: locking!, plugins, scheduled, ...(admin && { admin }) };
}

function lockingConfig(t: Table): LockingConfig {
  const names = backendNames();
  const since = t.recorded;
  t.onlyKeys([...Object.keys(LOCKING_SCHEMA.fields), "keepalive", "waiting", "delegation", ...names]);
  // A bad backend name is reported; the tables are still read, against the default's rules.
  const backend = t.attempt(() => t.oneOf("backend", names)) ?? CONFIG_DEFAULTS.backend;
  const packages = t.attempt(() => readFields(t, LOCKING_SCHEMA).packages);
  // Every backend's table is validated whatever the backend, so a typo in a standby backend's
  // settings is caught before a switch to it. The chosen one is read even when left out (its
  // defaults), so whoever opens the backend can rely on its settings being present.
  const tables: Record<string, unknown> = {};
  for (const name of names) {
    t.attempt(() => {
      const schema = backendDescriptor(name)!.config;
      const dotted = `locking.${name}`;
      const table = name === backend && hasFields(schema) ? t.emptyTable(name, dotted) : t.table(name, dotted);
      if (table) tables[name] = readTable(table, schema);
    });
  }
  const keepalive = t.attempt(() => keepaliveSettings(t.emptyTable("keepalive", "locking.keepalive")));
  const waiting = t.attempt(() => readTable(t.emptyTable("waiting", "locking.waiting"), WAITING_SCHEMA));
  const delegation = t.attempt(() => readTable(t.emptyTable("delegation", "locking.delegation"), DELEGATION_SCHEMA));
  t.stopIfFailedSince(since);
  return { backend, ...(packages && { packages }), ...tables, keepalive: keepalive!, waiting: waiting!, delegation: delegation! };
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
      `must be less than 1 - ${renewKey}, got ${safetyMarginRatio} with ${renewKey} = ${renewAtRatio}${whose}: a renewal must fall due before the ` +
        `safety margin starts`,
    );
  }
  return settings;
}

/** `[admin]`: present means the host starts the admin listener. */
function adminSettings(t: Table | undefined): AdminSettings | undefined {
  if (!t) return undefined;
  const since = t.recorded;
  checkKeys(t, ADMIN_SCHEMA);
  const listen = t.attempt(() => listenAddress(t));
  const fields = t.attempt(() => readFields(t, ADMIN_SCHEMA));
  t.stopIfFailedSince(since);
  const { token, auth, metricsOpen, certFile, keyFile, clientCaFile } = fields!;
  const file = (path: string | undefined): string | undefined => (path === undefined ? undefined : resolve(t.ctx.baseDir, path));
  return {
    listen: listen!,
    ...(token !== undefined && { token }),
    // Absent: the listener decides by where it listens (AdminAccess: "all" beyond loopback).
    ...(auth !== undefined && { auth }),
    ...(metricsOpen !== undefined && { metricsOpen }),
    ...(certFile !== undefined && { certFile: file(certFile)!, keyFile: file(keyFile)! }),
    ...(clientCaFile !== undefined && { clientCaFile: file(clientCaFile)! }),
  };
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

/**
 * The [[plugins]] entries, and every name an entry gives, also an entry with errors: a
 * schedule naming it is not refused for that (its errors are reported already).
 */
function pluginList(root: Table): { plugins: PluginConfig[]; names: Set<string> } {
  const seen = new Map<string, string>();
  const names = new Set<string>();
  const plugins: PluginConfig[] = [];
  for (const entry of root.attempt(() => root.entries("plugins")) ?? []) {
    const plugin = entry.attempt(() => pluginEntry(entry, seen, names));
    if (plugin) plugins.push(plugin);
  }
  return { plugins, names };
}

function pluginEntry(entry: Table, seen: Map<string, string>, names: Set<string>): PluginConfig {
  const since = entry.recorded;
  const name = entry.attempt(() => entry.string("name"));
  // A name that is not a string is reported as such, not as missing too.
  const nameRead = entry.recorded === since;
  if (name !== undefined) names.add(name);
  const t = entry.named(name);
  // A config built in code may hand back a loaded one, whose runtime is re-derived here.
  if (t.ctx.mode === "code") t.onlyKeys([...Object.keys(PLUGIN_SCHEMA.fields).map(keyOf), "runtime"]);
  else checkKeys(t, PLUGIN_SCHEMA);
  t.attempt(() => {
    if (name === undefined) return nameRead ? t.fail("name", "is required") : undefined;
    if (!PLUGIN_NAME_PATTERN.test(name)) {
      t.fail(
        "name",
        `must be 1 to 64 of lowercase letters, digits, '-', '_' and '.', optionally scoped as "@scope/name" (${PLUGIN_NAME_PATTERN}), got ${t.show(name)}`,
      );
    }
    if (RESERVED_PLUGIN_NAMES.has(name)) {
      t.fail("name", `${t.show(name)} is reserved (reserved names: ${[...RESERVED_PLUGIN_NAMES].join(", ")})`);
    }
    t.unique("name", name, seen);
  });
  const wasm = t.attempt(() => resolve(t.ctx.baseDir, t.nonEmptyString("wasm") ?? t.fail("wasm", "is required")));
  const fields = t.attempt(() => readFields(t, PLUGIN_SCHEMA));
  // Each capability's own table under the entry ([plugins.http]), read with its row's schema.
  const tables: Record<string, unknown> = {};
  for (const row of CAPABILITIES as readonly CapabilityRow[]) {
    if (!row.table) continue;
    const { key } = row.table;
    const value = t.attempt(() => capabilityTable(t.table(key, `plugins.${key}`)?.named(name), row.table!));
    if (value !== undefined) tables[key] = value;
  }
  const config = t.attempt(() => stringTable(t.table("config", "plugins.config")?.named(name)));
  const runtime = fields && t.attempt(() => guestRuntime(t, fields.isolation));
  t.stopIfFailedSince(since);
  return { ...(fields as Omit<PluginConfig, "name" | "wasm" | "config" | "runtime">), name: name!, wasm: wasm!, config: config!, ...tables, runtime: runtime! };
}

/** A capability's own table (`[plugins.http]`): present means the plugin is granted what it allows. */
function capabilityTable(t: Table | undefined, table: CapabilityTable): unknown {
  if (!t) return undefined;
  const since = t.recorded;
  // Its tables of strings (`[plugins.http.headers]`) are custom fields: read here, not by readTable.
  const rest = t.attempt(() => readTable(t, table.schema));
  const strings: Record<string, Record<string, string>> = {};
  for (const [key, problem] of Object.entries(table.strings ?? {})) {
    const value = t.attempt(() => stringTable(t.table(key, `plugins.${table.key}.${key}`)?.named(t.entryName), problem));
    if (value !== undefined) strings[key] = value;
  }
  t.stopIfFailedSince(since);
  return { ...(rest as object), ...strings };
}

/**
 * A table of strings (`[plugins.config]`, `[plugins.http.headers]`), `${ENV}` substituted; its
 * values are secrets as far as messages go: none ever shows one.
 */
function stringTable(t: Table | undefined, problem?: (key: string, value: string) => string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (!t) return out;
  const since = t.recorded;
  for (const key of t.keys()) {
    t.attempt(() => {
      const value = t.secret(key);
      // Its variable unset, for a caller that reads no secret (Ctx.secrets): left out.
      if (value === undefined) return;
      const bad = problem?.(key, value);
      if (bad !== undefined) t.fail(key, `${bad} (the value is not shown: it may be a secret)`);
      out[key] = value;
    });
  }
  t.stopIfFailedSince(since);
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
      `cannot be honoured with isolation = "inline": a guest on the host's thread cannot be stopped mid-call; remove it, or use isolation = "worker" ` +
        `(or "auto") for a time limit`,
    );
  }
  return "inline";
}

function scheduledList(root: Table, pluginNames: ReadonlySet<string>): ScheduledConfig[] {
  const seen = new Map<string, string>();
  const out: ScheduledConfig[] = [];
  for (const entry of root.attempt(() => root.entries("scheduled")) ?? []) {
    const scheduled = entry.attempt(() => scheduledEntry(entry, pluginNames, seen));
    if (scheduled) out.push(scheduled);
  }
  return out;
}

function scheduledEntry(entry: Table, pluginNames: ReadonlySet<string>, seen: Map<string, string>): ScheduledConfig {
  const since = entry.recorded;
  const givenId = entry.attempt(() => entry.string("id"));
  const plugin = entry.attempt(() => entry.string("plugin"));
  const givenExport = entry.attempt(() => entry.nonEmptyString("export"));
  // The id, and with it how the entry is named, derive from these: nothing more can be named without them.
  entry.stopIfFailedSince(since);
  // A short entry leaves out the schedule (and maybe the export): the plugin declares them.
  const given = entry.get("schedule");
  const short = given === undefined || (isTable(given) && given.kind === "declared");
  const exportName = givenExport ?? (short ? ALL_DECLARED : undefined);
  const derived = plugin !== undefined && exportName !== undefined ? (exportName === ALL_DECLARED ? plugin : `${plugin}.${exportName}`) : undefined;
  const id = givenId ?? derived;
  const t = entry.named(id);
  checkKeys(t, SCHEDULED_SCHEMA);
  t.attempt(() => {
    if (plugin === undefined) return t.fail("plugin", "is required");
    if (!pluginNames.has(plugin)) {
      const declared = pluginNames.size ? `declared: ${[...pluginNames].join(", ")}` : "none is declared";
      t.fail("plugin", `${t.show(plugin)} is not declared by any ${t.plural("plugins")} entry (${declared})`);
    }
  });
  t.attempt(() => {
    if (exportName === undefined) return t.fail("export", "is required when schedule is given (leave both out to run every schedule the plugin declares)");
    if (exportName === ALL_DECLARED && !short) t.fail("export", `may be "${ALL_DECLARED}" only without a schedule (every schedule the plugin declares)`);
  });
  // Without an id, the plugin or the export it derives from is missing, and said so above.
  if (id !== undefined) {
    t.attempt(() => {
      if (!SCHEDULE_ID.test(id)) {
        const why = givenId === undefined ? ` (derived from plugin and export; set id explicitly)` : "";
        t.fail("id", `must be 1 to 128 characters from A-Z a-z 0-9 . _ : - @ /, got ${t.show(id)}${why}`);
      }
      t.unique("id", id, seen);
    });
  }
  const schedule = t.attempt((): ScheduleSpec => (short ? { kind: "declared" } : scheduleSpec(t)));
  const fields = t.attempt(() => readFields(t, SCHEDULED_SCHEMA));
  t.stopIfFailedSince(since);
  return { ...fields!, id: id!, plugin: plugin!, export: exportName!, schedule: schedule! };
}

function scheduleSpec(t: Table): ScheduleSpec {
  if (t.ctx.mode === "code" && isTable(t.get("schedule"))) return scheduleSpecObject(t);
  const text = (t.string("schedule") ?? t.fail("schedule", "is required")).trim();
  const everyMs = parseDuration(text);
  if (everyMs !== undefined) return { kind: "interval", everyMs, text };
  const fields = text.split(/\s+/).length;
  if (text === "" || fields === 1) {
    t.fail(
      "schedule",
      `must be an interval ("500ms", "5s", "1m", "2h": a whole number greater than 0) or a cron expression of 5 or 6 fields, got ${t.show(text)}`,
    );
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
