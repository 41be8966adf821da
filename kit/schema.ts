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

declare const TYPES: unique symbol;

/**
 * A FieldSpec that also carries, in its type only, what the table's value holds for it (`Out`)
 * and what a config built in code may give (`In`); each includes `undefined` when the key may be
 * missing there. The builders below infer both from the declaration (`optional`, `default`), so
 * a table's value and input types are derived from its fields (TableValue, TableInput).
 */
export interface Field<Out, In = Out> extends FieldSpec<Exclude<Out, undefined>> {
  /** Never set: it only carries the two types. */
  readonly [TYPES]?: { readonly out: Out; readonly in: In };
}

/** What a builder gives for options `O`: optional (may be missing), defaulted (input may leave it out) or required. */
type Built<T, O> = O extends { readonly optional: true } ? Field<T | undefined> : O extends { readonly default: unknown } ? Field<T, T | undefined> : Field<T>;

const build = <T, O>(kind: FieldKind, o: O): Built<T, O> => ({ kind, ...o }) as unknown as Built<T, O>;

/** Builders of FieldSpecs, one per kind. */
export const field = {
  int: <const O extends Opts<number>>(o: O): Built<number, O> => build<number, O>("int", o),
  number: <const O extends Opts<number>>(o: O): Built<number, O> => build<number, O>("number", o),
  bool: <const O extends Opts<boolean>>(o: O): Built<boolean, O> => build<boolean, O>("bool", o),
  string: <const O extends Opts<string>>(o: O): Built<string, O> => build<string, O>("string", o),
  url: <const O extends Opts<string> & { readonly schemes: readonly string[] }>(o: O): Built<string, O> => build<string, O>("url", o),
  /** A string never shown in messages or logs. */
  secret: <const O extends Opts<string>>(o: O): Built<string, O> => build<string, O>("secret", o),
  oneOf: <const V extends string, const O extends Opts<V> = Opts<V>>(values: readonly V[], o: O): Built<V, O> => build<V, O>("enum", { values, ...o }),
  stringList: <const O extends Opts<readonly string[]>>(o: O): Built<readonly string[], O> => build<readonly string[], O>("stringList", o),
  /**
   * A field the table's own code reads (a value parsed from text, a name checked against other
   * entries): the declaration still allows the key and documents it; the generic reader leaves
   * it alone. `Out` is what the table's value holds (with `undefined` when it may be missing),
   * `In` what a config built in code may give (with `undefined` when it may be left out).
   */
  custom: <Out, In = Out>(o: Pick<Opts<Exclude<Out, undefined>>, "doc" | "defaultDoc" | "toml" | "optional">): Field<Out, In> =>
    ({ kind: "custom", ...o }) as Field<Out, In>,
} as const;

/** Declares a table schema (a typed identity, so `T` is checked against the fields). */
export function table<T>(schema: TableSchema<T>): TableSchema<T> {
  return schema;
}

/** The fields of a table declared with defineTable, by property name. */
export type FieldMap = { readonly [name: string]: Field<unknown, unknown> };

type Flat<T> = { readonly [K in keyof T]: T[K] };
type OutOf<F> = F extends { readonly [TYPES]?: { readonly out: infer Out } } ? Out : never;
type InOf<F> = F extends { readonly [TYPES]?: { readonly in: infer In } } ? In : never;
/** `T` with the properties whose value may be `undefined` made optional. */
type OptionalWhereUndefined<T> = Flat<
  { readonly [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & {
    readonly [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined>;
  }
>;

/** The value of a table with fields `F`, as read (defaults applied): a missing optional field is an optional property. */
export type ValueOfFields<F extends FieldMap> = OptionalWhereUndefined<{ [K in keyof F]: OutOf<F[K]> }>;
/** What a config built in code gives for a table with fields `F`: what has a default may be left out. */
export type InputOfFields<F extends FieldMap> = OptionalWhereUndefined<{ [K in keyof F]: InOf<F[K]> }>;

/** A table declared with defineTable: a TableSchema of its derived value that keeps its fields' types. */
export type DefinedTable<F extends FieldMap> = TableSchema<ValueOfFields<F>> & { readonly fields: F };
/** The value a defined table reads to. */
export type TableValue<S> = S extends { readonly fields: infer F extends FieldMap } ? ValueOfFields<F> : never;
/** What a config built in code may give for a defined table. */
export type TableInput<S> = S extends { readonly fields: infer F extends FieldMap } ? InputOfFields<F> : never;

/**
 * Declares a table whose value and input types are derived from its fields (TableValue,
 * TableInput): a field is declared once, here, and the types follow it.
 */
export function defineTable<const F extends FieldMap>(schema: {
  readonly doc: string;
  readonly fields: F;
  check?(value: ValueOfFields<F>): TableProblem | undefined;
}): DefinedTable<F> {
  return schema as DefinedTable<F>;
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
