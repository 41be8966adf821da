// The config-schema language of lockhost: every config field is declared once, here-shaped —
// type, default, range, unit, doc, environment alias — and the host's reader, its defaults,
// its allowed keys and the README's config reference all come from that one declaration.
// Backends declare their `[locking.<name>]` table with the same builders, so a third-party
// backend's table is read, defaulted and reported exactly like the built-ins'.
//
// A field's TOML key is the snake_case of its property name (`commandTimeoutMs` ->
// `command_timeout_ms`); objects built in code use the property name itself.

/** What a field holds. */
export type FieldKind = "int" | "number" | "bool" | "string" | "url" | "secret" | "enum" | "stringList" | "custom";

/** One config field. `T` is the value's type after reading (and defaulting). */
export interface FieldSpec<T> {
  readonly kind: FieldKind;
  /** One line for the README's config reference and error hints. */
  readonly doc: string;
  /** Applied when the key is left out; absent means the key is required (unless `optional`). */
  readonly default?: T;
  /** True: the key may be left out and has no default (the value is then undefined). */
  readonly optional?: boolean;
  /** int / number: inclusive bounds. */
  readonly min?: number;
  readonly max?: number;
  /** number: exclusive bounds (ratios such as 0 < r < 1). */
  readonly gt?: number;
  readonly lt?: number;
  /** The unit shown in docs ("ms", "MiB"); the key's name says it too (`ttl_ms`). */
  readonly unit?: string;
  /** enum: the allowed values. */
  readonly values?: readonly string[];
  /** url: the allowed schemes, without "://". */
  readonly schemes?: readonly string[];
  /** string: whether "" is allowed (default true). */
  readonly nonEmpty?: boolean;
  /** An environment variable the CLI reads before the field (e.g. LOCKHOST_ADMIN_TOKEN), named in the docs. */
  readonly env?: string;
  /**
   * A further rule on a value that passed its type and range: returns the problem as the end
   * of a sentence that starts with the key ("must not contain \"{\""), or undefined when fine.
   */
  check?(value: T): string | undefined;
  /** Shown in the README reference instead of the default, e.g. "the machine's hostname". */
  readonly defaultDoc?: string;
  /** Shown in the README reference for a field without a default (a required one, say). */
  readonly example?: T;
  /** Shown in the README reference as the value, in TOML (for a custom field). */
  readonly toml?: string;
}

/** The fields of a table whose read value is `T`. */
export type Fields<T> = { readonly [K in keyof T]-?: FieldSpec<Exclude<T[K], undefined>> };

/** A problem that spans fields of one table: which field (its property name) to blame, and why. */
export interface TableProblem {
  readonly key: string;
  readonly problem: string;
}

/** One config table: `[locking.redis]`, `[host]`, … */
export interface TableSchema<T> {
  /** One line for the README's config reference. */
  readonly doc: string;
  readonly fields: Fields<T>;
  /** A rule across fields, run after every field was read. */
  check?(value: T): TableProblem | undefined;
}

type Opts<T> = Omit<FieldSpec<T>, "kind">;

/** Builders of FieldSpecs, one per kind. */
export const field = {
  int: (o: Opts<number>): FieldSpec<number> => ({ kind: "int", ...o }),
  number: (o: Opts<number>): FieldSpec<number> => ({ kind: "number", ...o }),
  bool: (o: Opts<boolean>): FieldSpec<boolean> => ({ kind: "bool", ...o }),
  string: (o: Opts<string>): FieldSpec<string> => ({ kind: "string", ...o }),
  url: (o: Opts<string> & { readonly schemes: readonly string[] }): FieldSpec<string> => ({ kind: "url", ...o }),
  /** A string never shown in messages or logs. */
  secret: (o: Opts<string>): FieldSpec<string> => ({ kind: "secret", ...o }),
  oneOf: <const V extends string>(values: readonly V[], o: Opts<V>): FieldSpec<V> => ({ kind: "enum", values, ...o }),
  stringList: (o: Opts<readonly string[]>): FieldSpec<readonly string[]> => ({ kind: "stringList", ...o }),
  /**
   * A field the table's own code reads (a value parsed from text, a name checked against other
   * entries): the declaration still allows the key and documents it; the generic reader leaves
   * it alone.
   */
  custom: <T>(o: Pick<Opts<T>, "doc" | "defaultDoc" | "toml" | "optional">): FieldSpec<T> => ({ kind: "custom", ...o }),
} as const;

/** Declares a table schema (a typed identity, so `T` is checked against the fields). */
export function table<T>(schema: TableSchema<T>): TableSchema<T> {
  return schema;
}

/** The TOML spelling of a property name: `commandTimeoutMs` -> `command_timeout_ms`. */
export function tomlKey(property: string): string {
  return property.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The table's defaults, frozen: every field that has one. */
export function defaultsOf<T>(schema: TableSchema<T>): Readonly<Partial<T>> {
  const out: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(schema.fields) as [string, FieldSpec<unknown>][]) {
    if (spec.default !== undefined) out[name] = Array.isArray(spec.default) ? Object.freeze([...spec.default]) : spec.default;
  }
  return Object.freeze(out) as Readonly<Partial<T>>;
}

/**
 * The whole table as its defaults, frozen, for a schema in which every field has a default (or
 * is optional): what a backend runs on when its table is left out.
 * @throws Error when a required field has no default (a bug in the schema, not in a config).
 */
export function completeDefaultsOf<T>(schema: TableSchema<T>): Readonly<T> {
  for (const [name, spec] of Object.entries(schema.fields) as [string, FieldSpec<unknown>][]) {
    if (spec.default === undefined && !spec.optional) throw new Error(`config field ${name} has no default`);
  }
  return defaultsOf(schema) as Readonly<T>;
}
