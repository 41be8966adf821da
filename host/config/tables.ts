// The host's own config tables, each field declared once: type, default, range, unit and doc.
// The reader (schema.ts), CONFIG_DEFAULTS and the README's config reference come from these;
// backends declare their [locking.<name>] tables the same way, in their own folders.
import { hostname } from "node:os";
import { MAX_TTL_MS } from "../../abi/status.js";
import { defineTable, field } from "../../kit/schema.js";
import { LISTEN_FORM } from "./listen.js";
import type { AdminAuth, BackendName, Isolation, ListenAddress, LockingHint, ScheduleSpec } from "./types.js";
import { CAPABILITY_FIELDS } from "../runtime/capabilities/table.js";
import { keysOf, LOG_LEVELS } from "./field-rules.js";
import { MAX_INSTANCES } from "../runtime/guest-pool.js";
import type { AbiChoice } from "../runtime/extism/module.js";

// Records keyed by the union types, so adding a member to a union in types.ts fails to compile
// here until the loader accepts it.
const ISOLATIONS = keysOf<Isolation>({ worker: 1, inline: 1, auto: 1 });
const HINTS = keysOf<LockingHint>({ node_local: 1, require_global: 1, prefer_global: 1, leader_only: 1 });
const ADMIN_AUTHS = keysOf<AdminAuth>({ writes: 1, all: 1 });
const ABIS = keysOf<AbiChoice>({ auto: 1, lockhost: 1, extism: 1 });

/** `[host]` */
export const HOST_SCHEMA = defineTable({
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
    shutdownTimeoutMs: field.int({
      default: 10_000,
      min: 0,
      max: 3_600_000,
      unit: "ms",
      doc: "the whole shutdown's budget: running calls finish, then locks are released (a failed release retried) within it",
    }),
    logLevel: field.oneOf(LOG_LEVELS, { default: "info", doc: LOG_LEVELS.join(" | ") }),
  },
});

/** `[locking]` itself (its sub-tables are the backends', keepalive and waiting). */
export const LOCKING_SCHEMA = defineTable({
  doc: "which backend holds the locks",
  fields: {
    // Read against the registry (its values are whatever backends are registered).
    backend: field.custom<BackendName, BackendName | undefined>({
      toml: '"memory"',
      doc: "a registered backend: memory | redis | pg, or one a package brings",
    }),
    packages: field.stringList({ optional: true, example: [], doc: "npm packages of third-party backends, loaded before the rest is validated" }),
  },
});

/** `[admin]`: the optional admin HTTP listener. */
export const ADMIN_SCHEMA = defineTable({
  doc: "optional: the admin HTTP listener (probes, stats, metrics, status, force-release)",
  fields: {
    // Parsed by the reader: TOML has the text, code may pass { host, port }.
    listen: field.custom<ListenAddress, Partial<ListenAddress> | string | undefined>({ toml: '"127.0.0.1:9464"', doc: `${LISTEN_FORM}; loopback by default` }),
    /** Bearer token the routes `auth` names require; absent: those routes are refused. Never logged. */
    token: field.secret({
      optional: true,
      example: "${LOCKHOST_ADMIN_TOKEN}",
      env: "LOCKHOST_ADMIN_TOKEN",
      doc: '16+ printable characters; force-release needs it, and so does every route but the probes and the page\'s files with auth = "all"; never logged',
      // Neither message shows the token, nor any part of it.
      check: (token) =>
        token.length < 16 || token.length > 4096
          ? `must be 16 to 4096 characters long, got ${token.length} characters (the value is not shown: it is a secret)`
          : // Sent as `Authorization: Bearer <token>`: printable ASCII without spaces, so it survives a header.
            !/^[\x21-\x7E]*$/.test(token)
            ? "must be printable ASCII without spaces, as it is sent in an Authorization header (the value is not shown: it is a secret)"
            : undefined,
    }),
    /** Absent: "all" when listen is beyond loopback, else "writes" (the listener decides, host/admin/access.ts). */
    auth: field.oneOf(ADMIN_AUTHS, {
      optional: true,
      defaultDoc: '"all" when listen is beyond loopback, else "writes"',
      example: "all",
      doc:
        'which routes need the token: "writes" (force-release) or "all" (every route but /livez, /readyz, /healthz and the dashboard\'s files); ' +
        "without a token, what needs it is refused",
    }),
    metricsOpen: field.bool({
      optional: true,
      defaultDoc: "false",
      example: false,
      doc: 'serve /metrics without the token even when auth = "all" (for a Prometheus that sends none)',
    }),
    // Resolved against the config file's folder by the reader; read (and checked) when the listener starts.
    certFile: field.string({
      optional: true,
      example: "/etc/lockhost/admin.crt",
      doc: "PEM certificate (chain) of the listener: with key_file, it serves HTTPS only",
    }),
    keyFile: field.string({ optional: true, example: "/etc/lockhost/admin.key", doc: "PEM private key of cert_file" }),
    clientCaFile: field.string({
      optional: true,
      example: "/etc/lockhost/clients-ca.crt",
      doc: "PEM CA bundle: with it, a client must show a certificate it signed (mutual TLS)",
    }),
  },
  check: (a) =>
    (a.certFile === undefined) !== (a.keyFile === undefined)
      ? { key: a.certFile === undefined ? "certFile" : "keyFile", problem: "cert_file and key_file go together: set both for HTTPS, or neither" }
      : a.clientCaFile !== undefined && a.certFile === undefined
        ? { key: "clientCaFile", problem: "needs cert_file and key_file: client certificates are asked for over TLS only" }
        : undefined,
});

/** One `[[plugins]]` entry. */
export const PLUGIN_SCHEMA = defineTable({
  doc: "a guest plugin",
  fields: {
    // Checked by the reader: a pattern, reserved names, unique across entries.
    name: field.custom<string>({
      toml: '"report"',
      doc: '[a-z0-9][a-z0-9_.-]*, or npm-style @scope/name (at most 64 chars), unique; "global", "host", "lockhost" are reserved',
    }),
    /** Absolute path of the .wasm (relative paths in TOML resolve against the config file's folder, in code against ConfigInput.baseDir). */
    wasm: field.custom<string>({ toml: '"plugins/guests/build/report.wasm"', doc: "the guest module; relative to the config file" }),
    isolation: field.oneOf(ISOLATIONS, {
      default: "worker",
      doc: "worker (own thread, time limit) | inline (host's thread, needs JSPI) | auto (inline where JSPI exists and call_timeout_ms is not set)",
    }),
    abi: field.oneOf(ABIS, {
      default: "auto",
      doc:
        "lockhost (this project's ABI) | extism (a module built with an Extism PDK: docs/guests-extism.md) | auto (extism when the module imports " +
        "from extism:host/)",
    }),
    memoryLimitMib: field.int({
      default: 16,
      min: 1,
      max: 4096,
      unit: "MiB",
      doc: "cap of the guest's memory (an Extism plugin's: its own memory and its kernel's blocks together)",
    }),
    /** A call running longer is stopped and the guest restarted (worker runtime); an inline guest keeps the default, not enforced. */
    callTimeoutMs: field.int({
      default: 5000,
      min: 1,
      max: 3_600_000,
      unit: "ms",
      doc: "a call running longer is stopped and the guest restarted; worker runtime only",
    }),
    instances: field.int({
      default: 1,
      min: 1,
      max: MAX_INSTANCES,
      doc:
        "guest instances run side by side (each runs one call at a time; each costs its own memory, up to memory_limit_mib, and a worker thread " +
        "in the worker runtime); a scheduled tick finding none free is skipped as an overlap",
    }),
    globalKeys: field.stringList({ default: [], example: ["ledger", "jobs/*"], doc: "global keys it may use; * matches anything" }),
    // Each capability's keys (functions, log_level, config, http), declared by its row.
    ...CAPABILITY_FIELDS,
    wasi: field.bool({ default: false, doc: "let the guest import WASI basics (stdout/stderr to the log, clocks, random; ENOSYS for the rest)" }),
    sha256: field.string({
      optional: true,
      example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      doc: "pins the module: the SHA-256 of the .wasm's bytes (64 hex digits, `sha256sum`); other bytes are refused at start and at reload",
      check: (v) =>
        /^[0-9a-fA-F]{64}$/.test(v) ? undefined : `must be 64 hex digits (the SHA-256 of the .wasm, as sha256sum prints it), got ${v.length} characters`,
    }),
  },
});

/** One `[[scheduled]]` entry. */
export const SCHEDULED_SCHEMA = defineTable({
  doc: "a job run under the schedule's lock",
  fields: {
    // These four are read together by the reader: the id derives from plugin and export.
    id: field.custom<string, string | undefined>({ defaultDoc: '"<plugin>.<export>"', toml: '"report.run"', doc: "the schedule's lock is keyed on it" }),
    plugin: field.custom<string>({ toml: '"report"', doc: "a declared plugin" }),
    /** The export to run; "*" in a short entry: every export the plugin declares a schedule for. */
    export: field.custom<string, string | undefined>({
      toml: '"run"',
      doc: 'an export taking no arguments; "*" or left out: the schedules the plugin declares (lockhost_schedules, or lockhost_schedules_utf8)',
    }),
    /** When it fires; in code, the TOML form ("5s", "0 * * * *") or an already parsed ScheduleSpec; left out: the plugin declares it. */
    schedule: field.custom<ScheduleSpec, string | ScheduleSpec | undefined>({
      toml: '"5s"',
      doc: "an interval (500ms, 5s, 1m, 2h) or a cron expression (5 or 6 fields); left out: the plugin's declared one",
    }),
    hint: field.oneOf(HINTS, { default: "require_global", doc: HINTS.join(" | ") }),
    ttlMs: field.int({ default: 60_000, min: 1, max: MAX_TTL_MS, unit: "ms", doc: "TTL of the schedule's lock" }),
    keepalive: field.bool({ default: false, doc: "renew the schedule's lock while the job runs (jobs longer than ttl_ms)" }),
    /** With hint "leader_only": the election whose leader runs every tick (schedules naming the same one run on the same node). */
    election: field.string({
      optional: true,
      defaultDoc: "the schedule's id",
      example: "reports",
      doc: 'hint = "leader_only": the election whose leader runs every tick, with no lock per tick (ttl_ms is the leadership\'s lease)',
      check: (v) => (v.length === 0 || v.length > 256 || /\p{Cc}/u.test(v) ? "must be 1 to 256 characters without control characters" : undefined),
    }),
    /**
     * Take the schedule's lock as a fair mutex (kit/kinds.ts). A tick only tries it, as ever (a waiting tick would run after
     * the tick's holder let go: twice); fair means a tick is skipped while anyone waits for the key, so a fair waiter is never
     * starved by ticks.
     */
    fair: field.bool({
      default: false,
      doc:
        "take the schedule's lock as a fair mutex: a tick still only tries it (a tick never waits, or a node would run it twice), and is skipped " +
        "while anyone waits for the key (acquire with fair), so ticks cannot starve a waiter",
    }),
  },
});
