// The capabilities a plugin can be granted, one row each, and the one place that says, per
// capability: the guest imports it provides (its modules in abi/ops.ts, where each import's
// signature is declared), its keys in a [[plugins]] entry (and its own table, such as
// [plugins.http]), what `lockhost.capability(name)` answers for a plugin, and its doc. The config
// tables (the [[plugins]] entry's keys) and their reader (the row's own table), the grants a
// guest's runtime answers `lockhost.capability` from, and the docs' capability list
// (host/docs/capabilities-table.ts) read these rows; the modules of abi/ops.ts, which the loader
// and the runtimes provide, are held to them at compile time. Adding a capability is its row
// here, its imports in abi/ops.ts, its implementation (and its service in guest-capabilities.ts)
// and its tests.
import { FUNCTION_MODULE, type ModuleName } from "../../../abi/ops.js";
import { field, type FieldMap, type TableSchema } from "../../../kit/schema.js";
import { firstProblem, LOG_LEVELS } from "../../config/field-rules.js";
import { NAMESPACE_PATTERN, RESERVED_NAMESPACES } from "./functions.js";
import { HTTP_SCHEMA, type HttpGrant, type HttpInput } from "./http/config.js";
import { headerProblem } from "./http/header-rules.js";

/**
 * What a plugin's config grants, as the capability rows read it: its [[plugins]] entry, handed
 * on whole (each row reads its own keys), with `functions` cut to the namespaces the embedder
 * registered.
 */
export interface PluginGrants {
  readonly http?: HttpGrant;
  /** Host function namespaces granted and registered. */
  readonly functions: readonly string[];
  readonly [key: string]: unknown;
}

/** A capability's own table under a [[plugins]] entry. */
export interface CapabilityTable {
  /** Its key in the entry: `http` is `[plugins.http]`. */
  readonly key: string;
  readonly schema: TableSchema<unknown>;
  /**
   * Its custom fields that are tables of strings (`[plugins.http.headers]`), `${ENV}` substituted,
   * values never shown, each value held to the rule given (a problem, or undefined when fine).
   */
  readonly strings?: Readonly<Record<string, (key: string, value: string) => string | undefined>>;
}

/** One capability. */
export interface CapabilityRow {
  /** Its name as `lockhost.capability` takes it (for host functions, each namespace is one). */
  readonly name: string;
  /** One line for the docs. */
  readonly doc: string;
  /** The import modules it provides; their imports and signatures are rows of abi/ops.ts. */
  readonly modules: readonly ModuleName[];
  /** Its keys in a [[plugins]] entry, declared as the config tables declare theirs. */
  readonly fields: FieldMap;
  /** A table of its own under the entry (`[plugins.http]`), its value the key's. */
  readonly table?: CapabilityTable;
  /** The names `lockhost.capability` answers 1 for, for a plugin granted `grants`. */
  readonly names: (grants: PluginGrants) => readonly string[];
}

/**
 * Every capability, in the order their keys appear in a [[plugins]] entry. `lock` and
 * `lockhost` (locking itself, and what the host granted) are every guest's, not capabilities.
 */
export const CAPABILITIES = [
  {
    // Each namespace is a capability of its own: `lockhost.capability("billing")`.
    name: FUNCTION_MODULE,
    doc:
      "host functions: `billing.charge(in, out)`, bytes in, bytes out, may be async; the embedder registers them under the namespaces `functions` " +
      "grants (`Host.start(config, { functions })`)",
    modules: [FUNCTION_MODULE],
    fields: {
      functions: field.stringList({
        default: [],
        example: ["billing"],
        doc: "host function namespaces its guest may import (the embedder registers them: Host.start(config, { functions }))",
        check: (list) =>
          firstProblem(list, (ns, i) =>
            NAMESPACE_PATTERN.test(ns)
              ? RESERVED_NAMESPACES.has(ns)
                ? `entry ${i + 1}: "${ns}" is an ABI module, not a namespace`
                : undefined
              : `entry ${i + 1}: "${ns}" is not a namespace (${NAMESPACE_PATTERN})`,
          ),
      }),
    },
    names: (g) => g.functions,
  },
  {
    name: "log",
    doc: "log lines at debug, info, warn and error, tagged with the plugin; always granted, those below `log_level` dropped",
    modules: ["log"],
    fields: {
      logLevel: field.oneOf(LOG_LEVELS, {
        optional: true,
        defaultDoc: "[host] log_level",
        doc: "its guest's lines (trace, log.write) below this level are dropped in the guest's runtime",
      }),
    },
    names: () => ["log"],
  },
  {
    name: "config",
    doc: "the plugin's `[plugins.config]` values (strings, `${ENV}`, never logged): a value, or `NOT_FOUND` to test; always granted",
    modules: ["config"],
    fields: {
      // Read by the reader: a table of strings, ${ENV} substituted, values never shown.
      config: field.custom<Readonly<Record<string, string>>, Readonly<Record<string, string>> | undefined>({
        optional: true,
        toml: '{ ledger_url = "${LEDGER_URL}" }',
        doc: "[plugins.config]: strings its guest reads with config.get; values are never logged or shown by lockhost check",
      }),
    },
    names: () => ["config"],
  },
  {
    name: "http",
    doc: "fenced HTTP: status, headers, body; `FLAG_FENCE` sends a held lock's name and fence; only to the hosts `[plugins.http]` allows, within its limits",
    modules: ["http"],
    fields: {
      // Read by the reader with the row's table (HTTP_SCHEMA).
      http: field.custom<HttpGrant | undefined, HttpInput | undefined>({
        optional: true,
        toml: "{ allowed_hosts = [...] }",
        doc: "[plugins.http]: lets its guest make HTTP requests (below); absent: http.request is PERMISSION_DENIED",
      }),
    },
    table: { key: "http", schema: HTTP_SCHEMA as TableSchema<unknown>, strings: { headers: headerProblem } },
    names: (g) => (g.http !== undefined ? ["http"] : []),
  },
] as const satisfies readonly CapabilityRow[];

type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void ? I : never;

/** Every capability's [[plugins]] keys, as one map (for the entry's declaration). */
export type CapabilityFields = UnionToIntersection<(typeof CAPABILITIES)[number]["fields"]>;

/** Every capability's [[plugins]] keys, in the rows' order. */
export const CAPABILITY_FIELDS = Object.assign({}, ...CAPABILITIES.map((row) => row.fields)) as CapabilityFields;

/** The import modules every guest gets, granted or not: locking itself, and what the host granted it. */
export const GUEST_MODULES = ["lock", "lockhost"] as const satisfies readonly ModuleName[];

// Every import module of abi/ops.ts is every guest's or some capability's: one added there
// without a row here fails to compile. The loader and the runtimes provide the modules of
// abi/ops.ts (guest-module.ts, host-imports.ts) without reading these rows at run time, so a
// guest's worker does not load the config declarations (and the http rules) to start.
type Unowned = Exclude<ModuleName, (typeof GUEST_MODULES)[number] | (typeof CAPABILITIES)[number]["modules"][number]>;
const everyModuleOwned: [Unowned] extends [never] ? true : { unowned: Unowned } = true;
void everyModuleOwned;

/** The names `lockhost.capability` answers 1 for. */
export function grantedCapabilities(grants: PluginGrants): string[] {
  return CAPABILITIES.flatMap((row) => row.names(grants));
}
