// What a reload may change, and what it reports. A reload re-reads the config a host runs and
// applies it without a gap (host.ts): plugins whose module (by SHA-256) or entry changed get new
// instances, started and checked before the old ones drain; the others keep theirs; schedules
// follow at their next tick. What the running host cannot change is refused here, by key.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isDeepStrictEqual } from "node:util";
import { LockhostError } from "../kit/errors.js";
import { tomlKey } from "../kit/schema.js";
import type { LockhostConfig } from "./config/types.js";

/** What a reload did. */
export interface ReloadReport {
  /** The file re-read (absent for a config given in code). */
  readonly source?: string;
  readonly plugins: {
    /** New [[plugins]] entries, started. */
    readonly added: readonly string[];
    /** Plugins whose module (by content hash) or entry changed: new instances, the old ones drained. */
    readonly replaced: readonly string[];
    /** Unchanged module and entry: the same instances run on. */
    readonly kept: readonly string[];
    /** Entries gone: their instances drained and closed. */
    readonly removed: readonly string[];
  };
  /** Schedules by id (a plugin's declared ones included); each takes effect at its next tick. */
  readonly schedules: {
    readonly added: readonly string[];
    readonly changed: readonly string[];
    readonly removed: readonly string[];
  };
}

/**
 * What a running host cannot take from a reload, as rows: the key's path in the TOML, and why.
 * [locking] whole (the backend, its connection table, keepalive and waiting are the lock
 * service's, made once), [host] node (the holder name on every lock held) and log_level (the
 * loggers of running guests are made with it), and [admin] whole (the listener, its address,
 * TLS and token, is started once, before the plugins).
 */
export const NOT_RELOADABLE: readonly { readonly table: string; readonly why: string }[] = [
  { table: "[locking]", why: "the backend and its connection are opened once, with the lock service every guest shares" },
  { table: "[host] node", why: "the node name is the holder recorded on every lock this host holds" },
  { table: "[host] log_level", why: "running guests log through loggers made with it" },
  { table: "[admin]", why: "the admin listener (address, TLS, token, auth) is started once, before the plugins" },
];

/** The keys of `next` a running host of `running` cannot take, each named as the TOML spells it. */
export function refusedKeys(running: LockhostConfig, next: LockhostConfig): string[] {
  const keys: string[] = [];
  if (running.host.node !== next.host.node) keys.push("[host] node");
  if (running.host.logLevel !== next.host.logLevel) keys.push("[host] log_level");
  keys.push(...differences(running.locking, next.locking, "locking"));
  if ((running.admin === undefined) !== (next.admin === undefined)) keys.push("[admin]");
  else if (running.admin && next.admin) keys.push(...differences(running.admin, next.admin, "admin"));
  return keys;
}

/** NOT_RELOADABLE naming every key of `next` a host running `running` cannot take; undefined when there is none. */
export function reloadRefusal(running: LockhostConfig, next: LockhostConfig): LockhostError | undefined {
  const keys = refusedKeys(running, next);
  if (keys.length === 0) return undefined;
  const why = keys.map((k) => `${k} (${whyFixed(k)})`);
  return new LockhostError(
    "NOT_RELOADABLE",
    `${next.source ?? "config"}: reload refused, nothing changed: ${keys.length === 1 ? "this key changes" : "these keys change"} what a running ` +
      `host cannot: ${why.join("; ")}. Restart the host to apply ${keys.length === 1 ? "it" : "them"} (docs/operators.md, "Rolling restart")`,
    { details: { keys: keys.join(", ") } },
  );
}

/** Why `key` ("[host] node", "[locking.redis] url") cannot change at run time: its row of NOT_RELOADABLE (a whole table's, for a key in one). */
function whyFixed(key: string): string {
  const row = NOT_RELOADABLE.find((r) => key === r.table || (r.table.endsWith("]") && key.startsWith(r.table.slice(0, -1))));
  return row?.why ?? "fixed at start";
}

/** The TOML keys whose values differ between two tables (sub-tables as [table.sub] key); values are never shown. */
function differences(a: object, b: object, table: string): string[] {
  const out: string[] = [];
  const ra = a as Readonly<Record<string, unknown>>;
  const rb = b as Readonly<Record<string, unknown>>;
  for (const key of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
    const x = ra[key];
    const y = rb[key];
    if (isDeepStrictEqual(x, y)) continue;
    const isTable = (v: unknown): v is object => typeof v === "object" && v !== null && !Array.isArray(v);
    if (isTable(x) && isTable(y) && key !== "listen") out.push(...differences(x, y, `${table}.${tomlKey(key)}`));
    else out.push(isTable(x) || isTable(y) ? `[${table}.${tomlKey(key)}]` : `[${table}] ${tomlKey(key)}`);
  }
  return out;
}

/** The SHA-256 (hex) of the file at `path`, or undefined when it cannot be read (the load then says why). */
export async function fileSha256(path: string): Promise<string | undefined> {
  try {
    return createHash("sha256")
      .update(await readFile(path))
      .digest("hex");
  } catch {
    return undefined;
  }
}
