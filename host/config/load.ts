// TOML file (or a plain object from code) -> validated, deep-frozen LockhostConfig. Both
// inputs go through the same checks; they differ only in key spelling (snake_case in TOML,
// camelCase in code), in how a table is named in messages, and in that only TOML strings get
// environment substitution. Every message names the file, the table and the key, because an
// operator reading it has the file open and nothing else.
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { Cron } from "croner";
import { parse as parseToml, TomlError } from "smol-toml";
import { MAX_TTL_MS } from "../../abi/status.js";
import { LockhostError } from "../errors.js";
import { PLUGIN_NAME_PATTERN, RESERVED_PLUGIN_NAMES } from "../locking/scope.js";
import { CONFIG_DEFAULTS } from "./defaults.js";
import { parseDuration } from "./duration.js";
import { expandEnv } from "./env.js";
import type {
  BackendKind,
  HostSettings,
  Isolation,
  LockhostConfig,
  LockingConfig,
  LockingHint,
  PgConfig,
  PluginConfig,
  RedisConfig,
  ScheduledConfig,
  ScheduleSpec,
} from "./types.js";

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
  };
  readonly plugins?: readonly PluginInput[];
  readonly scheduled?: readonly ScheduledInput[];
}

/**
 * Reads and validates a TOML config file. Relative wasm paths resolve against the file's folder.
 *
 * @param env variables for `${VAR}` substitution; defaults to `process.env`.
 * @throws LockhostError CONFIG_INVALID when the file cannot be read or is invalid.
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env): Promise<LockhostConfig> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw configError(`${path}: cannot read the config file (${readFailure(err)})`, err);
  }
  return parseConfig(text, { source: path, baseDir: dirname(resolve(path)), env });
}

/**
 * Validates the text of a TOML config. Pure: it reads no file and no process state.
 *
 * @param opts.source names the file in messages and is kept as LockhostConfig.source.
 * @param opts.baseDir the folder relative wasm paths resolve against.
 * @param opts.env variables for `${VAR}` substitution; when omitted, no variable is set.
 * @throws LockhostError CONFIG_INVALID naming the file, table and key at fault.
 */
export function parseConfig(
  text: string,
  opts: { source: string; baseDir: string; env?: NodeJS.ProcessEnv },
): LockhostConfig {
  let tree: Raw;
  try {
    tree = parseToml(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw tomlSyntaxError(opts.source, err);
  }
  const ctx: Ctx = { source: opts.source, mode: "toml", baseDir: opts.baseDir, env: opts.env ?? {} };
  return deepFreeze(build(new Table(ctx, "", "", tree), opts.source));
}

/**
 * Builds a config in code: applies the defaults and the same checks as parseConfig (keys are
 * the camelCase names of LockhostConfig; no environment substitution).
 *
 * @throws LockhostError CONFIG_INVALID naming the field at fault.
 */
export function resolveConfig(partial: ConfigInput): LockhostConfig {
  if (!isTable(partial)) throw configError(`config must be an object, got ${show(partial, "code")}`);
  const source = typeof partial.source === "string" ? partial.source : undefined;
  const baseDir = typeof partial.baseDir === "string" ? partial.baseDir : process.cwd();
  const ctx: Ctx = { source: source ?? "config", mode: "code", baseDir, env: undefined };
  return deepFreeze(build(new Table(ctx, "", "", partial as unknown as Raw), source));
}

/**
 * Masks the secrets a connection URL can carry (`user:pass@` and a `password=` query
 * parameter) anywhere in `text`, for messages and logs.
 */
export function redactUrlSecrets(text: string): string {
  return text
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s/@:"'`]*):[^\s/"'`]*@/gi, "$1:***@")
    .replace(/([?&]password=)[^&#\s"'`]*/gi, "$1***");
}

// ---------------------------------------------------------------------------------------------
// The schema

const LIMITS = {
  memoryLimitMib: [1, 4096],
  callTimeoutMs: [1, 3_600_000],
  shutdownTimeoutMs: [0, 3_600_000],
  ttlMs: [1, MAX_TTL_MS],
  everyMs: [1, Number.MAX_SAFE_INTEGER],
} as const satisfies Record<string, readonly [number, number]>;

// Records keyed by the union types, so adding a member to a union in types.ts fails to compile
// here until the loader accepts it.
const BACKENDS = keysOf<BackendKind>({ memory: 1, redis: 1, pg: 1 });
const ISOLATIONS = keysOf<Isolation>({ worker: 1, inline: 1 });
const HINTS = keysOf<LockingHint>({ node_local: 1, require_global: 1, prefer_global: 1 });
const LOG_LEVELS = keysOf<HostSettings["logLevel"]>({
  trace: 1, debug: 1, info: 1, warn: 1, error: 1, fatal: 1, silent: 1,
});

const SCHEDULE_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const REDIS_SCHEMES = ["redis", "rediss"] as const;
const PG_SCHEMES = ["postgres", "postgresql"] as const;

/** A key's TOML name and code name; a plain string when both are spelled the same. */
type Key = string | readonly [toml: string, code: string];

const K = {
  shutdownTimeoutMs: ["shutdown_timeout_ms", "shutdownTimeoutMs"],
  logLevel: ["log_level", "logLevel"],
  keyPrefix: ["key_prefix", "keyPrefix"],
  memoryLimitMib: ["memory_limit_mib", "memoryLimitMib"],
  callTimeoutMs: ["call_timeout_ms", "callTimeoutMs"],
  globalKeys: ["global_keys", "globalKeys"],
  ttlMs: ["ttl_ms", "ttlMs"],
} as const satisfies Record<string, Key>;

function build(root: Table, source: string | undefined): LockhostConfig {
  if (root.ctx.mode === "code") {
    root.onlyKeys(["source", "baseDir", "host", "locking", "plugins", "scheduled"]);
    root.string("source");
    root.nonEmptyString("baseDir");
  } else {
    root.onlyKeys(["host", "locking", "plugins", "scheduled"]);
  }
  const host = hostSettings(root.table("host", "host"));
  const locking = lockingConfig(root.table("locking", "locking"));
  const plugins = pluginList(root);
  const scheduled = scheduledList(root, new Set(plugins.map((p) => p.name)));
  return { ...(source === undefined ? {} : { source }), host, locking, plugins, scheduled };
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

function lockingConfig(t: Table | undefined): LockingConfig {
  t?.onlyKeys(["backend", "redis", "pg"]);
  const backend = t?.oneOf("backend", BACKENDS) ?? CONFIG_DEFAULTS.backend;
  const redisTable = t?.table("redis", "locking.redis");
  const pgTable = t?.table("pg", "locking.pg");
  // A backend named without its table runs on the defaults, so whoever opens the backend can
  // rely on its settings being present.
  const redis = redisTable ? redisConfig(redisTable) : backend === "redis" ? { ...CONFIG_DEFAULTS.redis } : undefined;
  const pg = pgTable ? pgConfig(pgTable) : backend === "pg" ? { ...CONFIG_DEFAULTS.pg } : undefined;
  return { backend, ...(redis && { redis }), ...(pg && { pg }) };
}

function redisConfig(t: Table): RedisConfig {
  t.onlyKeys(["url", K.keyPrefix]);
  return {
    url: t.url("url", REDIS_SCHEMES) ?? CONFIG_DEFAULTS.redis.url,
    keyPrefix: t.string(K.keyPrefix) ?? CONFIG_DEFAULTS.redis.keyPrefix,
  };
}

function pgConfig(t: Table): PgConfig {
  t.onlyKeys(["url"]);
  return { url: t.url("url", PG_SCHEMES) ?? CONFIG_DEFAULTS.pg.url };
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
    const first = seen.get(name);
    if (first !== undefined) t.fail("name", `${t.show(name)} is already used by ${first}`);
    seen.set(name, t.label);
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
    t.onlyKeys(["id", "plugin", "export", "schedule", "hint", K.ttlMs]);
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
    const first = seen.get(id);
    if (first !== undefined) t.fail("id", `${t.show(id)} is already used by ${first}`);
    seen.set(id, t.label);
    const d = CONFIG_DEFAULTS.scheduled;
    return {
      id,
      plugin,
      export: exportName,
      schedule: scheduleSpec(t),
      hint: t.oneOf("hint", HINTS) ?? d.hint,
      ttlMs: t.int(K.ttlMs, LIMITS.ttlMs) ?? d.ttlMs,
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

// ---------------------------------------------------------------------------------------------
// Reading raw values with messages that point at them

type Raw = { readonly [key: string]: unknown };

interface Ctx {
  readonly source: string;
  readonly mode: "toml" | "code";
  readonly baseDir: string;
  /** Set for TOML only: objects built in code get no substitution. */
  readonly env: NodeJS.ProcessEnv | undefined;
}

/** One table of the input, with what is needed to name it in messages. */
class Table {
  constructor(
    readonly ctx: Ctx,
    /** How messages name this table: `[[plugins]] #2 ("report")` or `plugins[1] ("report")`; "" for the root. */
    readonly label: string,
    /** Its dotted TOML path ("locking.redis"), for naming unknown sub-tables. */
    private readonly header: string,
    private readonly raw: Raw,
  ) {}

  /** The same table, labelled with its entry's name once that is known. */
  named(name: string | undefined): Table {
    return name === undefined ? this : new Table(this.ctx, `${this.label} (${this.show(name)})`, this.header, this.raw);
  }

  get(key: Key): unknown {
    const name = this.nameOf(key);
    return Object.hasOwn(this.raw, name) ? this.raw[name] : undefined;
  }

  fail(key: Key, problem: string): never {
    throw configError(`${this.where(key)} ${problem}`);
  }

  /** `[[plugins]]` in TOML, `plugins` in code. */
  plural(key: string): string {
    return this.ctx.mode === "toml" ? `[[${key}]]` : key;
  }

  show(value: unknown): string {
    return show(value, this.ctx.mode);
  }

  /** Rejects any key not in `keys`, suggesting the nearest known one. */
  onlyKeys(keys: readonly Key[]): void {
    const known = keys.map((k) => this.nameOf(k));
    for (const name of Object.keys(this.raw)) {
      if (known.includes(name) || this.raw[name] === undefined) continue;
      const value = this.raw[name];
      const guess = nearest(name, known);
      const what =
        this.ctx.mode === "code" ? `unknown key "${name}"`
        : isTable(value) ? `unknown table [${this.header ? `${this.header}.` : ""}${name}]`
        : Array.isArray(value) && value.length > 0 && value.every(isTable) ? `unknown table [[${name}]]`
        : `unknown key "${name}"`;
      const hint = guess ? `did you mean "${guess}"? ` : "";
      throw configError(`${this.prefix()}${what} (${hint}known: ${known.join(", ")})`);
    }
  }

  table(key: string, dotted: string): Table | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (!isTable(value)) this.fail(key, `must be a table, got ${this.show(value)}`);
    const label = this.ctx.mode === "toml" ? `[${dotted}]` : dotted;
    return new Table(this.ctx, label, dotted, value);
  }

  /** The entries of an array of tables (`[[plugins]]`); none when absent. */
  entries(key: string): Table[] {
    const value = this.get(key);
    if (value === undefined) return [];
    if (!Array.isArray(value)) this.fail(key, `must be an array of tables (${this.plural(key)}), got ${this.show(value)}`);
    return value.map((item: unknown, i) => {
      const label = this.ctx.mode === "toml" ? `[[${key}]] #${i + 1}` : `${key}[${i}]`;
      if (!isTable(item)) throw configError(`${this.ctx.source}: ${label} must be a table, got ${this.show(item)}`);
      return new Table(this.ctx, label, key, item);
    });
  }

  string(key: Key): string | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (typeof value !== "string") this.fail(key, `must be a string, got ${this.show(value)}`);
    return this.expand(value, () => this.where(key));
  }

  nonEmptyString(key: Key): string | undefined {
    const value = this.string(key);
    if (value === "") this.fail(key, "must not be empty");
    return value;
  }

  /** A list of non-empty strings. */
  stringList(key: Key): string[] | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (!Array.isArray(value)) this.fail(key, `must be an array of strings, got ${this.show(value)}`);
    return value.map((item: unknown, i) => {
      const where = () => `${this.where(key)}[${i}]`;
      if (typeof item !== "string" || item === "") {
        throw configError(`${where()} must be a non-empty string, got ${this.show(item)}`);
      }
      const expanded = this.expand(item, where);
      if (expanded === "") throw configError(`${where()} must not be empty (after substitution)`);
      return expanded;
    });
  }

  int(key: Key, [min, max]: readonly [number, number]): number | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      this.fail(key, `must be an integer from ${min} to ${max}, got ${this.show(value)}`);
    }
    return value;
  }

  oneOf<T extends string>(key: Key, allowed: readonly T[]): T | undefined {
    const value = this.string(key);
    if (value === undefined) return undefined;
    if (!(allowed as readonly string[]).includes(value)) {
      this.fail(key, `must be one of ${allowed.map((a) => `"${a}"`).join(", ")}, got ${this.show(value)}`);
    }
    return value as T;
  }

  /** A URL whose scheme is one of `schemes` and which has `//` (an authority). */
  url(key: Key, schemes: readonly string[]): string | undefined {
    const value = this.string(key);
    if (value === undefined) return undefined;
    const wanted = schemes.map((s) => `${s}://`).join(" or ");
    const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(value)?.[1]?.toLowerCase();
    if (scheme === undefined || !schemes.includes(scheme)) this.fail(key, `must be a ${wanted} URL, got ${this.show(value)}`);
    if (!URL.canParse(value)) this.fail(key, `is not a valid URL, got ${this.show(value)}`);
    return value;
  }

  private expand(value: string, where: () => string): string {
    return this.ctx.env === undefined ? value : expandEnv(value, this.ctx.env, where);
  }

  private nameOf(key: Key): string {
    return typeof key === "string" ? key : this.ctx.mode === "toml" ? key[0] : key[1];
  }

  private prefix(): string {
    return this.label ? `${this.ctx.source}: ${this.label}: ` : `${this.ctx.source}: `;
  }

  private where(key: Key): string {
    return `${this.prefix()}${this.nameOf(key)}`;
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function configError(message: string, cause?: unknown): LockhostError {
  return new LockhostError("CONFIG_INVALID", redactUrlSecrets(message), cause === undefined ? undefined : { cause });
}

function tomlSyntaxError(source: string, err: unknown): LockhostError {
  if (!(err instanceof TomlError)) {
    return configError(`${source}: cannot parse TOML: ${err instanceof Error ? err.message : String(err)}`);
  }
  const reason = err.message.replace(/^Invalid TOML document: /, "").split("\n", 1)[0];
  // No cause: the parser's own message quotes the file's lines unredacted.
  return configError(
    `${source}: TOML syntax error at line ${err.line}, column ${err.column}: ${reason}\n\n${err.codeblock.trimEnd()}`,
  );
}

function readFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a directory";
  return err instanceof Error ? err.message : String(err);
}

function isTable(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** A value as a message shows it: strings quoted, shortened and with URL secrets masked. */
function show(value: unknown, mode: Ctx["mode"]): string {
  if (typeof value === "string") {
    const safe = redactUrlSecrets(value);
    return JSON.stringify(safe.length > 80 ? `${safe.slice(0, 77)}...` : safe);
  }
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (value instanceof Date) return "a date";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return mode === "toml" ? "a table" : "an object";
  return String(value);
}

/** The known key a mistyped one most likely meant, if any is close. */
function nearest(name: string, known: readonly string[]): string | undefined {
  const norm = (s: string) => s.toLowerCase().replace(/[_-]/g, "");
  const n = norm(name);
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const c = norm(candidate);
    // A dropped suffix ("memory_limit" for "memory_limit_mib") is as likely as a typo.
    const d = n.length >= 3 && c.startsWith(n) ? 1 : editDistance(n, c);
    if (d <= Math.max(2, Math.floor(c.length / 4)) && d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      row[j] = Math.min((prev[j] as number) + 1, (row[j - 1] as number) + 1, (prev[j - 1] as number) + cost);
    }
    prev = row;
  }
  return prev[b.length] as number;
}

function keysOf<T extends string>(record: Record<T, 1>): readonly T[] {
  return Object.keys(record) as T[];
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
