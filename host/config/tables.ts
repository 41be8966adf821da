// The host's own config tables, each field declared once: type, default, range, unit and doc.
// The reader (schema.ts), CONFIG_DEFAULTS and the README's config reference come from these;
// backends declare their [locking.<name>] tables the same way, in their own folders.
import { hostname } from "node:os";
import { MAX_INPUT_BYTES, MAX_REPLY_BYTES, MAX_TTL_MS } from "../../abi/status.js";
import { field, table } from "../../kit/schema.js";
import { LISTEN_FORM } from "./listen.js";
import type { AdminAuth, HostSettings, Isolation, LockingHint, LogLevel, PluginConfig, ScheduledConfig } from "./types.js";
import type { HttpGrant } from "../runtime/capabilities/http/index.js";
import { cidrProblem, hostPatternProblem, methodProblem } from "../runtime/capabilities/http/index.js";
import { NAMESPACE_PATTERN, RESERVED_NAMESPACES } from "../runtime/capabilities/functions.js";
import { MAX_INSTANCES } from "../runtime/guest-pool.js";

// Records keyed by the union types, so adding a member to a union in types.ts fails to compile
// here until the loader accepts it.
const ISOLATIONS = keysOf<Isolation>({ worker: 1, inline: 1, auto: 1 });
const HINTS = keysOf<LockingHint>({ node_local: 1, require_global: 1, prefer_global: 1, leader_only: 1 });
const ADMIN_AUTHS = keysOf<AdminAuth>({ writes: 1, all: 1 });
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
    shutdownTimeoutMs: field.int({ default: 10_000, min: 0, max: 3_600_000, unit: "ms", doc: "the whole shutdown's budget: running calls finish, then locks are released (a failed release retried) within it" }),
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
export const ADMIN_SCHEMA = table<{ listen: string; token: string; auth: AdminAuth; metricsOpen: boolean; certFile: string; keyFile: string; clientCaFile: string }>({
  doc: "optional: the admin HTTP listener (probes, stats, metrics, status, force-release)",
  fields: {
    // Parsed by the reader: TOML has the text, code may pass { host, port }.
    listen: field.custom({ toml: '"127.0.0.1:9464"', doc: `${LISTEN_FORM}; loopback by default` }),
    token: field.secret({
      optional: true,
      example: "${LOCKHOST_ADMIN_TOKEN}",
      env: "LOCKHOST_ADMIN_TOKEN",
      doc: "16+ printable characters; force-release needs it, and so does every route but the probes and the page's files with auth = \"all\"; never logged",
      // Neither message shows the token, nor any part of it.
      check: (token) =>
        token.length < 16 || token.length > 4096
          ? `must be 16 to 4096 characters long, got ${token.length} characters (the value is not shown: it is a secret)`
          : // Sent as `Authorization: Bearer <token>`: printable ASCII without spaces, so it survives a header.
            !/^[\x21-\x7E]*$/.test(token)
            ? "must be printable ASCII without spaces, as it is sent in an Authorization header (the value is not shown: it is a secret)"
            : undefined,
    }),
    auth: field.oneOf(ADMIN_AUTHS, {
      optional: true,
      defaultDoc: '"all" when listen is beyond loopback, else "writes"',
      example: "all",
      doc: 'which routes need the token: "writes" (force-release) or "all" (every route but /livez, /readyz, /healthz and the dashboard\'s files); without a token, what needs it is refused',
    }),
    metricsOpen: field.bool({ optional: true, defaultDoc: "false", example: false, doc: 'serve /metrics without the token even when auth = "all" (for a Prometheus that sends none)' }),
    // Resolved against the config file's folder by the reader; read (and checked) when the listener starts.
    certFile: field.string({ optional: true, example: "/etc/lockhost/admin.crt", doc: "PEM certificate (chain) of the listener: with key_file, it serves HTTPS only" }),
    keyFile: field.string({ optional: true, example: "/etc/lockhost/admin.key", doc: "PEM private key of cert_file" }),
    clientCaFile: field.string({ optional: true, example: "/etc/lockhost/clients-ca.crt", doc: "PEM CA bundle: with it, a client must show a certificate it signed (mutual TLS)" }),
  },
  check: (a) =>
    (a.certFile === undefined) !== (a.keyFile === undefined)
      ? { key: a.certFile === undefined ? "certFile" : "keyFile", problem: "cert_file and key_file go together: set both for HTTPS, or neither" }
      : a.clientCaFile !== undefined && a.certFile === undefined
        ? { key: "clientCaFile", problem: "needs cert_file and key_file: client certificates are asked for over TLS only" }
        : undefined,
});

/** One `[[plugins]]` entry. */
export const PLUGIN_SCHEMA = table<Omit<PluginConfig, "runtime" | "config" | "http"> & { config: unknown; http: unknown }>({
  doc: "a guest plugin",
  fields: {
    // Checked by the reader: a pattern, reserved names, unique across entries.
    name: field.custom({ toml: '"report"', doc: '[a-z0-9][a-z0-9_.-]*, or npm-style @scope/name (at most 64 chars), unique; "global", "host", "lockhost" are reserved' }),
    // Resolved by the reader against the config file's folder.
    wasm: field.custom({ toml: '"plugins/guests/build/report.wasm"', doc: "the guest module; relative to the config file" }),
    isolation: field.oneOf(ISOLATIONS, { default: "worker", doc: "worker (own thread, time limit) | inline (host's thread, needs JSPI) | auto (inline where JSPI exists and call_timeout_ms is not set)" }),
    memoryLimitMib: field.int({ default: 16, min: 1, max: 4096, unit: "MiB", doc: "cap of the guest's memory" }),
    callTimeoutMs: field.int({ default: 5000, min: 1, max: 3_600_000, unit: "ms", doc: "a call running longer is stopped and the guest restarted; worker runtime only" }),
    instances: field.int({
      default: 1,
      min: 1,
      max: MAX_INSTANCES,
      doc: "guest instances run side by side (each runs one call at a time; each costs its own memory, up to memory_limit_mib, and a worker thread in the worker runtime); a scheduled tick finding none free is skipped as an overlap",
    }),
    globalKeys: field.stringList({ default: [], example: ["ledger", "jobs/*"], doc: "global keys it may use; * matches anything" }),
    functions: field.stringList({
      default: [],
      example: ["billing"],
      doc: "host function namespaces its guest may import (the embedder registers them: Host.start(config, { functions }))",
      check: (list) => firstProblem(list, (ns, i) => (NAMESPACE_PATTERN.test(ns) ? (RESERVED_NAMESPACES.has(ns) ? `entry ${i + 1}: "${ns}" is an ABI module, not a namespace` : undefined) : `entry ${i + 1}: "${ns}" is not a namespace (${NAMESPACE_PATTERN})`)),
    }),
    logLevel: field.oneOf(LOG_LEVELS, { optional: true, defaultDoc: "[host] log_level", doc: "its guest's lines (trace, log.write) below this level are dropped in the guest's runtime" }),
    // Read by the reader: a table of strings, ${ENV} substituted, values never shown.
    config: field.custom({ optional: true, toml: '{ ledger_url = "${LEDGER_URL}" }', doc: "[plugins.config]: strings its guest reads with config.get; values are never logged or shown by lockhost check" }),
    // Read by the reader with HTTP_SCHEMA.
    http: field.custom({ optional: true, toml: "{ allowed_hosts = [...] }", doc: "[plugins.http]: lets its guest make HTTP requests (below); absent: http.request is PERMISSION_DENIED" }),
    wasi: field.bool({ default: false, doc: "let the guest import WASI basics (stdout/stderr to the log, clocks, random; ENOSYS for the rest)" }),
    sha256: field.string({
      optional: true,
      example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      doc: "pins the module: the SHA-256 of the .wasm's bytes (64 hex digits, `sha256sum`); other bytes are refused at start and at reload",
      check: (v) => (/^[0-9a-fA-F]{64}$/.test(v) ? undefined : `must be 64 hex digits (the SHA-256 of the .wasm, as sha256sum prints it), got ${v.length} characters`),
    }),
  },
});

/** `[plugins.http]`: what a plugin's HTTP requests may reach, and their limits. */
export const HTTP_SCHEMA = table<Omit<HttpGrant, "headers"> & { headers: unknown }>({
  doc: "a plugin's HTTP requests",
  fields: {
    allowedHosts: field.stringList({
      example: ["api.example.com", "*.example.com"],
      doc: 'host[:port] it may reach: exact names or IPs, or "*.domain" for any subdomain; without a port only 80/443, ":*" any port; no other host or port is reached, redirects included',
      check: (list) => (list.length === 0 ? "must name at least one host" : firstProblem(list, hostPatternProblem, "allowed_hosts")),
    }),
    methods: field.stringList({ default: ["GET", "HEAD"], doc: "the methods it may use", check: (list) => firstProblem(list, methodProblem, "methods") }),
    timeoutMs: field.int({ default: 10_000, min: 1, max: 600_000, unit: "ms", doc: "a whole request, body included; also bounded by the call's time limit" }),
    maxRequestBytes: field.int({ default: 1 << 20, min: 0, max: MAX_INPUT_BYTES, unit: "bytes", doc: "the longest request body" }),
    // Capped like a host function's reply: a response is held whole in memory (and, in the worker
    // runtime, copied to the guest's thread), so an operator cannot grant a gigabyte per call.
    maxResponseBytes: field.int({ default: 1 << 20, min: 0, max: MAX_REPLY_BYTES, unit: "bytes", doc: "the longest response body: a longer one is cut off, TOO_LARGE" }),
    allowPrivateRanges: field.stringList({
      default: [],
      example: ["127.0.0.0/8"],
      doc: "CIDR ranges it may reach although loopback, private or link-local (else refused, whatever the name resolves to)",
      check: (list) => firstProblem(list, cidrProblem, "allow_private_ranges"),
    }),
    maxRedirects: field.int({ default: 5, min: 0, max: 20, doc: "redirects followed, each to an allowed host" }),
    // Read by the reader: a table of strings, ${ENV} substituted, values never shown.
    headers: field.custom({ optional: true, toml: '{ authorization = "Bearer ${API_TOKEN}" }', doc: "[plugins.http.headers]: sent with every request; values never logged" }),
  },
});

/**
 * The first problem of any entry of `list` (each problem names its entry), without the key's
 * name in front when the problem starts with it: the reader names the key already.
 */
function firstProblem(list: readonly string[], problem: (entry: string, index: number) => string | undefined, key?: string): string | undefined {
  for (const [i, entry] of list.entries()) {
    const p = problem(entry, i);
    if (p !== undefined) return key !== undefined && p.startsWith(`${key} `) ? p.slice(key.length + 1) : p;
  }
  return undefined;
}

/** One `[[scheduled]]` entry. */
export const SCHEDULED_SCHEMA = table<ScheduledConfig>({
  doc: "a job run under the schedule's lock",
  fields: {
    // These four are read together by the reader: the id derives from plugin and export.
    id: field.custom({ defaultDoc: '"<plugin>.<export>"', toml: '"report.run"', doc: "the schedule's lock is keyed on it" }),
    plugin: field.custom({ toml: '"report"', doc: "a declared plugin" }),
    export: field.custom({ toml: '"run"', doc: 'an export taking no arguments; "*" or left out: the schedules the plugin declares (lockhost_schedules, or lockhost_schedules_utf8)' }),
    schedule: field.custom({ toml: '"5s"', doc: "an interval (500ms, 5s, 1m, 2h) or a cron expression (5 or 6 fields); left out: the plugin's declared one" }),
    hint: field.oneOf(HINTS, { default: "require_global", doc: HINTS.join(" | ") }),
    ttlMs: field.int({ default: 60_000, min: 1, max: MAX_TTL_MS, unit: "ms", doc: "TTL of the schedule's lock" }),
    keepalive: field.bool({ default: false, doc: "renew the schedule's lock while the job runs (jobs longer than ttl_ms)" }),
    election: field.string({
      optional: true,
      defaultDoc: "the schedule's id",
      example: "reports",
      doc: 'hint = "leader_only": the election whose leader runs every tick, with no lock per tick (ttl_ms is the leadership\'s lease)',
      check: (v) => (v.length === 0 || v.length > 256 || /\p{Cc}/u.test(v) ? "must be 1 to 256 characters without control characters" : undefined),
    }),
    fair: field.bool({
      default: false,
      doc: "take the schedule's lock as a fair mutex: a tick still only tries it (a tick never waits, or a node would run it twice), and is skipped while anyone waits for the key (acquire with fair), so ticks cannot starve a waiter",
    }),
  },
});

function keysOf<T extends string>(record: Record<T, 1>): readonly T[] {
  return Object.keys(record) as T[];
}
