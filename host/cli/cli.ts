// The lockhost CLI: `run` a host from a TOML config, inspect a running host or a lock, and
// force-release locks.
import { readFileSync } from "node:fs";
import { access } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { pino } from "pino";
import { chosenBackend, createBackend } from "../registry/create.js";
import { loadConfig } from "../config/load.js";
import { ADMIN_SCHEMA } from "../config/tables.js";
import type { LockhostConfig } from "../config/types.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import { Host, type ReloadReport } from "../host.js";
import { LockService } from "../locking/service.js";
import { AdminClient, AdminUnreachable, adminTls, adminUrl, type AdminTlsFiles } from "./admin-client.js";
import { formatLocks, formatStats, formatStatus } from "./format.js";
import { checkKind, kindRow, LOCK_KINDS, type LockKind } from "../../kit/kinds.js";
import { check } from "./check.js";
import { call, parseCallArg } from "./call.js";
import { cliLogger, parseLogFormat, type LogFormat } from "./logger.js";
import { notify, notifySettled, reloadingState, setNotifyLogger } from "./notify.js";
import { handleSignals } from "./signals.js";
import { logSummary } from "./summary.js";
import { MAX_LIST_LIMIT } from "../locking/list.js";
import type { ListOptions } from "../locking/service.js";

/** The --kind values, as usage lines show them. */
const KIND_USAGE = LOCK_KINDS.join("|");

const HELP: Record<string, string> = {
  main: `lockhost: a host for WebAssembly plugins that take distributed locks

Usage: lockhost <command> [options]

Commands:
  run       run the plugins and schedules of a config file
  check     check a config: its plugins, schedules and backend, without running anything
  call      run one export of a plugin once, print what it returned
  status    show a running host's lock counters, or who holds a lock
  locks     list the locks held now: holder, fence, age, TTL left, waiters
  release   force-release a lock (operator action)
  reload    make a running host re-read its config and apply it, without a gap

Run 'lockhost <command> --help' for a command's options; 'lockhost --version' prints the version.`,
  run: `Usage: lockhost run --config FILE [--local-nodes N] [--log-format json|pretty]

Loads every [[plugins]] entry, starts the [[scheduled]] jobs, prints a summary (backend, nodes,
plugins with their runtime and instances, schedules, admin URL) and logs to stdout: readable
lines on a terminal, JSON lines (pino) when piped or with --log-format json.
A plugin runs [[plugins]] instances = N guest instances (default 1), each one call at a time;
a tick that finds none free is skipped (skipped_overlap) and takes no lock, and a tick whose
lock is gone when its export is to start is not run (skipped_lost).
With an [admin] table in the config it also starts the admin listener (stats, Prometheus
metrics, lock status, force-release) and logs its URL ("admin listener started").
On SIGINT, SIGTERM or SIGQUIT it stops ticking, ends the waits guests are parked in
(-CANCELLED), lets running calls finish and releases every lock it holds, all within
[host].shutdown_timeout_ms (a release the backend fails is tried again meanwhile), and exits 0.
A lock still held then is named (name, kind, fence) in one ERROR line and the exit code is 1.
A second such signal exits at once (1). SIGHUP re-reads the config file and applies it without
a gap, as 'lockhost reload' does (docs/operators.md, "Reloading"); SIGUSR2 and the other signals
that would end it are logged and ignored (docs/operators.md, "Signals").
Under a service manager that sets NOTIFY_SOCKET (systemd Type=notify) it sends READY=1 once
/readyz would answer 200, RELOADING=1 and READY=1 around a reload, and STOPPING=1 when a stop
begins, through systemd-notify (docs/deploy.md); a message that cannot be sent is logged once
and changes nothing else.

Options:
  -c, --config FILE     the TOML config (default: lockhost.toml)
      --log-format F    json or pretty (default: pretty on a terminal, json otherwise)
      --local-nodes N   development: run N hosts in this process, named <node>-1..<node>-N,
                        sharing one memory backend, to watch one node win each tick
                        (memory backend only; default 1; only <node>-1 starts the admin listener)
  -h, --help            this help`,
  call: `Usage: lockhost call PLUGIN EXPORT [ARG...] [--config FILE] [--string] [--json] [--log-format json|pretty]

Runs the export EXPORT of the plugin PLUGIN once, through a host started from the config as
'lockhost run' starts one (the same backend, plugins, grants and lock settings: the export
takes its locks as it would there), prints what it returned on stdout and stops, releasing
every lock. It starts no schedule and no admin listener, and holds its locks as node
"<[host] node>/call", so a running host of the same config tells its locks apart and is never
reclaimed from. Logs go to stderr. With the memory backend its locks live in this process only.
Its host starts each plugin's instances (instances = N); the export runs on a free one.

Each ARG is a number when it reads as one (7, -1, 2.5), passed as the export's i32, f32 or f64,
and otherwise a string (a JSON string, '"42"', for text that reads as a number). Put "--"
before arguments that start with "-" (lockhost call p e -- -1).
An unknown export gets the one it most likely meant ("did you mean").
Signals act as on 'lockhost run' (Ctrl-C stops, waits end, every lock is released), but SIGHUP
is logged and ignored: a call has no config to reload. Exit codes: 0 the export returned, 1 it failed (trapped, timed out...) or a lock it
took could not be released, 2 bad usage, config, plugin, export or arguments.

Options:
  -c, --config FILE     the TOML config (default: lockhost.toml)
      --string          the export returns a string: print it
      --json            print {"result": ...} (an i64 as a string, nothing as null)
      --log-format F    json or pretty (default: pretty on a terminal, json otherwise)
  -h, --help            this help`,
  status: `Usage: lockhost status [KEY] [--kind ${KIND_USAGE}] [--config FILE] [--admin URL] [--json]

Without KEY: asks the running host's admin listener for its counters (locks held and kept
alive, acquisitions, contention, renewals, lost leases, waits; each schedule's ticks by
outcome: skipped_error counting those an outage skipped, skipped_overlap those that found
every instance of their plugin busy, skipped_lost those whose lock was gone when the export
was to start) and prints them. The listener
is the config's [admin] listen address, or --admin URL. Exits 2 when none is configured or
none answers.

With KEY: shows the holder, fence, acquisition and expiry times of the lock KEY. KEY is the
full lock name as the logs show it: "<plugin>:<key>" for a plugin's key, "global:<key>" for a
global one, "lockhost:schedule:<id>" for a schedule's lock (held only from a tick until half a
period after it, or until its job ends if later: between ticks it reads "not held", and status
says so). Read from the redis or pg backend
directly; through the admin listener with --admin, or when the backend is memory (whose locks
live inside the 'lockhost run' process) and the config has an [admin] table. When nobody holds
it, says where a lock of the same key is held if one is: in the other scope ("global:KEY" for
"KEY", and back) or of another kind (a read/write lock or semaphore of the name).

Through the admin listener it sends the admin token when it has one (LOCKHOST_ADMIN_TOKEN,
else [admin] token): a listener with [admin] auth = "all" (the default beyond loopback)
refuses reads without it; an owner shows with --show-owner only with it. A \${VAR} in [admin]
token that is not set is ignored (the backend itself needs no token to read).

Options:
  -c, --config FILE   the TOML config (default: lockhost.toml; optional with --admin)
      --admin URL     the admin listener, e.g. http://127.0.0.1:9464 (default: [admin] listen)
      --admin-ca FILE   PEM CA that signed an https listener's certificate (default: the
                      system's CAs, and the config's [admin] cert_file itself)
      --admin-cert FILE, --admin-key FILE
                      the client certificate for a listener with [admin] client_ca_file
      --kind K        the lock of that kind of the name (default: mutex); rw, semaphore or fair: the
                      read/write lock, semaphore or fair mutex, its holders (mode, fence, holder, times),
                      permits and queued writers
      --show-owner    print the lock's owner token (hidden by default: with it anyone can
                      release or restore the lock); through --admin it also needs the token
      --json          print JSON instead of a table
  -h, --help          this help`,
  reload: `Usage: lockhost reload [--config FILE] [--admin URL] [--json]

Asks the running host to re-read the config file it was started with and apply it, through its
admin listener (POST /reload, with the admin token: LOCKHOST_ADMIN_TOKEN, else [admin] token),
as SIGHUP does. A plugin whose .wasm changed (by SHA-256) or whose entry changed gets new
instances, started and checked before the old ones finish their calls and close; the others keep
theirs; plugins and schedules are added and removed, and schedules change at their next tick.
[locking], [host] node and log_level, and [admin] cannot change while the host runs: a reload
that changes them is refused, naming each key (NOT_RELOADABLE), and so is one whose file is
invalid or whose plugin does not load (CONFIG_INVALID, ABI_UNSUPPORTED): the host keeps running
its config unchanged. One reload runs at a time; a second waits for the first.
Prints what changed (--json: the listener's answer).
Exit codes: 0 reloaded, 1 the host refused the reload or it failed (nothing changed; the line
names the code and why), 2 bad usage, no admin listener answers, or --config itself cannot be
read or is invalid (this command reads it for the listener's address and token; with --admin
URL and LOCKHOST_ADMIN_TOKEN it reads none, and the host's own answer says what is wrong).

Options:
  -c, --config FILE   the TOML config (default: lockhost.toml; optional with --admin): where the
                      listener is, and its token
      --admin URL     the admin listener, e.g. http://127.0.0.1:9464 (default: [admin] listen)
      --admin-ca FILE, --admin-cert FILE, --admin-key FILE
                      as for 'lockhost status'
      --json          print the listener's JSON answer
  -h, --help          this help`,
  check: `Usage: lockhost check [--config FILE]

Does everything 'lockhost run' does before it runs anything, and stops there: validates the
config; loads every plugin (compiles it, checks its ABI version, imports and memory, and
instantiates it in the runtime its isolation resolves to on this Node), checks that every
schedule's export exists and takes no arguments (a schedule whose plugin did not load is a
fault of its own; the other plugins' schedules are still checked), and connects to the backend
and asks it.
Prints each check, then what would run: the plugins, and every schedule with its interval or
cron expression, those a plugin declares included. Takes no lock and fires no schedule.
Exit codes: 0 all well, 1 a fault found (each is printed with its code), 2 a config error.

Options:
  -c, --config FILE   the TOML config (default: lockhost.toml)
  -h, --help          this help`,
  locks: `Usage: lockhost locks [--kind ${KIND_USAGE}] [--prefix P] [--plugin NAME] [--limit N] [--cursor C] [--config FILE] [--admin URL] [--json]

Lists the locks held now, of every kind, by any host sharing the backend: full name, kind,
holder (plugin @ node), fence, age, TTL left of TTL, and how many acquisitions of the asked host
wait for it. A read/write lock or a semaphore has a row per holder (reader, writer or permit). Owner
tokens are never listed. Read from the redis or pg backend directly (Redis: SCAN over the key
prefix, on every master of a cluster; PostgreSQL: the holders table); through the admin
listener with --admin, or when the backend is memory and the config has an [admin] table.
One page at a time: when there are more, the last line is the command for the next page.
Through the admin listener it sends the admin token when it has one: a listener with
[admin] auth = "all" refuses reads without it (a \${VAR} in [admin] token may be unset otherwise).

Options:
  -c, --config FILE   the TOML config (default: lockhost.toml; optional with --admin)
      --admin URL     the admin listener, e.g. http://127.0.0.1:9464
      --admin-ca FILE   PEM CA that signed an https listener's certificate (default: the
                      system's CAs, and the config's [admin] cert_file itself)
      --admin-cert FILE, --admin-key FILE
                      the client certificate for a listener with [admin] client_ca_file
      --kind K        only locks of that kind: ${LOCK_KINDS.join(", ")}
      --prefix P      only names starting with P ("billing:", "global:jobs/", "lockhost:schedule:")
      --plugin NAME   only locks taken by this plugin ("host" for host-side callers)
      --limit N       locks per page, 1 to 1000 (default 100)
      --cursor C      the page after the one that printed C
      --json          print the page as JSON ({ locks, cursor })
  -h, --help          this help`,
  release: `Usage: lockhost release --force KEY [--kind ${KIND_USAGE}] [--config FILE] [--admin URL]

Deletes the lock KEY whoever holds it; with --kind, every holder of that read/write lock or
semaphore. Each holder is told at once (its lease is lost; a guest's lockhost_on_lost runs).
Fence counters are kept, so the next holder still gets a higher fence.
--force is required, to make the intent explicit.

Which protects what: on redis and pg the lock is deleted in the backend directly, so what
allows it is the backend's own access control, the credentials in the config's URL (a Redis
password or ACL user, a PostgreSQL role): whoever can reach the backend with them can release
any lock, and the admin token plays no part. With --admin, or when the backend is memory and the
config has an [admin] table, the running host does it through its admin listener, which needs
the admin token: LOCKHOST_ADMIN_TOKEN, else [admin] token from the config (its \${VAR} must be
set then); without it the listener refuses (401/403). 'status' and 'locks' only read: they
need the token only from a listener with [admin] auth = "all".

Options:
  -c, --config FILE   the TOML config (default: lockhost.toml; optional with --admin)
      --admin URL     the admin listener, e.g. http://127.0.0.1:9464
      --admin-ca FILE   PEM CA that signed an https listener's certificate (default: the
                      system's CAs, and the config's [admin] cert_file itself)
      --admin-cert FILE, --admin-key FILE
                      the client certificate for a listener with [admin] client_ca_file
  -f, --force         required
      --kind K        that kind's lock of the name (default: mutex)
  -h, --help          this help`,
};

/** This package's version, from its package.json (two folders up in the build and in the source tree). */
function packageVersion(): string {
  const file = fileURLToPath(new URL(import.meta.url.includes("/dist/") ? "../../../package.json" : "../../package.json", import.meta.url));
  return (JSON.parse(readFileSync(file, "utf8")) as { version: string }).version;
}

/** The default config file, read from the working directory. */
const DEFAULT_CONFIG = "lockhost.toml";

/** Exit codes: 0 ok, 1 a failure at run time, 2 bad usage or config, or no admin listener. */
export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === "--version" || command === "-V" || command === "version") {
    console.log(`lockhost ${packageVersion()}`);
    return 0;
  }
  if (!command || command === "-h" || command === "--help" || command === "help") {
    console.log(HELP.main);
    return command ? 0 : 2;
  }
  if (!(command in HELP) || command === "main") {
    console.error(`lockhost: unknown command "${command}"\n\n${HELP.main}`);
    return 2;
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: rest,
      allowPositionals: true,
      options: {
        config: { type: "string", short: "c" },
        admin: { type: "string" },
        "admin-ca": { type: "string" },
        "admin-cert": { type: "string" },
        "admin-key": { type: "string" },
        help: { type: "boolean", short: "h" },
        json: { type: "boolean" },
        force: { type: "boolean", short: "f" },
        "show-owner": { type: "boolean" },
        "local-nodes": { type: "string", default: "1" },
        "log-format": { type: "string" },
        prefix: { type: "string" },
        plugin: { type: "string" },
        limit: { type: "string" },
        cursor: { type: "string" },
        kind: { type: "string" },
        string: { type: "boolean" },
      },
    });
  } catch (err) {
    console.error(`lockhost ${command}: ${(err as Error).message}\n\n${HELP[command]}`);
    return 2;
  }
  const { values, positionals } = parsed;
  adminTlsFiles = {
    ...(values["admin-ca"] !== undefined && { ca: values["admin-ca"] }),
    ...(values["admin-cert"] !== undefined && { cert: values["admin-cert"] }),
    ...(values["admin-key"] !== undefined && { key: values["admin-key"] }),
  };
  if (values.help) {
    console.log(HELP[command]);
    return 0;
  }
  if (command === "run") {
    const config = await loadConfig(values.config ?? DEFAULT_CONFIG);
    return run(config, parseLocalNodes(values["local-nodes"]!, config), parseLogFormat(values["log-format"]));
  }

  if (command === "call") {
    const [plugin, exportName, ...args] = positionals;
    if (plugin === undefined || exportName === undefined) {
      console.error(`lockhost call: expected PLUGIN and EXPORT\n\n${HELP.call}`);
      return 2;
    }
    const config = await loadConfig(values.config ?? DEFAULT_CONFIG);
    const request = { plugin, export: exportName, args: args.map(parseCallArg), string: values.string ?? false, json: values.json ?? false };
    return call(config, request, parseLogFormat(values["log-format"]));
  }

  if (command === "check") {
    if (positionals.length > 0) {
      console.error(`lockhost check: takes no arguments besides its options\n\n${HELP.check}`);
      return 2;
    }
    return check(await loadConfig(values.config ?? DEFAULT_CONFIG));
  }
  if (command === "reload") {
    if (positionals.length > 0) {
      console.error(`lockhost reload: takes no arguments besides its options\n\n${HELP.reload}`);
      return 2;
    }
    return orUnreachable(command, async () =>
      reload(await cliConfig(values.config, values.admin !== undefined, "required"), values.admin, values.json ?? false),
    );
  }
  if (command === "locks") {
    if (positionals.length > 0) {
      console.error(`lockhost locks: takes no KEY (use --prefix)\n\n${HELP.locks}`);
      return 2;
    }
    const options = listOptions(values);
    return withLocks(values.config, values.admin, command, (locks) => listLocks(locks, options, values, values.json ?? false));
  }

  const key = positionals[0];
  const keyOptional = command === "status";
  if (positionals.length > 1 || (!keyOptional && !key)) {
    console.error(`lockhost ${command}: expected ${keyOptional ? "at most" : "exactly"} one KEY\n\n${HELP[command]}`);
    return 2;
  }
  if (command === "release" && !values.force) {
    console.error(`lockhost release: refusing without --force (it deletes a lock someone may hold)\n\n${HELP.release}`);
    return 2;
  }
  if (command === "status" && key === undefined) {
    return orUnreachable(command, async () =>
      showStats(await cliConfig(values.config, values.admin !== undefined, "if-set"), values.admin, values.json ?? false),
    );
  }
  let kind: LockKind | undefined;
  try {
    kind = values.kind === undefined ? undefined : checkKind(values.kind, LOCK_KINDS, "--kind");
  } catch (err) {
    console.error(`lockhost ${command}: ${(err as Error).message}\n\n${HELP[command]}`);
    return 2;
  }
  return withLocks(values.config, values.admin, command, (locks) => inspect(locks, command, key!, kind, values.json ?? false, values["show-owner"] ?? false));
}

/** Runs `action`; an admin listener that does not answer is exit code 2, said in one line. */
async function orUnreachable(command: string, action: () => Promise<number>): Promise<number> {
  try {
    return await action();
  } catch (err) {
    if (!(err instanceof AdminUnreachable)) throw err;
    console.error(`lockhost ${command}: ${err.message}`);
    return 2;
  }
}

/** The --prefix, --plugin, --limit and --cursor of `locks`, checked. */
function listOptions(values: { kind?: string; prefix?: string; plugin?: string; limit?: string; cursor?: string }): ListOptions {
  let limit: number | undefined;
  if (values.limit !== undefined) {
    limit = Number(values.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_LIMIT) {
      throw new LockhostError("INVALID_ARGUMENT", `--limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got "${values.limit}"`);
    }
  }
  return {
    ...(values.kind !== undefined && { kind: checkKind(values.kind, LOCK_KINDS, "--kind") }),
    ...(values.prefix !== undefined && { prefix: values.prefix }),
    ...(values.plugin !== undefined && { plugin: values.plugin }),
    ...(limit !== undefined && { limit }),
    ...(values.cursor !== undefined && { cursor: values.cursor }),
  };
}

async function listLocks(locks: LockReader, options: ListOptions, values: Record<string, unknown>, json: boolean): Promise<number> {
  const page = await locks.list(options);
  if (json) {
    console.log(JSON.stringify(page));
    return 0;
  }
  // The next page's command repeats this one's options, with the new cursor.
  const again = ["config", "admin", "kind", "prefix", "plugin", "limit"]
    .filter((name) => typeof values[name] === "string")
    .map((name) => `--${name} ${shellQuote(values[name] as string)}`);
  console.log(formatLocks(page, (cursor) => ["lockhost locks", ...again, `--cursor ${shellQuote(cursor)}`].join(" ")));
  return 0;
}

/** `text` as one word for a POSIX shell. */
function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./:=@%+-]+$/.test(text) ? text : `'${text.replace(/'/g, "'\\''")}'`;
}

/**
 * The config of status, locks and release: --config, else lockhost.toml. With --admin it is only
 * a source of the token, so a missing default file is no error then. `secrets` "if-set": a
 * secret whose `${VAR}` is unset (the admin token above all) is left out rather than refused,
 * for a command that does not use it (see withLocks).
 */
async function cliConfig(file: string | undefined, hasAdminFlag: boolean, secrets: "required" | "if-set"): Promise<LockhostConfig | undefined> {
  const load = (path: string): Promise<LockhostConfig> => loadConfig(path, process.env, { secrets });
  if (file !== undefined || !hasAdminFlag) return load(file ?? DEFAULT_CONFIG);
  try {
    await access(DEFAULT_CONFIG);
  } catch {
    return undefined;
  }
  return load(DEFAULT_CONFIG);
}

/** --admin-ca, --admin-cert and --admin-key of this run. */
let adminTlsFiles: AdminTlsFiles = {};

function adminClient(config: LockhostConfig | undefined, flag: string | undefined): AdminClient {
  // The environment first: it lets an operator use a token without writing it in a file.
  const token = process.env[ADMIN_SCHEMA.fields.token.env!] || config?.admin?.token;
  const url = adminUrl(flag, config?.admin, config?.source);
  // Checked before any request, so a wrong file is said as such (exit 2), not as a TLS failure.
  const tls = adminTls(adminTlsFiles, config?.admin);
  const trusting =
    adminTlsFiles.ca !== undefined
      ? `--admin-ca ${adminTlsFiles.ca}`
      : config?.admin?.certFile !== undefined
        ? `[admin] cert_file ${config.admin.certFile} (or the system's CAs)`
        : "the system's CAs (pass --admin-ca FILE)";
  return new AdminClient(url, token, tls, trusting);
}

async function showStats(config: LockhostConfig | undefined, flag: string | undefined, json: boolean): Promise<number> {
  const client = adminClient(config, flag);
  const body = await client.stats();
  console.log(json ? JSON.stringify(body) : formatStats(body, client.url));
  return 0;
}

/** `lockhost reload`: 0 when the host reloaded, 1 when it refused (or failed) and kept its config. */
async function reload(config: LockhostConfig | undefined, flag: string | undefined, json: boolean): Promise<number> {
  const client = adminClient(config, flag);
  let body: unknown;
  try {
    body = await client.reload();
  } catch (err) {
    if (!(err instanceof LockhostError)) throw err;
    console.error(`lockhost reload: ${err.code}: ${err.message}`);
    return 1;
  }
  if (json) {
    console.log(JSON.stringify(body));
    return 0;
  }
  const reports = (Array.isArray(body) ? body : [body]) as ReloadReport[];
  for (const r of reports) {
    const names = (list: readonly string[] | undefined): string => (list && list.length > 0 ? list.join(", ") : "none");
    console.log(
      `reloaded ${r.source ?? "the config"} at ${client.url}\n` +
        `  plugins:   added ${names(r.plugins?.added)}; replaced ${names(r.plugins?.replaced)}; removed ${names(r.plugins?.removed)}; ` +
        `kept ${names(r.plugins?.kept)}\n` +
        `  schedules: added ${names(r.schedules?.added)}; changed ${names(r.schedules?.changed)}; removed ${names(r.schedules?.removed)}`,
    );
  }
  return 0;
}

function parseLocalNodes(text: string, config: LockhostConfig): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1 || n > 16) {
    throw new LockhostError("INVALID_ARGUMENT", `--local-nodes must be an integer from 1 to 16, got "${text}"`);
  }
  // Nodes in one process share one backend instance: only a backend that is not shared between
  // processes (memory) needs that; a distributed one runs one process per node.
  if (n > 1 && chosenBackend(config.locking).distributed) {
    throw new LockhostError("INVALID_ARGUMENT", `--local-nodes is for the memory backend; with ${config.locking.backend}, start one process per node`);
  }
  return n;
}

/** The config of node `i` of `--local-nodes`: named <node>-<i>; one admin listener for the process (on the first node), as more would fight over its port. */
function localNode(config: LockhostConfig, i: number): LockhostConfig {
  const { admin: _admin, ...withoutAdmin } = config;
  return { ...(i === 1 ? config : withoutAdmin), host: { ...config.host, node: `${config.host.node}-${i}` } };
}

async function run(config: LockhostConfig, localNodes: number, format: LogFormat | undefined): Promise<number> {
  const hosts: Host[] = [];
  const root = await cliLogger(config.host.logLevel, format, {});
  setNotifyLogger(root);
  // Every signal that would end the process stops it gracefully or is ignored (signals.ts),
  // from before the first host takes a lock (a stop asked for during the start waits for it).
  // They stay installed until the process exits: a signal after the stop changes nothing.
  let askStop!: (signal: NodeJS.Signals) => void;
  const stopAsked = new Promise<NodeJS.Signals>((resolve) => (askStop = resolve));
  let forced!: (code: number) => void;
  const force = new Promise<number>((resolve) => (forced = resolve));
  // SIGHUP and the admin listener's POST /reload: every node of this process re-reads the file.
  const reloadAll = async (): Promise<unknown> => {
    if (hosts.length < localNodes) throw new LockhostError("CLOSED", "the host is still starting; nothing was reloaded");
    // A service manager hears of the reload and of its end, applied or refused (the running config serves either way).
    void notify(reloadingState());
    try {
      return await reloadNodes();
    } finally {
      void notify("READY=1");
    }
  };
  const reloadNodes = async (): Promise<unknown> => {
    if (localNodes === 1) return hosts[0]!.reload();
    let read: LockhostConfig;
    try {
      read = await loadConfig(config.source ?? DEFAULT_CONFIG);
    } catch (err) {
      const e = toLockhostError(err);
      root.error({ code: e.code, err: e.message }, `reload refused; the running config is kept: ${e.code}: ${e.message}`);
      throw e;
    }
    return Promise.all(hosts.map((h, i) => h.reload(localNode(read, i + 1))));
  };
  handleSignals(root, {
    stop: (signal) => askStop(signal),
    reload(signal) {
      root.info({ signal }, `${signal}: reloading ${config.source ?? "the config"}`);
      // A refusal is logged by the host (or above); the process runs on with its config.
      reloadAll().catch((err: unknown) => {
        const e = toLockhostError(err);
        if (e.code === "CLOSED") root.warn({ signal, err: e.message }, `${signal}: not reloaded: ${e.message}`);
      });
    },
    force(signal) {
      // A lock whose release is on its way is not counted as held, and may or may not be released.
      root.warn({ signal }, "second signal: exiting without waiting; a lock not released yet is held until its TTL ends");
      forced(1);
    },
  });
  if (localNodes === 1) {
    hosts.push(await Host.start(config, { logger: root.child({ node: config.host.node }) }));
  } else {
    const log = root;
    const backend = await createBackend(config.locking, log, config.source);
    for (let i = 1; i <= localNodes; i++) {
      const nodeConfig = localNode(config, i);
      hosts.push(await Host.start(nodeConfig, { backend, logger: log.child({ node: nodeConfig.host.node }), reload: reloadAll }));
    }
  }
  for (const host of hosts) host.scheduler.start();
  const log = hosts[0]!.log;
  logSummary(root, config, hosts, (format ?? (process.stdout.isTTY ? "pretty" : "json")) === "pretty");
  // Ready as /readyz is: the listener is up, the backend answered, the plugins are loaded (notify.ts).
  void notify("READY=1");
  const stopped = stopAsked.then(async (signal) => {
    log.info({ signal }, "shutting down: no new ticks, waiting for running calls");
    void notify("STOPPING=1");
    try {
      // 1 when a lock could not be released (each host has named its locks in an ERROR line).
      const unreleased = await Promise.all(hosts.map((h) => h.stop()));
      return unreleased.some((u) => u.length > 0) ? 1 : 0;
    } catch (err) {
      log.error({ err: (err as Error).message }, "shutdown failed");
      return 1;
    } finally {
      // The service manager hears STOPPING=1 before the process is gone (bounded: it never holds up the exit long).
      await Promise.race([notifySettled(), new Promise((resolve) => setTimeout(resolve, 5000).unref())]);
    }
  });
  return Promise.race([stopped, force]);
}

/** What status, release and locks read or do: the backend through a LockService, or a running host's admin listener. */
type LockReader = Pick<AdminClient, "status" | "forceRelease" | "list" | "heldElsewhere">;

/**
 * Runs `action` on the locks the config names: through the admin listener with --admin (or
 * for the memory backend, whose locks only the running host has), else on the backend itself.
 * Only a release through the listener uses the admin token: status and locks only read, and on
 * the backend itself a release is the backend's credentials' to allow. So the token is read
 * only then; otherwise its `${VAR}` may be unset.
 */
function withLocks(file: string | undefined, flag: string | undefined, command: string, action: (locks: LockReader) => Promise<number>): Promise<number> {
  return orUnreachable(command, async () => {
    let config = await cliConfig(file, flag !== undefined, "if-set");
    // Read again in full, so an unset token variable is named rather than sent as no token.
    if (command === "release" && throughAdmin(config, flag)) config = await cliConfig(file, flag !== undefined, "required");
    return onLocks(config, command, flag, action);
  });
}

/** Whether a command goes through the admin listener: --admin, or memory locks, which only the running host has. */
function throughAdmin(config: LockhostConfig | undefined, flag: string | undefined): boolean {
  return flag !== undefined || (config !== undefined && !chosenBackend(config.locking).distributed && config.admin !== undefined);
}

async function onLocks(
  config: LockhostConfig | undefined,
  command: string,
  flag: string | undefined,
  action: (locks: LockReader) => Promise<number>,
): Promise<number> {
  if (throughAdmin(config, flag)) return action(adminClient(config, flag));
  // cliConfig returns a config whenever --admin is absent.
  const cfg = config!;
  if (!chosenBackend(cfg.locking).distributed) {
    throw new LockhostError(
      "CONFIG_INVALID",
      `lockhost ${command} needs a shared backend: with [locking] backend = "${cfg.locking.backend}" the locks live inside the 'lockhost run' ` +
        `process and no other process can see them (use redis or pg, or add an [admin] table to the config so this command can ask the running host)`,
    );
  }
  const log = pino({ level: "warn" }, pino.destination(2));
  const locks = new LockService(await createBackend(cfg.locking, log, cfg.source), { node: cfg.host.node });
  try {
    return await action(locks);
  } finally {
    await locks.close();
  }
}

/** `status NAME [--kind K]` or `release --force NAME [--kind K]`, through the backend or the admin listener alike. */
async function inspect(locks: LockReader, command: string, name: string, kind: LockKind | undefined, json: boolean, showOwner: boolean): Promise<number> {
  const kindOption = kind === undefined ? {} : { kind };
  if (command === "status") {
    const status = await locks.status({ name }, { ...kindOption, owners: showOwner });
    // An owner token lets anyone release or restore the lock: printed only when asked for.
    const shown = showOwner ? status : { ...status, holders: status.holders.map(({ owner: _owner, ...rest }) => rest) };
    console.log(json ? JSON.stringify(shown) : formatStatus(shown));
    return 0;
  }
  const holders = await locks.forceRelease({ name }, kindOption);
  const what = kind === undefined || kindRow(kind).isDefault ? name : `${kind} ${name}`;
  console.log(holders > 0 ? `released ${what}${holders > 1 ? ` (${holders} holders)` : ""}` : `${what} was not held`);
  return 0;
}
