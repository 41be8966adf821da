// The config loader: a TOML file (or an object built in code) becomes a validated, frozen
// LockhostConfig, and every mistake an operator can make is named by file, table and key.
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { hostname, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MAX_TTL_MS } from "../abi/status.js";
import { AdminAccess } from "../host/admin/access.js";
import { CONFIG_DEFAULTS } from "../host/config/defaults.js";
import { formatListen, isLoopbackHost, parseListen } from "../host/config/listen.js";
import { parseDuration } from "../host/config/duration.js";
import { expandEnv } from "../host/config/env.js";
import { loadConfig, parseConfig, resolveConfig } from "../host/config/load.js";
import type { LockhostConfig } from "../host/config/types.js";
import { LockhostError } from "../kit/errors.js";
import { KEEPALIVE_DEFAULTS, WAITING_DEFAULTS } from "../host/locking/options.js";
import { redactUrlSecrets } from "../kit/redact.js";

const SOURCE = "lockhost.toml";
const BASE = resolve("/srv/lockhost");

function parse(text: string, env: NodeJS.ProcessEnv = {}): LockhostConfig {
  return parseConfig(text, { source: SOURCE, baseDir: BASE, env });
}

/** The CONFIG_INVALID error `fn` throws. */
function configErrorOf(fn: () => unknown): LockhostError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(LockhostError);
    expect((err as LockhostError).code).toBe("CONFIG_INVALID");
    return err as LockhostError;
  }
  throw new Error("expected a CONFIG_INVALID error, but nothing was thrown");
}

function messageOf(text: string, env: NodeJS.ProcessEnv = {}): string {
  return configErrorOf(() => parse(text, env)).message;
}

function expectDeepFrozen(value: unknown, path = "config"): void {
  if (typeof value !== "object" || value === null) return;
  expect(Object.isFrozen(value), `${path} is frozen`).toBe(true);
  for (const [key, child] of Object.entries(value)) expectDeepFrozen(child, `${path}.${key}`);
}

/** The documented defaults of [locking.keepalive] and [locking.waiting], written out. */
const KEEPALIVE = { renewAtRatio: 0.5, maxRetries: 3, safetyMarginRatio: 0.1, batchWindowMs: 20 };
const WAITING = { pollIntervalMs: 1000, electionPollMs: 20 };
const DELEGATION = { enabled: false, fenceBlock: 1024, minHoldMs: 0, wantedHandoffs: 0, maxHoldMs: 1000, wantedMs: 200 };

const PLUGIN = `
[[plugins]]
name = "report"
wasm = "report.wasm"
`;

describe("parseConfig: a valid file", () => {
  it("reads every field, resolves the wasm path, applies defaults and freezes the result", () => {
    const config = parse(
      `
[host]
node = "node-a"
shutdown_timeout_ms = 2500
log_level = "debug"

[locking]
backend = "redis"
[locking.redis]
url = "rediss://cache.internal:6380/2"
key_prefix = "app:"
command_timeout_ms = 500
reclaim_own_locks = true
[locking.pg]
url = "postgresql://app@db.internal:5432/locks"
sessions = 8
table = "locks.lockhost"
command_timeout_ms = 750
[locking.keepalive]
renew_at_ratio = 0.6
max_retries = 5
safety_margin_ratio = 0.2
batch_window_ms = 50
[locking.waiting]
poll_interval_ms = 250

[admin]
listen = "[::1]:9999"
token = "\${ADMIN_TOKEN}"

[[plugins]]
name = "report"
wasm = "plugins/guests/build/report.wasm"
isolation = "auto"
memory_limit_mib = 64
call_timeout_ms = 1000
instances = 4
global_keys = ["ledger", "shared-*"]
wasi = true

[[plugins]]
name = "cleanup_2"
wasm = "/opt/guests/cleanup.wasm"

[[scheduled]]
id = "report.run"
plugin = "report"
export = "run"
schedule = "5s"
hint = "prefer_global"
ttl_ms = 30000
keepalive = true
fair = true

[[scheduled]]
plugin = "cleanup_2"
export = "sweep"
schedule = "  */15 * * * *  "
`,
      { ADMIN_TOKEN: "admin-token-0123456789" },
    );
    expect(config).toEqual({
      source: SOURCE,
      host: { node: "node-a", shutdownTimeoutMs: 2500, logLevel: "debug" },
      locking: {
        backend: "redis",
        redis: {
          url: "rediss://cache.internal:6380/2",
          keyPrefix: "app:",
          commandTimeoutMs: 500,
          reclaimOwnLocks: true,
          cluster: false,
          tls: false,
          caFile: "",
          certFile: "",
          keyFile: "",
          servername: "",
        },
        pg: {
          url: "postgresql://app@db.internal:5432/locks",
          sessions: 8,
          table: "locks.lockhost",
          commandTimeoutMs: 750,
          tls: false,
          caFile: "",
          certFile: "",
          keyFile: "",
          servername: "",
        },
        keepalive: { renewAtRatio: 0.6, maxRetries: 5, safetyMarginRatio: 0.2, batchWindowMs: 50 },
        waiting: { pollIntervalMs: 250, electionPollMs: 20 },
        delegation: DELEGATION,
      },
      plugins: [
        {
          name: "report",
          wasm: resolve(BASE, "plugins/guests/build/report.wasm"),
          isolation: "auto",
          // A time limit is set, which only the worker runtime can honour.
          runtime: "worker",
          abi: "auto",
          memoryLimitMib: 64,
          callTimeoutMs: 1000,
          instances: 4,
          globalKeys: ["ledger", "shared-*"],
          functions: [],
          config: {},
          wasi: true,
        },
        {
          name: "cleanup_2",
          wasm: resolve("/opt/guests/cleanup.wasm"),
          isolation: "worker",
          runtime: "worker",
          abi: "auto",
          memoryLimitMib: 16,
          callTimeoutMs: 5000,
          instances: 1,
          globalKeys: [],
          functions: [],
          config: {},
          wasi: false,
        },
      ],
      scheduled: [
        {
          id: "report.run",
          plugin: "report",
          export: "run",
          schedule: { kind: "interval", everyMs: 5000, text: "5s" },
          hint: "prefer_global",
          ttlMs: 30000,
          keepalive: true,
          fair: true,
        },
        {
          id: "cleanup_2.sweep",
          plugin: "cleanup_2",
          export: "sweep",
          schedule: { kind: "cron", expression: "*/15 * * * *" },
          hint: "require_global",
          ttlMs: 60000,
          keepalive: false,
          fair: false,
        },
      ],
      admin: { listen: { host: "::1", port: 9999 }, token: "admin-token-0123456789" },
    });
    expectDeepFrozen(config);
  });

  it("gives an empty file the defaults: memory backend, hostname as node, no plugins", () => {
    const config = parse("");
    expect(config).toEqual({
      source: SOURCE,
      host: { node: hostname(), shutdownTimeoutMs: 10000, logLevel: "info" },
      locking: { backend: "memory", keepalive: KEEPALIVE, waiting: WAITING, delegation: DELEGATION },
      plugins: [],
      scheduled: [],
    });
    expect("admin" in config).toBe(false);
    expectDeepFrozen(config);
  });

  it("fills a named backend's settings with defaults when its table is left out", () => {
    expect(parse(`[locking]\nbackend = "redis"`).locking).toEqual({
      backend: "redis",
      redis: {
        url: "redis://127.0.0.1:6379",
        keyPrefix: "lockhost:",
        commandTimeoutMs: 2000,
        reclaimOwnLocks: false,
        cluster: false,
        tls: false,
        caFile: "",
        certFile: "",
        keyFile: "",
        servername: "",
      },
      keepalive: KEEPALIVE,
      waiting: WAITING,
      delegation: DELEGATION,
    });
    expect(parse(`[locking]\nbackend = "pg"`).locking).toEqual({
      backend: "pg",
      pg: {
        url: "postgres://postgres@127.0.0.1:5432/test",
        sessions: 4,
        table: "lockhost_locks",
        commandTimeoutMs: 2000,
        tls: false,
        caFile: "",
        certFile: "",
        keyFile: "",
        servername: "",
      },
      keepalive: KEEPALIVE,
      waiting: WAITING,
      delegation: DELEGATION,
    });
  });

  it("validates a backend's table whatever the backend, filling its missing keys", () => {
    expect(parse(`[locking.redis]\nkey_prefix = "x:"`).locking).toEqual({
      backend: "memory",
      redis: {
        url: "redis://127.0.0.1:6379",
        keyPrefix: "x:",
        commandTimeoutMs: 2000,
        reclaimOwnLocks: false,
        cluster: false,
        tls: false,
        caFile: "",
        certFile: "",
        keyFile: "",
        servername: "",
      },
      keepalive: KEEPALIVE,
      waiting: WAITING,
      delegation: DELEGATION,
    });
    expect(messageOf(`[locking]\nbackend = "memory"\n[locking.pg]\nurl = "mysql://db"`)).toContain("[locking.pg]: url");
  });

  it("takes an empty key_prefix and an empty global_keys list", () => {
    const config = parse(`[locking.redis]\nkey_prefix = ""\n${PLUGIN}global_keys = []`);
    expect(config.locking.redis?.keyPrefix).toBe("");
    expect(config.plugins[0]?.globalKeys).toEqual([]);
  });

  it("takes npm-style scoped plugin names, in plugins and in schedules", () => {
    const config = parse(
      `[[plugins]]\nname = "@acme/cron"\nwasm = "cron.wasm"\nglobal_keys = ["ledger"]\n[[scheduled]]\nid = "acme.nightly"\nplugin = ` +
        `"@acme/cron"\nexport = "run"\nschedule = "5s"`,
    );
    expect(config.plugins[0]!.name).toBe("@acme/cron");
    expect(config.scheduled[0]!.plugin).toBe("@acme/cron");
    const derived = parse(`[[plugins]]\nname = "@acme/cron"\nwasm = "cron.wasm"\n[[scheduled]]\nplugin = "@acme/cron"\nexport = "run"\nschedule = "5s"`);
    expect(derived.scheduled[0]!.id).toBe("@acme/cron.run");
  });

  it("freezes its defaults", () => {
    expectDeepFrozen(CONFIG_DEFAULTS, "CONFIG_DEFAULTS");
    expect(CONFIG_DEFAULTS.host.node).toBe(hostname());
  });
});

describe("every config error at once", () => {
  it("reports every error of a file in one CONFIG_INVALID, a line each, each naming the file, table and key", () => {
    const err = configErrorOf(() =>
      parse(`
verbose = true

[host]
shutdown_timeout_ms = -1
log_level = "loud"

[locking.redis]
command_timeout_ms = 0

[[plugins]]
name = "report"
wasm = "r.wasm"
memory_limit_mib = 0
global_keys = ["ok", ""]
colour = "blue"

[[plugins]]
name = "cleanup"

[[scheduled]]
plugin = "report"
export = "run"
schedule = "5d"
hint = "sometimes"

[admin]
listen = "nowhere"
`),
    );
    const lines = [
      `lockhost.toml: unknown key "verbose" (known: host, locking, plugins, scheduled, admin)`,
      "lockhost.toml: [host]: shutdown_timeout_ms must be an integer from 0 to 3600000, got -1",
      `lockhost.toml: [host]: log_level must be one of "trace", "debug", "info", "warn", "error", "fatal", "silent", got "loud"`,
      "lockhost.toml: [locking.redis]: command_timeout_ms must be an integer from 1 to 600000, got 0",
      `lockhost.toml: [[plugins]] #1 ("report"): unknown key "colour"`,
      `lockhost.toml: [[plugins]] #1 ("report"): memory_limit_mib must be an integer from 1 to 4096, got 0`,
      `lockhost.toml: [[plugins]] #1 ("report"): global_keys[1] must be a non-empty string, got ""`,
      `lockhost.toml: [[plugins]] #2 ("cleanup"): wasm is required`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): schedule must be an interval`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): hint must be one of`,
      "lockhost.toml: [admin]: listen",
    ];
    const [first, ...rest] = err.message.split("\n");
    expect(first).toBe(`lockhost.toml: ${lines.length} errors:`);
    expect(rest).toHaveLength(lines.length);
    rest.forEach((line, i) => expect(line).toContain(`  ${lines[i]}`));
    expect(err.details).toEqual({ errors: lines.length });
    // Each error on its own, for code that handles them one by one.
    expect(err.cause).toBeInstanceOf(AggregateError);
    const each = (err.cause as AggregateError).errors as LockhostError[];
    expect(each.map((e) => e.code)).toEqual(lines.map(() => "CONFIG_INVALID"));
    expect(each.map((e) => `  ${e.message}`)).toEqual(rest);
  });

  it("reports no error that only follows from another", () => {
    // A plugin whose name is bad is still declared for its schedule; a schedule without a plugin
    // gets no id error; a ratio out of range gets no margin error; a bad backend name no more.
    const message = messageOf(`
[locking]
backend = "zookeeper"
[locking.keepalive]
renew_at_ratio = 2
[[plugins]]
name = "Report"
wasm = "r.wasm"
[[scheduled]]
plugin = "Report"
export = "run"
schedule = "1s"
[[scheduled]]
export = "run"
schedule = "1s"
`);
    expect(message.split("\n").slice(1)).toEqual([
      `  lockhost.toml: [locking]: backend must be one of "memory", "redis", "pg", "etcd", got "zookeeper"`,
      "  lockhost.toml: [locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got 2",
      expect.stringContaining(`  lockhost.toml: [[plugins]] #1 ("Report"): name must be 1 to 64 of lowercase letters`),
      "  lockhost.toml: [[scheduled]] #2: plugin is required",
    ]);
  });

  it("keeps the message of a config with one error as it was", () => {
    expect(messageOf(`[host]\nshutdown_timeout_ms = -1`)).toBe("lockhost.toml: [host]: shutdown_timeout_ms must be an integer from 0 to 3600000, got -1");
  });

  it("reports every error of a config built in code too", () => {
    const err = configErrorOf(() =>
      resolveConfig({ source: "app", host: { shutdownTimeoutMs: -1 }, plugins: [{ name: "a", wasm: "a.wasm", memoryLimitMib: 0 }] } as never),
    );
    expect(err.message.split("\n")).toEqual([
      "app: 2 errors:",
      "  app: host: shutdownTimeoutMs must be an integer from 0 to 3600000, got -1",
      `  app: plugins[0] ("a"): memoryLimitMib must be an integer from 1 to 4096, got 0`,
    ]);
  });
});

describe("parseConfig: errors name the file, the table and the key", () => {
  it("matches the documented message form exactly", () => {
    const message = messageOf(`
[[plugins]]
name = "cleanup"
wasm = "c.wasm"

[[plugins]]
name = "report"
wasm = "r.wasm"
memory_limit_mib = "16MB"
`);
    expect(message).toBe(`lockhost.toml: [[plugins]] #2 ("report"): memory_limit_mib must be an integer from 1 to 4096, got "16MB"`);
  });

  const cases: [title: string, toml: string, ...expected: string[]][] = [
    // Unknown tables and keys
    ["an unknown top-level table", `[hots]\nnode = "a"`, "lockhost.toml: unknown table [hots]", `did you mean "host"?`],
    ["an unknown top-level key", `verbose = true`, `lockhost.toml: unknown key "verbose"`, "known: host, locking, plugins, scheduled, admin"],
    ["an unknown array of tables", `[[plugin]]\nname = "a"`, "lockhost.toml: unknown table [[plugin]]", `did you mean "plugins"?`],
    ["an unknown key in [host]", `[host]\nlog-level = "info"`, `lockhost.toml: [host]: unknown key "log-level"`, `did you mean "log_level"?`],
    ["an unknown key in [locking]", `[locking]\nbakend = "redis"`, `lockhost.toml: [locking]: unknown key "bakend"`, `did you mean "backend"?`],
    [
      "an unknown sub-table of [locking]",
      `[locking.redsi]\nurl = "redis://h"`,
      "lockhost.toml: [locking]: unknown table [locking.redsi]",
      `did you mean "redis"?`,
    ],
    ["an unknown key in [locking.redis]", `[locking.redis]\nprefix = "x"`, `lockhost.toml: [locking.redis]: unknown key "prefix"`],
    ["an unknown key in [locking.pg]", `[locking.pg]\npool = 3`, `lockhost.toml: [locking.pg]: unknown key "pool"`],
    [
      "an unknown key in a plugin",
      `${PLUGIN}memory_limit = 8`,
      `lockhost.toml: [[plugins]] #1 ("report"): unknown key "memory_limit"`,
      `did you mean "memory_limit_mib"?`,
    ],
    ["a camelCase key in TOML", `${PLUGIN}memoryLimitMib = 8`, `unknown key "memoryLimitMib"`, `did you mean "memory_limit_mib"?`],
    [
      "an unknown key in a schedule",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nttl = 5`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): unknown key "ttl"`,
    ],
    // [host]
    ["[host] that is not a table", `host = "a"`, `lockhost.toml: host must be a table, got "a"`],
    ["an empty node", `[host]\nnode = ""`, "lockhost.toml: [host]: node must be 1 to 255 characters", `got ""`],
    ["a node that is not a string", `[host]\nnode = 7`, "lockhost.toml: [host]: node must be a string, got 7"],
    [
      "a negative shutdown_timeout_ms",
      `[host]\nshutdown_timeout_ms = -1`,
      "lockhost.toml: [host]: shutdown_timeout_ms must be an integer from 0 to 3600000, got -1",
    ],
    ["a shutdown_timeout_ms with a unit", `[host]\nshutdown_timeout_ms = "10s"`, `[host]: shutdown_timeout_ms must be an integer from 0 to 3600000, got "10s"`],
    [
      "an unknown log_level",
      `[host]\nlog_level = "verbose"`,
      `lockhost.toml: [host]: log_level must be one of "trace", "debug", "info", "warn", "error", "fatal", "silent", got "verbose"`,
    ],
    // [locking]
    [
      "an unknown backend",
      `[locking]\nbackend = "zookeeper"`,
      `lockhost.toml: [locking]: backend must be one of "memory", "redis", "pg", "etcd", got "zookeeper"`,
    ],
    ["a backend that is not a string", `[locking]\nbackend = 1`, "lockhost.toml: [locking]: backend must be a string, got 1"],
    ["[locking.redis] that is not a table", `[locking]\nredis = "redis://h"`, `lockhost.toml: [locking]: redis must be a table, got "redis://h"`],
    [
      "a redis url of another scheme",
      `[locking.redis]\nurl = "http://h:6379"`,
      `lockhost.toml: [locking.redis]: url must be a redis:// or rediss:// URL, got "http://h:6379"`,
    ],
    ["a redis url without //", `[locking.redis]\nurl = "redis:h"`, "[locking.redis]: url must be a redis:// or rediss:// URL"],
    [
      "a redis url that does not parse",
      `[locking.redis]\nurl = "redis://h:99999"`,
      `lockhost.toml: [locking.redis]: url is not a valid URL (percent-encode "/", "?", "#" and "@" in a user name or password (%2F, %3F, %23, ` +
        `%40)), got "redis://h:99999"`,
    ],
    ["a redis url that is not a string", `[locking.redis]\nurl = 6379`, "lockhost.toml: [locking.redis]: url must be a string, got 6379"],
    ["a key_prefix that is not a string", `[locking.redis]\nkey_prefix = 5`, "lockhost.toml: [locking.redis]: key_prefix must be a string, got 5"],
    [
      "a key_prefix with a brace",
      `[locking.redis]\nkey_prefix = "a{b}:"`,
      `lockhost.toml: [locking.redis]: key_prefix must not contain "{" or "}", got "a{b}:"`,
    ],
    [
      "a command_timeout_ms of 0",
      `[locking.redis]\ncommand_timeout_ms = 0`,
      "lockhost.toml: [locking.redis]: command_timeout_ms must be an integer from 1 to 600000, got 0",
    ],
    [
      "a reclaim_own_locks that is not a boolean",
      `[locking.redis]\nreclaim_own_locks = "yes"`,
      `lockhost.toml: [locking.redis]: reclaim_own_locks must be true or false, got "yes"`,
    ],
    ["a cluster that is not a boolean", `[locking.redis]\ncluster = 1`, "lockhost.toml: [locking.redis]: cluster must be true or false, got 1"],
    ["too many pg sessions", `[locking.pg]\nsessions = 65`, "lockhost.toml: [locking.pg]: sessions must be an integer from 1 to 64, got 65"],
    [
      "a pg table that is not an identifier",
      `[locking.pg]\ntable = "locks; drop table x"`,
      `lockhost.toml: [locking.pg]: table must be a lowercase SQL identifier`,
    ],
    [
      "a pg url of another scheme",
      `[locking.pg]\nurl = "mysql://db/x"`,
      `lockhost.toml: [locking.pg]: url must be a postgres:// or postgresql:// URL, got "mysql://db/x"`,
    ],
    // [[plugins]]
    ["plugins that are not an array", `plugins = "report"`, `lockhost.toml: plugins must be an array of tables ([[plugins]]), got "report"`],
    ["[plugins] as a single table", `[plugins]\nname = "a"`, "lockhost.toml: plugins must be an array of tables ([[plugins]]), got a table"],
    ["a plugin entry that is not a table", `plugins = [1]`, "lockhost.toml: [[plugins]] #1 must be a table, got 1"],
    ["a plugin without a name", `[[plugins]]\nwasm = "a.wasm"`, "lockhost.toml: [[plugins]] #1: name is required"],
    ["a plugin name that is not a string", `[[plugins]]\nname = 3\nwasm = "a.wasm"`, "lockhost.toml: [[plugins]] #1: name must be a string, got 3"],
    [
      "a plugin name with capitals",
      `[[plugins]]\nname = "Report"\nwasm = "a.wasm"`,
      `lockhost.toml: [[plugins]] #1 ("Report"): name must be 1 to 64 of lowercase letters, digits, '-', '_' and '.', optionally scoped as "@scope/name"`,
      `got "Report"`,
    ],
    [
      "a scoped plugin name with capitals",
      `[[plugins]]\nname = "@Acme/cron"\nwasm = "a.wasm"`,
      `[[plugins]] #1 ("@Acme/cron"): name must be 1 to 64 of lowercase letters`,
    ],
    ["a scope without a name", `[[plugins]]\nname = "@acme/"\nwasm = "a.wasm"`, `[[plugins]] #1 ("@acme/"): name must be 1 to 64`],
    ["a '/' without a scope", `[[plugins]]\nname = "acme/cron"\nwasm = "a.wasm"`, `[[plugins]] #1 ("acme/cron"): name must be 1 to 64`],
    ["a plugin name over 64 characters", `[[plugins]]\nname = "@acme/${"x".repeat(59)}"\nwasm = "a.wasm"`, `name must be 1 to 64`],
    ["a plugin name with ':'", `[[plugins]]\nname = "a:b"\nwasm = "a.wasm"`, `[[plugins]] #1 ("a:b"): name must be 1 to 64`],
    ["a reserved plugin name", `[[plugins]]\nname = "global"\nwasm = "a.wasm"`, `lockhost.toml: [[plugins]] #1 ("global"): name "global" is reserved`],
    ["a duplicate plugin name", `${PLUGIN}${PLUGIN}`, `lockhost.toml: [[plugins]] #2 ("report"): name "report" is already used by [[plugins]] #1 ("report")`],
    ["a plugin without wasm", `[[plugins]]\nname = "report"`, `lockhost.toml: [[plugins]] #1 ("report"): wasm is required`],
    ["an empty wasm", `[[plugins]]\nname = "report"\nwasm = ""`, `lockhost.toml: [[plugins]] #1 ("report"): wasm must not be empty`],
    ["a wasm that is not a string", `[[plugins]]\nname = "report"\nwasm = ["a.wasm"]`, `[[plugins]] #1 ("report"): wasm must be a string, got an array`],
    [
      "an unknown isolation",
      `${PLUGIN}isolation = "thread"`,
      `lockhost.toml: [[plugins]] #1 ("report"): isolation must be one of "worker", "inline", "auto", got "thread"`,
    ],
    ["a memory_limit_mib of 0", `${PLUGIN}memory_limit_mib = 0`, `("report"): memory_limit_mib must be an integer from 1 to 4096, got 0`],
    ["a memory_limit_mib over 4096", `${PLUGIN}memory_limit_mib = 4097`, "memory_limit_mib must be an integer from 1 to 4096, got 4097"],
    ["a fractional memory_limit_mib", `${PLUGIN}memory_limit_mib = 1.5`, "memory_limit_mib must be an integer from 1 to 4096, got 1.5"],
    ["a call_timeout_ms of 0", `${PLUGIN}call_timeout_ms = 0`, `("report"): call_timeout_ms must be an integer from 1 to 3600000, got 0`],
    ["instances of 0", `${PLUGIN}instances = 0`, `("report"): instances must be an integer from 1 to 64, got 0`],
    ["instances of 65", `${PLUGIN}instances = 65`, `("report"): instances must be an integer from 1 to 64, got 65`],
    ["a call_timeout_ms over an hour", `${PLUGIN}call_timeout_ms = 3_600_001`, "call_timeout_ms must be an integer from 1 to 3600000, got 3600001"],
    ["a boolean call_timeout_ms", `${PLUGIN}call_timeout_ms = true`, "call_timeout_ms must be an integer from 1 to 3600000, got true"],
    ["global_keys that are not an array", `${PLUGIN}global_keys = "ledger"`, `("report"): global_keys must be an array of strings, got "ledger"`],
    [
      "an empty global key",
      `${PLUGIN}global_keys = ["ledger", ""]`,
      `lockhost.toml: [[plugins]] #1 ("report"): global_keys[1] must be a non-empty string, got ""`,
    ],
    [
      "a functions namespace that is an ABI module",
      `${PLUGIN}functions = ["http"]`,
      `lockhost.toml: [[plugins]] #1 ("report"): functions entry 1: "http" is an ABI module, not a namespace`,
    ],
    ["a malformed functions namespace", `${PLUGIN}functions = ["Bill ing"]`, `("report"): functions entry 1: "Bill ing" is not a namespace`],
    ["a log_level that is none", `${PLUGIN}log_level = "loud"`, `("report"): log_level must be one of`],
    [
      "a config value that is not a string",
      `${PLUGIN}[plugins.config]\nretries = 3`,
      `lockhost.toml: [plugins.config] ("report"): retries must be a string, got a number (the value is not shown: it is a secret)`,
    ],
    [
      "an http table without allowed_hosts",
      `${PLUGIN}[plugins.http]\nmethods = ["GET"]`,
      `lockhost.toml: [plugins.http] ("report"): allowed_hosts is required`,
    ],
    [
      "a malformed allowed_hosts entry",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["api.example.com", "*"]`,
      `lockhost.toml: [plugins.http] ("report"): allowed_hosts entry "*" is not a valid host name`,
    ],
    [
      "an allowed_hosts entry with a port out of range",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["api.example.com:70000"]`,
      `[plugins.http] ("report"): allowed_hosts entry "api.example.com:70000" has port "70000": write 1 to 65535, or * for any port`,
    ],
    [
      "an allowed_hosts entry with a path",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["example.com/x"]`,
      `[plugins.http] ("report"): allowed_hosts entry "example.com/x" must be a host name and an optional port only`,
    ],
    [
      "a malformed allow_private_ranges entry",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["a.example"]\nallow_private_ranges = ["10.0.0.0/33"]`,
      `[plugins.http] ("report"): allow_private_ranges entry "10.0.0.0/33" is not a CIDR`,
    ],
    [
      "an http header the host controls",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["a.example"]\n[plugins.http.headers]\nhost = "evil"`,
      `[plugins.http.headers] ("report"): host header "host" is set by the host, not by a plugin (the value is not shown: it may be a secret)`,
    ],
    [
      "an unknown key in [plugins.http]",
      `${PLUGIN}[plugins.http]\nallowed_hosts = ["a.example"]\ntimeout = 3`,
      `unknown key "timeout" (did you mean "timeout_ms"?`,
    ],
    ["a global key that is not a string", `${PLUGIN}global_keys = [7]`, `("report"): global_keys[0] must be a non-empty string, got 7`],
    // [[scheduled]]
    ["scheduled that are not an array", `scheduled = 1`, "lockhost.toml: scheduled must be an array of tables ([[scheduled]]), got 1"],
    ["a schedule without a plugin", `${PLUGIN}[[scheduled]]\nexport = "run"\nschedule = "1s"`, "lockhost.toml: [[scheduled]] #1: plugin is required"],
    [
      "a schedule naming an undeclared plugin",
      `${PLUGIN}[[scheduled]]\nplugin = "reprot"\nexport = "run"\nschedule = "1s"`,
      `lockhost.toml: [[scheduled]] #1 ("reprot.run"): plugin "reprot" is not declared by any [[plugins]] entry (declared: report)`,
    ],
    [
      "a schedule when no plugin is declared",
      `[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"`,
      `plugin "report" is not declared by any [[plugins]] entry (none is declared)`,
    ],
    ["a schedule without an export", `${PLUGIN}[[scheduled]]\nplugin = "report"\nschedule = "1s"`, "lockhost.toml: [[scheduled]] #1: export is required"],
    [
      "a schedule with an empty export",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = ""\nschedule = "1s"`,
      "lockhost.toml: [[scheduled]] #1: export must not be empty",
    ],
    // An entry without a schedule is the short form (the plugin declares it: declared-schedules.test.ts); one without an export is not.
    [
      "export '*' with a schedule",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "*"\nschedule = "5s"`,
      `lockhost.toml: [[scheduled]] #1 ("report"): export may be "*" only without a schedule (every schedule the plugin declares)`,
    ],
    [
      "a zero interval",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "0s"`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): schedule must be an interval`,
      `got "0s"`,
    ],
    [
      "an interval with an unknown unit",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "5d"`,
      `schedule must be an interval ("500ms", "5s", "1m", "2h"`,
      `got "5d"`,
    ],
    ["an empty schedule", `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = " "`, `("report.run"): schedule must be an interval`],
    [
      "a cron expression of 4 fields",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "* * * *"`,
      `("report.run"): schedule must be a cron expression of 5 fields`,
      "got 4 fields",
    ],
    ["a cron expression of 7 fields", `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "0 0 0 * * * 2030"`, "got 7 fields"],
    [
      "a cron field out of range",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "61 * * * *"`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): schedule is not a valid cron expression`,
      "minute",
      `got "61 * * * *"`,
    ],
    [
      "a cron field of letters",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "every day at noon ok"`,
      "schedule is not a valid cron expression",
    ],
    [
      "a cron expression that never fires",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "0 0 30 2 *"`,
      `("report.run"): schedule is a cron expression that never fires, got "0 0 30 2 *"`,
    ],
    [
      "an unknown hint",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nhint = "global"`,
      `("report.run"): hint must be one of "node_local", "require_global", "prefer_global", "leader_only", got "global"`,
    ],
    [
      "a ttl_ms of 0",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nttl_ms = 0`,
      `("report.run"): ttl_ms must be an integer from 1 to ${MAX_TTL_MS}, got 0`,
    ],
    [
      "a ttl_ms over MAX_TTL_MS",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nttl_ms = ${MAX_TTL_MS + 1}`,
      `ttl_ms must be an integer from 1 to ${MAX_TTL_MS}, got ${MAX_TTL_MS + 1}`,
    ],
    [
      "an id with a space",
      `${PLUGIN}[[scheduled]]\nid = "nightly run"\nplugin = "report"\nexport = "run"\nschedule = "1s"`,
      `lockhost.toml: [[scheduled]] #1 ("nightly run"): id must be 1 to 128 characters from A-Z a-z 0-9 . _ : - @ /, got "nightly run"`,
    ],
    [
      "an id that is not a string",
      `${PLUGIN}[[scheduled]]\nid = 1\nplugin = "report"\nexport = "run"\nschedule = "1s"`,
      "lockhost.toml: [[scheduled]] #1: id must be a string, got 1",
    ],
    [
      "an invalid derived id",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run now"\nschedule = "1s"`,
      `id must be 1 to 128 characters`,
      `got "report.run now" (derived from plugin and export; set id explicitly)`,
    ],
    [
      "a duplicate derived id",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\n[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1m"`,
      `lockhost.toml: [[scheduled]] #2 ("report.run"): id "report.run" is already used by [[scheduled]] #1 ("report.run")`,
    ],
    [
      "a date where a string belongs",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = 2024-01-01`,
      `("report.run"): schedule must be a string, got a date`,
    ],
    [
      "a schedule keepalive that is not a boolean",
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nkeepalive = "yes"`,
      `lockhost.toml: [[scheduled]] #1 ("report.run"): keepalive must be true or false, got "yes"`,
    ],
    // [locking.keepalive]
    ["[locking.keepalive] that is not a table", `[locking]\nkeepalive = true`, "lockhost.toml: [locking]: keepalive must be a table, got true"],
    [
      "an unknown key in [locking.keepalive]",
      `[locking.keepalive]\nrenew_ratio = 0.5`,
      `lockhost.toml: [locking.keepalive]: unknown key "renew_ratio"`,
      `did you mean "renew_at_ratio"?`,
      "known: renew_at_ratio, max_retries, safety_margin_ratio, batch_window_ms",
    ],
    [
      "a renew_at_ratio of 0",
      `[locking.keepalive]\nrenew_at_ratio = 0`,
      "lockhost.toml: [locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got 0",
    ],
    [
      "a renew_at_ratio of 1",
      `[locking.keepalive]\nrenew_at_ratio = 1.0`,
      "lockhost.toml: [locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got 1",
    ],
    [
      "a negative renew_at_ratio",
      `[locking.keepalive]\nrenew_at_ratio = -0.5`,
      "[locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got -0.5",
    ],
    [
      "a renew_at_ratio of nan",
      `[locking.keepalive]\nrenew_at_ratio = nan`,
      "[locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got NaN",
    ],
    [
      "a renew_at_ratio of inf",
      `[locking.keepalive]\nrenew_at_ratio = inf`,
      "[locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got Infinity",
    ],
    [
      "a renew_at_ratio as a string",
      `[locking.keepalive]\nrenew_at_ratio = "50%"`,
      `[locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got "50%"`,
    ],
    [
      "a negative max_retries",
      `[locking.keepalive]\nmax_retries = -1`,
      "lockhost.toml: [locking.keepalive]: max_retries must be an integer from 0 to 100, got -1",
    ],
    [
      "a max_retries over 100",
      `[locking.keepalive]\nmax_retries = 101`,
      "lockhost.toml: [locking.keepalive]: max_retries must be an integer from 0 to 100, got 101",
    ],
    ["a fractional max_retries", `[locking.keepalive]\nmax_retries = 2.5`, "[locking.keepalive]: max_retries must be an integer from 0 to 100, got 2.5"],
    [
      "a negative safety_margin_ratio",
      `[locking.keepalive]\nsafety_margin_ratio = -0.1`,
      "lockhost.toml: [locking.keepalive]: safety_margin_ratio must be a number at least 0 and less than 1, got -0.1",
    ],
    [
      "a safety_margin_ratio of 1",
      `[locking.keepalive]\nsafety_margin_ratio = 1`,
      "lockhost.toml: [locking.keepalive]: safety_margin_ratio must be a number at least 0 and less than 1, got 1",
    ],
    [
      "a safety_margin_ratio as a boolean",
      `[locking.keepalive]\nsafety_margin_ratio = false`,
      "[locking.keepalive]: safety_margin_ratio must be a number at least 0 and less than 1, got false",
    ],
    [
      "a negative batch_window_ms",
      `[locking.keepalive]\nbatch_window_ms = -1`,
      "lockhost.toml: [locking.keepalive]: batch_window_ms must be an integer from 0 to 1000, got -1",
    ],
    [
      "a batch_window_ms over 1000",
      `[locking.keepalive]\nbatch_window_ms = 1001`,
      "lockhost.toml: [locking.keepalive]: batch_window_ms must be an integer from 0 to 1000, got 1001",
    ],
    [
      "a batch_window_ms with a unit",
      `[locking.keepalive]\nbatch_window_ms = "20ms"`,
      `[locking.keepalive]: batch_window_ms must be an integer from 0 to 1000, got "20ms"`,
    ],
    // [locking.waiting]
    ["[locking.waiting] that is not a table", `[locking]\nwaiting = 1000`, "lockhost.toml: [locking]: waiting must be a table, got 1000"],
    [
      "an unknown key in [locking.waiting]",
      `[locking.waiting]\npoll_ms = 100`,
      `lockhost.toml: [locking.waiting]: unknown key "poll_ms"`,
      "known: poll_interval_ms",
    ],
    [
      "a poll_interval_ms under 10",
      `[locking.waiting]\npoll_interval_ms = 9`,
      "lockhost.toml: [locking.waiting]: poll_interval_ms must be an integer from 10 to 3600000, got 9",
    ],
    [
      "a poll_interval_ms over an hour",
      `[locking.waiting]\npoll_interval_ms = 3_600_001`,
      "lockhost.toml: [locking.waiting]: poll_interval_ms must be an integer from 10 to 3600000, got 3600001",
    ],
    [
      "a fractional poll_interval_ms",
      `[locking.waiting]\npoll_interval_ms = 100.5`,
      "[locking.waiting]: poll_interval_ms must be an integer from 10 to 3600000, got 100.5",
    ],
    [
      "a negative election_poll_ms",
      `[locking.waiting]\nelection_poll_ms = -1`,
      "lockhost.toml: [locking.waiting]: election_poll_ms must be an integer from 0 to 3600000, got -1",
    ],
    // [admin]
    ["[admin] that is not a table", `admin = "127.0.0.1:9464"`, `lockhost.toml: admin must be a table, got "127.0.0.1:9464"`],
    [
      "an unknown key in [admin]",
      `[admin]\nlistn = "127.0.0.1:1"`,
      `lockhost.toml: [admin]: unknown key "listn"`,
      `did you mean "listen"?`,
      "known: listen, token",
    ],
    ["a listen that is not a string", `[admin]\nlisten = 9464`, "lockhost.toml: [admin]: listen must be a string, got 9464"],
    [
      "a listen without a port",
      `[admin]\nlisten = "127.0.0.1"`,
      `lockhost.toml: [admin]: listen must be "host:port" (e.g. "127.0.0.1:9464", "[::1]:9464"`,
      `got "127.0.0.1"`,
    ],
    [
      "a listen without a host",
      `[admin]\nlisten = ":9464"`,
      `lockhost.toml: [admin]: listen has host "", which is empty; it must be "host:port"`,
      `got ":9464"`,
    ],
    ["a listen with an empty port", `[admin]\nlisten = "127.0.0.1:"`, `lockhost.toml: [admin]: listen has port "", which is not an integer from 0 to 65535`],
    [
      "a listen port over 65535",
      `[admin]\nlisten = "127.0.0.1:65536"`,
      `lockhost.toml: [admin]: listen has port "65536", which is not an integer from 0 to 65535`,
      `got "127.0.0.1:65536"`,
    ],
    ["a negative listen port", `[admin]\nlisten = "127.0.0.1:-1"`, `[admin]: listen has port "-1", which is not an integer from 0 to 65535`],
    ["a listen port with letters", `[admin]\nlisten = "localhost:http"`, `[admin]: listen has port "http", which is not an integer`],
    [
      "a listen host with a space",
      `[admin]\nlisten = "my host:9464"`,
      `lockhost.toml: [admin]: listen has host "my host", which is neither an IP address nor a host name`,
    ],
    [
      "an IPv6 listen without brackets",
      `[admin]\nlisten = "::1:9464"`,
      `lockhost.toml: [admin]: listen must be "host:port"`,
      "put an IPv6 address in brackets",
      `got "::1:9464"`,
    ],
    [
      "an IPv4 listen in brackets",
      `[admin]\nlisten = "[127.0.0.1]:9464"`,
      `lockhost.toml: [admin]: listen has host "127.0.0.1", which is not an IPv6 address, yet is in brackets`,
    ],
    ["a listen URL", `[admin]\nlisten = "http://127.0.0.1:9464"`, `lockhost.toml: [admin]: listen must be "host:port"`],
    [
      "a token that is too short",
      `[admin]\ntoken = "0123456789abcde"`,
      "lockhost.toml: [admin]: token must be 16 to 4096 characters long, got 15 characters (the value is not shown: it is a secret)",
    ],
    ["an empty token", `[admin]\ntoken = ""`, "lockhost.toml: [admin]: token must be 16 to 4096 characters long, got 0 characters"],
    [
      "a token with a space",
      `[admin]\ntoken = "0123456789 abcdef"`,
      "lockhost.toml: [admin]: token must be printable ASCII without spaces, as it is sent in an Authorization header (the value is not shown: it is a secret)",
    ],
    ["a token that is not ASCII", `[admin]\ntoken = "0123456789abcdéf"`, "lockhost.toml: [admin]: token must be printable ASCII without spaces"],
    [
      "a token that is a number",
      `[admin]\ntoken = 1234567890123456`,
      "lockhost.toml: [admin]: token must be a string, got a number (the value is not shown: it is a secret)",
    ],
    ["a token that is an array", `[admin]\ntoken = ["0123456789abcdef"]`, "lockhost.toml: [admin]: token must be a string, got an array"],
  ];

  it.each(cases)("rejects %s", (_title, toml, ...expected) => {
    const message = messageOf(toml);
    for (const part of expected) expect(message).toContain(part);
  });

  it("reports a TOML syntax error with its line and column", () => {
    const message = messageOf(`[host]\nnode = "a"\nlog_level = info\n`);
    expect(message).toMatch(/^lockhost\.toml: TOML syntax error at line 3, column \d+: /);
    expect(message).toContain("3:  log_level = info");
  });

  it("reports a key defined twice as a TOML error", () => {
    expect(messageOf(`[host]\nnode = "a"\nnode = "b"`)).toMatch(/^lockhost\.toml: TOML syntax error at line 3, column \d+/);
  });

  it("reports keys that could touch Object.prototype as unknown keys", () => {
    expect(messageOf(`__proto__ = { a = 1 }`)).toContain("lockhost.toml: unknown table [__proto__]");
    expect(messageOf(`[host]\nconstructor = 1`)).toContain(`lockhost.toml: [host]: unknown key "constructor"`);
  });
});

describe("[locking.keepalive], [locking.waiting] and [[scheduled]] keepalive", () => {
  it("has one set of defaults: the config's are the renewal manager's", () => {
    expect(CONFIG_DEFAULTS.keepalive).toEqual(KEEPALIVE);
    expect(CONFIG_DEFAULTS.waiting).toEqual(WAITING);
    expect(CONFIG_DEFAULTS.keepalive).toBe(KEEPALIVE_DEFAULTS);
    expect(CONFIG_DEFAULTS.waiting).toBe(WAITING_DEFAULTS);
    expect(CONFIG_DEFAULTS.scheduled.keepalive).toBe(false);
  });

  it("fills every missing key of a partial table with its default", () => {
    expect(parse(`[locking.keepalive]\nmax_retries = 0`).locking.keepalive).toEqual({ ...KEEPALIVE, maxRetries: 0 });
    expect(parse(`[locking.keepalive]`).locking.keepalive).toEqual(KEEPALIVE);
    expect(parse(`[locking.waiting]`).locking.waiting).toEqual(WAITING);
  });

  it.each([
    ["renew_at_ratio", 0.01, { renewAtRatio: 0.01 }],
    ["renew_at_ratio", 0.85, { renewAtRatio: 0.85 }],
    ["safety_margin_ratio", 0, { safetyMarginRatio: 0 }],
    ["safety_margin_ratio", 0.49, { safetyMarginRatio: 0.49 }],
    ["max_retries", 0, { maxRetries: 0 }],
    ["max_retries", 100, { maxRetries: 100 }],
    ["batch_window_ms", 0, { batchWindowMs: 0 }],
    ["batch_window_ms", 1000, { batchWindowMs: 1000 }],
  ])("takes %s = %s", (key, value, expected) => {
    expect(parse(`[locking.keepalive]\n${key} = ${value}`).locking.keepalive).toEqual({ ...KEEPALIVE, ...expected });
  });

  it.each([10, 3_600_000])("takes poll_interval_ms = %d", (ms) => {
    expect(parse(`[locking.waiting]\npoll_interval_ms = ${ms}`).locking.waiting).toEqual({ pollIntervalMs: ms, electionPollMs: 20 });
  });

  it.each([0, 5, 3_600_000])("takes election_poll_ms = %d (0: no election sentinel)", (ms) => {
    expect(parse(`[locking.waiting]\nelection_poll_ms = ${ms}`).locking.waiting).toEqual({ pollIntervalMs: 1000, electionPollMs: ms });
  });

  it("takes a renew_at_ratio near 1 when the safety margin leaves room", () => {
    expect(parse(`[locking.keepalive]\nrenew_at_ratio = 0.95\nsafety_margin_ratio = 0.04`).locking.keepalive).toMatchObject({
      renewAtRatio: 0.95,
      safetyMarginRatio: 0.04,
    });
    expect(parse(`[locking.keepalive]\nrenew_at_ratio = 0.99\nsafety_margin_ratio = 0`).locking.keepalive).toMatchObject({
      renewAtRatio: 0.99,
      safetyMarginRatio: 0,
    });
  });

  it("rejects a safety margin that leaves no time to renew, naming both keys", () => {
    expect(messageOf(`[locking.keepalive]\nrenew_at_ratio = 0.7\nsafety_margin_ratio = 0.3`)).toBe(
      "lockhost.toml: [locking.keepalive]: safety_margin_ratio must be less than 1 - renew_at_ratio, got 0.3 with renew_at_ratio = 0.7: a renewal " +
        "must fall due before the safety margin starts",
    );
    expect(messageOf(`[locking.keepalive]\nsafety_margin_ratio = 0.6`)).toBe(
      "lockhost.toml: [locking.keepalive]: safety_margin_ratio must be less than 1 - renew_at_ratio, got 0.6 with renew_at_ratio = 0.5 (its " +
        "default): a renewal must fall due before the safety margin starts",
    );
    expect(messageOf(`[locking.keepalive]\nrenew_at_ratio = 0.95`)).toContain(
      "safety_margin_ratio must be less than 1 - renew_at_ratio, got 0.1 with renew_at_ratio = 0.95",
    );
  });

  it("reads keepalive of a schedule, false by default", () => {
    const config = parse(
      `${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "1s"\nkeepalive = true\n[[scheduled]]\nid = "b"\nplugin = ` +
        `"report"\nexport = "run"\nschedule = "1s"`,
    );
    expect(config.scheduled.map((s) => s.keepalive)).toEqual([true, false]);
  });
});

describe("[admin]", () => {
  const TOKEN = "admin-token-0123456789";

  it("starts no admin listener without the table; an empty table listens on 127.0.0.1:9464 without a token", () => {
    expect("admin" in parse("")).toBe(false);
    expect(parse("[admin]").admin).toEqual({ listen: { host: "127.0.0.1", port: 9464 } });
    expect(CONFIG_DEFAULTS.adminListen).toEqual({ host: "127.0.0.1", port: 9464 });
  });

  it.each([
    ["127.0.0.1:9464", { host: "127.0.0.1", port: 9464 }],
    ["127.0.0.1:0", { host: "127.0.0.1", port: 0 }],
    ["0.0.0.0:80", { host: "0.0.0.0", port: 80 }],
    ["localhost:65535", { host: "localhost", port: 65535 }],
    ["admin.internal.example:9464", { host: "admin.internal.example", port: 9464 }],
    ["[::1]:9464", { host: "::1", port: 9464 }],
    ["[::]:0", { host: "::", port: 0 }],
    ["[fe80::1:2]:10", { host: "fe80::1:2", port: 10 }],
  ])("reads listen = %j", (listen, expected) => {
    expect(parse(`[admin]\nlisten = "${listen}"`).admin).toEqual({ listen: expected });
  });

  it("substitutes the token from the environment", () => {
    const config = parse(`[admin]\ntoken = "\${LOCKHOST_ADMIN_TOKEN}"\nlisten = "\${ADMIN_LISTEN:-127.0.0.1:0}"`, { LOCKHOST_ADMIN_TOKEN: TOKEN });
    expect(config.admin).toEqual({ listen: { host: "127.0.0.1", port: 0 }, token: TOKEN });
    expect(messageOf(`[admin]\ntoken = "\${LOCKHOST_ADMIN_TOKEN}"`)).toContain(
      "lockhost.toml: [admin]: token uses ${LOCKHOST_ADMIN_TOKEN}, but the environment variable LOCKHOST_ADMIN_TOKEN is not set",
    );
  });

  it("never shows the token, or a part of it, in a message", () => {
    const secret = "hunter2hunter2hunter2";
    const messages = [
      messageOf(`[admin]\ntoken = "\${T}"`, { T: "hunter2" }),
      messageOf(`[admin]\ntoken = "\${T}"`, { T: `${secret} x` }),
      messageOf(`[admin]\ntoken = "\${T}"`, { T: `${secret}\u0000` }),
      // A token pasted where a variable name belongs.
      messageOf(`[admin]\ntoken = "\${${secret}-x}"`),
      messageOf(`[admin]\ntoken = "\${${secret}"`),
      messageOf(`[admin]\ntoken = "a$${secret}"`),
      // Syntax errors quote the lines around them: the token's line must be masked.
      messageOf(`[admin]\ntoken = "${secret}" trailing`),
      messageOf(`[admin]\ntoken = ${secret}`),
      messageOf(`[admin]\ntoken = "${secret}\nlisten = "127.0.0.1:1"`),
      messageOf(`admin = { token = "${secret}", listen }`),
      messageOf(`admin = { token = '${secret}' listen = "x" }`),
      messageOf(`[admin]\ntoken = 123456789123456789123`),
    ];
    for (const message of messages) {
      expect(message).toContain("token");
      expect(message).not.toContain("hunter2");
      expect(message).not.toContain("123456789123456789123");
    }
    expect(messages[6]).toContain("token = ***");
  });

  it("reads the same settings in code, with listen as text or as {host, port}", () => {
    const config = resolveConfig({
      locking: { keepalive: { renewAtRatio: 0.6, maxRetries: 1, safetyMarginRatio: 0, batchWindowMs: 5 }, waiting: { pollIntervalMs: 50 } },
      plugins: [{ name: "a", wasm: "a.wasm" }],
      scheduled: [{ plugin: "a", export: "run", schedule: "1s", keepalive: true }],
      admin: { listen: "[::1]:0", token: TOKEN },
    });
    expect(config.locking.keepalive).toEqual({ renewAtRatio: 0.6, maxRetries: 1, safetyMarginRatio: 0, batchWindowMs: 5 });
    expect(config.locking.waiting).toEqual({ pollIntervalMs: 50, electionPollMs: 20 });
    expect(config.scheduled[0]?.keepalive).toBe(true);
    expect(config.admin).toEqual({ listen: { host: "::1", port: 0 }, token: TOKEN });
    expect(resolveConfig({ admin: { listen: { port: 0 } } }).admin).toEqual({ listen: { host: "127.0.0.1", port: 0 } });
    expect(resolveConfig({ admin: { listen: { host: "::1", port: 9 } } }).admin).toEqual({ listen: { host: "::1", port: 9 } });
    expect(resolveConfig({ admin: {} }).admin).toEqual({ listen: { host: "127.0.0.1", port: 9464 } });
    expect(resolveConfig({ locking: { keepalive: { maxRetries: 7 } } }).locking.keepalive).toEqual({ ...KEEPALIVE, maxRetries: 7 });
    // A LockhostConfig is a ConfigInput, and comes back equal.
    expect(resolveConfig(config)).toEqual(config);
  });

  it("names fields by their code names in code", () => {
    const bad = (input: unknown) => configErrorOf(() => resolveConfig(input as never)).message;
    expect(bad({ locking: { keepalive: { renewAtRatio: 1 } } })).toBe(
      "config: locking.keepalive: renewAtRatio must be a number greater than 0 and less than 1, got 1",
    );
    expect(bad({ locking: { keepalive: { renewAtRatio: 0.8, safetyMarginRatio: 0.2 } } })).toBe(
      "config: locking.keepalive: safetyMarginRatio must be less than 1 - renewAtRatio, got 0.2 with renewAtRatio = 0.8: a renewal must fall due " +
        "before the safety margin starts",
    );
    expect(bad({ locking: { keepalive: { max_retries: 1 } } })).toContain(`config: locking.keepalive: unknown key "max_retries" (did you mean "maxRetries"?`);
    expect(bad({ locking: { waiting: { pollIntervalMs: 1 } } })).toBe("config: locking.waiting: pollIntervalMs must be an integer from 10 to 3600000, got 1");
    expect(bad({ locking: { delegation: { fenceBlock: 1 } } })).toBe("config: locking.delegation: fenceBlock must be an integer from 2 to 1000000, got 1");
    expect(bad({ admin: { listen: "localhost" } })).toContain(`config: admin: listen must be "host:port"`);
    expect(bad({ admin: { listen: { host: "::1", port: 70000 } } })).toBe("config: admin.listen: port must be an integer from 0 to 65535, got 70000");
    expect(bad({ admin: { listen: { host: "[::1]" } } })).toBe(
      `config: admin.listen: host is neither an IP address nor a host name (an IPv6 address goes without brackets here), got "[::1]"`,
    );
    expect(bad({ admin: { listen: { host: "h", port: 1, tls: true } } })).toContain(`config: admin.listen: unknown key "tls"`);
    expect(bad({ admin: { listen: 9464 } })).toBe("config: admin: listen must be a string, got 9464");
    expect(bad({ admin: { token: "short" } })).toBe(
      "config: admin: token must be 16 to 4096 characters long, got 5 characters (the value is not shown: it is a secret)",
    );
    expect(bad({ admin: { token: 1234567890123456 } })).toBe("config: admin: token must be a string, got a number (the value is not shown: it is a secret)");
    expect(bad({ admin: { token: { value: "x" } } })).toBe("config: admin: token must be a string, got an object (the value is not shown: it is a secret)");
    expect(bad({ scheduled: [], admin: { listen: "127.0.0.1:1" }, locking: { keepalive: 3 } })).toBe("config: locking: keepalive must be a table, got 3");
  });
});

describe("listen addresses", () => {
  it("formats an address the way it is written, IPv6 in brackets", () => {
    expect(formatListen({ host: "127.0.0.1", port: 9464 })).toBe("127.0.0.1:9464");
    expect(formatListen({ host: "::1", port: 0 })).toBe("[::1]:0");
    expect(formatListen({ host: "localhost", port: 1 })).toBe("localhost:1");
    for (const text of ["127.0.0.1:9464", "[::1]:0", "localhost:1", "[fe80::1]:2"]) {
      const parsed = parseListen(text);
      expect("problem" in parsed ? parsed.problem : formatListen(parsed)).toBe(text);
    }
  });

  it.each([
    ["127.0.0.1", true],
    ["127.255.0.9", true],
    ["localhost", true],
    ["LOCALHOST", true],
    ["::1", true],
    ["0:0:0:0:0:0:0:1", true],
    ["::ffff:127.0.0.1", true],
    ["0.0.0.0", false],
    ["::", false],
    ["10.0.0.1", false],
    ["::ffff:10.0.0.1", false],
    ["fe80::1", false],
    ["fe80::1%eth0", false],
    ["admin.example", false],
    ["128.0.0.1", false],
  ])("isLoopbackHost(%j) is %s", (host, expected) => {
    expect(isLoopbackHost(host)).toBe(expected);
  });
});

describe("passwords never appear in messages", () => {
  it("masks user:pass@ in a rejected URL", () => {
    const message = messageOf(`[locking.redis]\nurl = "http://admin:hunter2@cache:6379"`);
    expect(message).toContain(`got "http://admin:***@cache:6379"`);
    expect(message).not.toContain("hunter2");
  });

  it("masks the password of a URL that does not parse", () => {
    const message = messageOf(`[locking.pg]\nurl = "postgres://app:s3cr%t@db:99999/x"`);
    expect(message).toContain(
      `[locking.pg]: url is not a valid URL (percent-encode "/", "?", "#" and "@" in a user name or password (%2F, %3F, %23, %40)), got ` +
        `"postgres://app:***@db:99999/x"`,
    );
    expect(message).not.toContain("s3cr");
  });

  it("masks a password that contains '@' or ':'", () => {
    const message = messageOf(`[locking.redis]\nurl = "tcp://u:p@ss:w0rd@h"`);
    expect(message).toContain(`"tcp://u:***@h"`);
    expect(message).not.toContain("w0rd");
  });

  it("masks the password in the lines quoted by a TOML syntax error", () => {
    const message = messageOf(`[locking.redis]\nurl = "redis://u:hunter2@h" trailing`);
    expect(message).toContain("TOML syntax error at line 2");
    expect(message).toContain("u:***@h");
    expect(message).not.toContain("hunter2");
  });

  it("masks a password quoted by a malformed substitution", () => {
    const message = messageOf(`[locking.pg]\nurl = "\${DB:postgres://u:hunter2@h}"`);
    expect(message).toContain("which is not ${NAME}");
    expect(message).not.toContain("hunter2");
  });

  it("masks a password coming from the environment", () => {
    const message = messageOf(`[locking.redis]\nurl = "\${URL}"`, { URL: "http://u:fromenv@h" });
    expect(message).not.toContain("fromenv");
  });

  it("redactUrlSecrets masks user:pass@ and password= and leaves the rest", () => {
    expect(redactUrlSecrets("redis://:pw@h:6379/0")).toBe("redis://:***@h:6379/0");
    expect(redactUrlSecrets("see postgres://app:pw@db/x and rediss://u:p2@c")).toBe("see postgres://app:***@db/x and rediss://u:***@c");
    expect(redactUrlSecrets("postgres://db/x?sslmode=require&password=pw")).toBe("postgres://db/x?sslmode=require&password=***");
    expect(redactUrlSecrets("redis://user@h redis://h:6379")).toBe("redis://user@h redis://h:6379");
  });
});

describe("environment substitution", () => {
  const REDIS = `[locking.redis]\nurl = "\${REDIS_URL}"\nkey_prefix = "\${PREFIX:-lh:}"`;

  it("substitutes ${VAR} and ${VAR:-default} after parsing", () => {
    const config = parse(REDIS, { REDIS_URL: "redis://cache:6379", PREFIX: "p:" });
    expect(config.locking.redis).toMatchObject({ url: "redis://cache:6379", keyPrefix: "p:" });
  });

  it("uses the default when the variable is unset or empty", () => {
    expect(parse(REDIS, { REDIS_URL: "redis://c" }).locking.redis?.keyPrefix).toBe("lh:");
    expect(parse(REDIS, { REDIS_URL: "redis://c", PREFIX: "" }).locking.redis?.keyPrefix).toBe("lh:");
  });

  it("names the variable, file, table and key when a variable is unset", () => {
    const message = messageOf(REDIS, {});
    expect(message).toContain("lockhost.toml: [locking.redis]: url uses ${REDIS_URL}");
    expect(message).toContain("REDIS_URL is not set");
  });

  it("names the entry when a variable in an array is unset", () => {
    const message = messageOf(`${PLUGIN}global_keys = ["a", "\${TEAM}-*"]`);
    expect(message).toContain(`lockhost.toml: [[plugins]] #1 ("report"): global_keys[1] uses \${TEAM}`);
  });

  it("substitutes in every string, including strings inside arrays", () => {
    const config = parse(
      `[host]\nnode = "\${NODE}"\n[[plugins]]\nname = "\${PLUGIN}"\nwasm = "\${DIR}/r.wasm"\nglobal_keys = ["\${TEAM}-*", "fixed"]\n` +
        `[[scheduled]]\nplugin = "\${PLUGIN}"\nexport = "run"\nschedule = "\${EVERY:-10s}"`,
      { NODE: "n1", PLUGIN: "report", DIR: "/opt/g", TEAM: "blue" },
    );
    expect(config.host.node).toBe("n1");
    expect(config.plugins[0]).toMatchObject({ name: "report", wasm: resolve("/opt/g/r.wasm"), globalKeys: ["blue-*", "fixed"] });
    expect(config.scheduled[0]).toMatchObject({ id: "report.run", schedule: { kind: "interval", everyMs: 10000 } });
  });

  it("reads $$ as a literal $", () => {
    expect(parse(`[locking.redis]\nkey_prefix = "$$app$$:"`).locking.redis?.keyPrefix).toBe("$app$:");
    // A brace-free field for the braces: key_prefix refuses "{" and "}".
    expect(parse(`${PLUGIN}global_keys = ["$\${X}"]`).plugins[0]?.globalKeys).toEqual(["${X}"]);
  });

  it("never lets a value inject TOML or be substituted again", () => {
    const value = `x"\n[[plugins]]\nname = "evil" \${OTHER} $$`;
    const config = parse(`${PLUGIN}global_keys = ["\${PREFIX}"]`, { PREFIX: value, OTHER: "no" });
    expect(config.plugins.map((p) => p.globalKeys)).toEqual([[value]]);
  });

  it("rejects a lone $, an unterminated ${ and a malformed name", () => {
    expect(messageOf(`[host]\nnode = "a$b"`)).toContain(`lockhost.toml: [host]: node has a "$" at character 2 that starts no substitution`);
    expect(messageOf(`[host]\nnode = "\${NODE"`)).toContain(`lockhost.toml: [host]: node has an unterminated "\${"`);
    expect(messageOf(`[host]\nnode = "\${1X}"`)).toContain(`lockhost.toml: [host]: node has "\${1X}", which is not`);
    expect(messageOf(`[host]\nnode = "\${}"`)).toContain("which is not ${NAME}");
  });

  it("substitutes in any value: a number or a boolean from a variable is read as one after substitution", () => {
    const config = parse(
      `[host]\nshutdown_timeout_ms = "\${SHUTDOWN_MS}"\n[locking.redis]\ncommand_timeout_ms = "\${REDIS_TIMEOUT:-500}"\nreclaim_own_locks = "\${RECLAIM}"\n` +
        `[locking.keepalive]\nrenew_at_ratio = "\${RENEW_AT}"\n${PLUGIN}memory_limit_mib = "\${MEM}"\nwasi = "\${WASI:-false}"`,
      { SHUTDOWN_MS: "2_000", RECLAIM: "true", RENEW_AT: "0.4", MEM: " 32 " },
    );
    expect(config.host.shutdownTimeoutMs).toBe(2000);
    expect(config.locking.redis).toMatchObject({ commandTimeoutMs: 500, reclaimOwnLocks: true });
    expect(config.locking.keepalive?.renewAtRatio).toBe(0.4);
    expect(config.plugins[0]).toMatchObject({ memoryLimitMib: 32, wasi: false });
  });

  it("checks a substituted value's type after substitution, naming the key and the variable", () => {
    expect(messageOf(`${PLUGIN}memory_limit_mib = "\${MEM}"`, { MEM: "32MB" })).toBe(
      `lockhost.toml: [[plugins]] #1 ("report"): memory_limit_mib must be an integer from 1 to 4096, got "32MB" (from \${MEM})`,
    );
    expect(messageOf(`${PLUGIN}memory_limit_mib = "\${MEM}"`, { MEM: "9999" })).toBe(
      `lockhost.toml: [[plugins]] #1 ("report"): memory_limit_mib must be an integer from 1 to 4096, got 9999 (from \${MEM})`,
    );
    expect(messageOf(`[locking.redis]\nreclaim_own_locks = "\${RECLAIM}"`, { RECLAIM: "yes" })).toBe(
      `lockhost.toml: [locking.redis]: reclaim_own_locks must be true or false, got "yes" (from \${RECLAIM})`,
    );
    expect(messageOf(`[locking.keepalive]\nrenew_at_ratio = "\${A}\${B}"`, { A: "1", B: ".5" })).toBe(
      `lockhost.toml: [locking.keepalive]: renew_at_ratio must be a number greater than 0 and less than 1, got 1.5 (from \${A}, \${B})`,
    );
    expect(messageOf(`${PLUGIN}memory_limit_mib = "\${MEM}"`)).toContain(`memory_limit_mib uses \${MEM}, but the environment variable MEM is not set`);
    // Without a variable, a quoted number is a mistake in the file, as before.
    expect(messageOf(`${PLUGIN}memory_limit_mib = "32"`)).toContain(`memory_limit_mib must be an integer from 1 to 4096, got "32"`);
  });

  it("sees no variables when parseConfig is given no env", () => {
    const message = configErrorOf(() => parseConfig(`[host]\nnode = "\${HOME}"`, { source: SOURCE, baseDir: BASE })).message;
    expect(message).toContain("HOME is not set");
  });

  it("expandEnv works on its own", () => {
    const where = () => "f: [t]: k";
    expect(expandEnv("plain", {}, where)).toBe("plain");
    expect(expandEnv("${A}/${B:-b}/$$/${C:-}", { A: "a" }, where)).toBe("a/b/$/");
    expect(expandEnv("${A:-x:-y}", {}, where)).toBe("x:-y");
    expect(configErrorOf(() => expandEnv("${MISSING}", {}, where)).message).toBe(
      "f: [t]: k uses ${MISSING}, but the environment variable MISSING is not set (set it, or give a default: ${MISSING:-value})",
    );
  });
});

describe("schedules", () => {
  it.each([
    ["500ms", 500],
    ["5s", 5000],
    ["1m", 60_000],
    ["2h", 7_200_000],
    ["05s", 5000],
  ])("parseDuration(%j) = %d", (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(["0s", "0ms", "1.5s", "5 s", " 5s", "5", "s", "-5s", "5d", "5S", "1h30m", "", "99999999999999999999h"])("parseDuration(%j) is undefined", (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });

  function scheduleOf(text: string) {
    return parse(`${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "${text}"`).scheduled[0]?.schedule;
  }

  it("reads intervals and cron expressions of 5 or 6 fields", () => {
    expect(scheduleOf("250ms")).toEqual({ kind: "interval", everyMs: 250, text: "250ms" });
    expect(scheduleOf("0 3 * * MON-FRI")).toEqual({ kind: "cron", expression: "0 3 * * MON-FRI" });
    expect(scheduleOf("*/10 * * * * *")).toEqual({ kind: "cron", expression: "*/10 * * * * *" });
    expect(scheduleOf("0 0 29 2 *")).toEqual({ kind: "cron", expression: "0 0 29 2 *" });
  });

  it("rejects cron nicknames and dates, which are not 5 or 6 fields", () => {
    expect(messageOf(`${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "@daily"`)).toContain("schedule must be an interval");
    expect(messageOf(`${PLUGIN}[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "2030-01-01T00:00:00"`)).toContain("schedule must be an interval");
  });
});

describe("resolveConfig", () => {
  it("applies the defaults to an empty object", () => {
    const config = resolveConfig({});
    expect(config).toEqual({
      host: { node: hostname(), shutdownTimeoutMs: 10000, logLevel: "info" },
      locking: { backend: "memory", keepalive: KEEPALIVE, waiting: WAITING, delegation: DELEGATION },
      plugins: [],
      scheduled: [],
    });
    expect("source" in config).toBe(false);
    expectDeepFrozen(config);
  });

  it("builds a config with camelCase names, string or parsed schedules, and baseDir", () => {
    const config = resolveConfig({
      source: "test",
      baseDir: BASE,
      host: { node: "n" },
      locking: { backend: "pg", redis: { keyPrefix: "k:" } },
      plugins: [{ name: "report", wasm: "r.wasm", memoryLimitMib: 32, globalKeys: ["g"] }],
      scheduled: [
        { plugin: "report", export: "run", schedule: "1m", ttlMs: 5000 },
        { id: "nightly", plugin: "report", export: "run", schedule: { kind: "cron", expression: "0 2 * * *" }, hint: "node_local" },
        { id: "fast", plugin: "report", export: "run", schedule: { kind: "interval", everyMs: 750, text: "750ms" } },
      ],
    });
    expect(config).toEqual({
      source: "test",
      host: { node: "n", shutdownTimeoutMs: 10000, logLevel: "info" },
      locking: {
        backend: "pg",
        redis: {
          url: "redis://127.0.0.1:6379",
          keyPrefix: "k:",
          commandTimeoutMs: 2000,
          reclaimOwnLocks: false,
          cluster: false,
          tls: false,
          caFile: "",
          certFile: "",
          keyFile: "",
          servername: "",
        },
        pg: {
          url: "postgres://postgres@127.0.0.1:5432/test",
          sessions: 4,
          table: "lockhost_locks",
          commandTimeoutMs: 2000,
          tls: false,
          caFile: "",
          certFile: "",
          keyFile: "",
          servername: "",
        },
        keepalive: KEEPALIVE,
        waiting: WAITING,
        delegation: DELEGATION,
      },
      plugins: [
        {
          name: "report",
          wasm: resolve(BASE, "r.wasm"),
          isolation: "worker",
          runtime: "worker",
          abi: "auto",
          memoryLimitMib: 32,
          callTimeoutMs: 5000,
          instances: 1,
          globalKeys: ["g"],
          functions: [],
          config: {},
          wasi: false,
        },
      ],
      scheduled: [
        {
          id: "report.run",
          plugin: "report",
          export: "run",
          schedule: { kind: "interval", everyMs: 60000, text: "1m" },
          hint: "require_global",
          ttlMs: 5000,
          keepalive: false,
          fair: false,
        },
        {
          id: "nightly",
          plugin: "report",
          export: "run",
          schedule: { kind: "cron", expression: "0 2 * * *" },
          hint: "node_local",
          ttlMs: 60000,
          keepalive: false,
          fair: false,
        },
        {
          id: "fast",
          plugin: "report",
          export: "run",
          schedule: { kind: "interval", everyMs: 750, text: "750ms" },
          hint: "require_global",
          ttlMs: 60000,
          keepalive: false,
          fair: false,
        },
      ],
    });
    expectDeepFrozen(config);
  });

  it("leaves the caller's objects unfrozen", () => {
    const input = { host: { node: "n" }, plugins: [{ name: "a", wasm: "a.wasm", globalKeys: ["k"] }] };
    resolveConfig(input);
    expect(Object.isFrozen(input) || Object.isFrozen(input.host) || Object.isFrozen(input.plugins[0]?.globalKeys)).toBe(false);
  });

  it("resolves relative wasm paths against the working directory by default", () => {
    expect(resolveConfig({ plugins: [{ name: "a", wasm: "a.wasm" }] }).plugins[0]?.wasm).toBe(resolve("a.wasm"));
  });

  it("accepts a LockhostConfig and returns an equal one", () => {
    const config = parse(
      `[locking]\nbackend = "redis"\n${PLUGIN}global_keys = ["x"]\n[[scheduled]]\nplugin = "report"\nexport = "run"\nschedule = "*/5 * * * *"`,
    );
    expect(resolveConfig(config)).toEqual(config);
  });

  it("does not substitute variables in values given in code", () => {
    expect(resolveConfig({ host: { node: "${NODE}" } }).host.node).toBe("${NODE}");
  });

  it("names fields by their code names", () => {
    const bad = (input: unknown) => configErrorOf(() => resolveConfig(input as never)).message;
    expect(bad({ plugins: [{ name: "report", wasm: "r.wasm", memoryLimitMib: "16MB" }] })).toBe(
      `config: plugins[0] ("report"): memoryLimitMib must be an integer from 1 to 4096, got "16MB"`,
    );
    expect(bad({ source: "embed", plugins: [{ name: "a", wasm: "a.wasm", memoryLimitMB: 8 }] })).toContain(
      `embed: plugins[0] ("a"): unknown key "memoryLimitMB" (did you mean "memoryLimitMib"?`,
    );
    expect(bad({ locking: { redis: { url: "redis://u:pw@h:0x" } } })).toBe(
      `config: locking.redis: url is not a valid URL (percent-encode "/", "?", "#" and "@" in a user name or password (%2F, %3F, %23, %40)), got ` +
        `"redis://u:***@h:0x"`,
    );
    expect(bad({ host: { logLevel: "loud" } })).toContain("config: host: logLevel must be one of");
    expect(
      bad({ plugins: [{ name: "a", wasm: "a.wasm" }], scheduled: [{ plugin: "a", export: "run", schedule: { kind: "interval", everyMs: 0 } }] }),
    ).toContain(`config: scheduled[0] ("a.run").schedule: everyMs must be an integer from 1 to`);
    expect(
      bad({ plugins: [{ name: "a", wasm: "a.wasm" }], scheduled: [{ plugin: "a", export: "run", schedule: { kind: "cron", expression: "61 * * * *" } }] }),
    ).toContain(`config: scheduled[0] ("a.run").schedule: expression is not a valid cron expression`);
    expect(bad({ plugins: [{ name: "a", wasm: "a.wasm", globalKeys: null }] })).toContain("globalKeys must be an array of strings, got null");
    expect(bad({ hosts: {} })).toContain(`config: unknown key "hosts" (did you mean "host"?`);
    expect(bad({ source: 5 })).toBe("config: source must be a string, got 5");
    expect(bad({ baseDir: "" })).toBe("config: baseDir must not be empty");
    expect(bad(null)).toBe("config must be an object, got null");
  });
});

describe("loadConfig", () => {
  let dir: string | undefined;

  afterEach(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
    dir = undefined;
  });

  it("reads a file and resolves wasm paths against its folder", async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    await mkdir(join(dir, "etc"));
    const path = join(dir, "etc", "lockhost.toml");
    await writeFile(path, `\uFEFF[host]\nnode = "\${NODE}"\n[[plugins]]\nname = "report"\nwasm = "../guests/report.wasm"\n`);
    const config = await loadConfig(path, { NODE: "from-env" });
    expect(config.source).toBe(path);
    expect(config.host.node).toBe("from-env");
    expect(config.plugins[0]?.wasm).toBe(join(dir, "guests", "report.wasm"));
    expectDeepFrozen(config);
  });

  it('[admin] auth defaults to "all" beyond loopback and "writes" on it; TLS files resolve against the config\'s folder and go together', async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    const path = join(dir, "lockhost.toml");
    const load = async (admin: string) => {
      await writeFile(path, `[admin]\n${admin}\n`);
      return loadConfig(path, {});
    };
    const auth = async (admin: string) => new AdminAccess((await load(admin)).admin!).auth;
    expect(await auth(`listen = "0.0.0.0:9464"`)).toBe("all");
    expect(await auth(`listen = "[::]:9464"`)).toBe("all");
    expect(await auth(`listen = "admin.internal.example:9464"`)).toBe("all");
    expect(await auth(`listen = "localhost:9464"`)).toBe("writes");
    expect(await auth(`listen = "127.0.0.1:9464"`)).toBe("writes");
    expect((await load(`listen = "0.0.0.0:9464"\nauth = "writes"\nmetrics_open = true`)).admin).toMatchObject({ auth: "writes", metricsOpen: true });
    expect((await load(`cert_file = "tls/admin.crt"\nkey_file = "/etc/admin.key"\nclient_ca_file = "ca.pem"`)).admin).toMatchObject({
      certFile: join(dir, "tls/admin.crt"),
      keyFile: "/etc/admin.key",
      clientCaFile: join(dir, "ca.pem"),
    });
    await expect(load(`auth = "reads"`)).rejects.toThrow(`[admin]: auth must be one of "writes", "all", got "reads"`);
    await expect(load(`cert_file = "a.crt"`)).rejects.toThrow("[admin]: key_file cert_file and key_file go together");
    await expect(load(`client_ca_file = "ca.pem"`)).rejects.toThrow("[admin]: client_ca_file needs cert_file and key_file");
  });

  it('with secrets "if-set" (for commands that only read), leaves out a secret whose variable is unset; other problems stay errors', async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    const path = join(dir, "lockhost.toml");
    const text =
      `[admin]\ntoken = "\${ADMIN_TOKEN}"\n[[plugins]]\nname = "report"\nwasm = "r.wasm"\n` + `[plugins.config]\napi_key = "\${API_KEY}"\nregion = "eu"\n`;
    await writeFile(path, text);
    await expect(loadConfig(path, {})).rejects.toThrow("[admin]: token uses ${ADMIN_TOKEN}, but the environment variable ADMIN_TOKEN is not set");
    const config = await loadConfig(path, {}, { secrets: "if-set" });
    expect(config.admin).toEqual({ listen: CONFIG_DEFAULTS.adminListen });
    expect(config.plugins[0]?.config).toEqual({ region: "eu" });
    expect((await loadConfig(path, { ADMIN_TOKEN: "t".repeat(16) }, { secrets: "if-set" })).admin?.token).toBe("t".repeat(16));
    // Only an unset variable is forgiven: a malformed reference, or a token too short, is not.
    await writeFile(path, `[admin]\ntoken = "\${1X}"\n`);
    await expect(loadConfig(path, {}, { secrets: "if-set" })).rejects.toThrow("which is not");
    await writeFile(path, `[admin]\ntoken = "\${SHORT}"\n`);
    await expect(loadConfig(path, { SHORT: "x" }, { secrets: "if-set" })).rejects.toThrow("[admin]: token must be 16 to 4096 characters long");
    await expect(loadConfig(path, {}, { secrets: "maybe" as never })).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("names the file in validation messages", async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    const path = join(dir, "lockhost.toml");
    await writeFile(path, `[locking]\nbackend = "zk"\n`);
    await expect(loadConfig(path, {})).rejects.toThrow(`${path}: [locking]: backend must be one of`);
  });

  it("rejects a missing file naming its path", async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    const path = join(dir, "nope.toml");
    const err = await loadConfig(path, {}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LockhostError);
    expect((err as LockhostError).code).toBe("CONFIG_INVALID");
    expect((err as LockhostError).message).toBe(`${path}: cannot read the config file (no such file)`);
  });

  it("rejects a folder given as the config file", async () => {
    dir = await mkdtemp(join(tmpdir(), "lockhost-config-"));
    await expect(loadConfig(dir, {})).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: `${dir}: cannot read the config file (it is a directory)`,
    });
  });
});

describe("the shipped example configs", () => {
  const root = resolve(import.meta.dirname, "..");
  it.each(["lockhost.toml", "examples/demo.toml", "examples/redis.toml", "examples/pg.toml", "examples/etcd.toml"])(
    "%s loads, with wasm paths that exist",
    async (file) => {
      const config = await loadConfig(join(root, file), { LOCKHOST_NODE: "node-x" });
      expect(config.plugins.length).toBeGreaterThan(0);
      for (const p of config.plugins) expect(existsSync(p.wasm), p.wasm).toBe(true);
      expect(config.locking.keepalive).toEqual(KEEPALIVE);
      expect(config.locking.waiting).toEqual(WAITING);
      if (file !== "lockhost.toml" && file !== "examples/demo.toml") {
        expect(config.host.node).toBe("node-x");
        expect(config.scheduled.every((s) => s.hint === "require_global")).toBe(true);
        expect(config.admin).toEqual({ listen: { host: "127.0.0.1", port: 9464 } });
      } else {
        // `npm start` and the CLI tests run it: no fixed port to collide on.
        expect(config.admin).toBeUndefined();
      }
    },
  );
});
