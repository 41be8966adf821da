// Reads one config table against its schema (kit/schema.ts): the allowed keys, each field's
// type and range, its default and its further rule all come from the one declaration, and every
// failure is raised by the Table, so it names the file, the table and the key like any other.
import { tomlKey, type FieldSpec, type TableSchema } from "../../kit/schema.js";
import type { Key, Table } from "./reader.js";

/**
 * The table's values, defaults applied; custom fields are left for the caller to read.
 * @throws LockhostError CONFIG_INVALID at the first key that breaks the schema (while a whole
 *   config is read, every such key is recorded instead, and the read of the table ends).
 */
export function readTable<T>(t: Table, schema: TableSchema<T>): T {
  checkKeys(t, schema);
  return readFields(t, schema);
}

/** readTable without the check for undeclared keys, for a table that also holds sub-tables. */
export function readFields<T>(t: Table, schema: TableSchema<T>): T {
  const out: Record<string, unknown> = {};
  const since = t.recorded;
  for (const [name, spec] of fieldsOf(schema)) {
    // Custom fields are the table's own code's to read (after this, or before it).
    if (spec.kind === "custom") continue;
    // Each field on its own: a bad one does not hide the next.
    t.attempt(() => {
      const key = keyOf(name);
      const given = readField(t, key, spec);
      if (given !== undefined) {
        const problem = spec.check?.(given);
        if (problem !== undefined) t.fail(key, spec.kind === "secret" ? problem : `${problem}, got ${t.show(given)}`);
        out[name] = given;
      } else if (spec.default !== undefined) {
        out[name] = Array.isArray(spec.default) ? [...spec.default] : spec.default;
      } else if (!spec.optional) {
        t.fail(key, "is required");
      }
    });
  }
  // A rule across fields means nothing while one of them is missing.
  t.stopIfFailedSince(since);
  const value = out as T;
  const across = schema.check?.(value);
  if (across) t.fail(keyOf(across.key), across.problem);
  return value;
}

/** Rejects a key the schema does not declare, suggesting the nearest one (readTable does this first). */
export function checkKeys(t: Table, schema: TableSchema<unknown>): void {
  t.onlyKeys(fieldsOf(schema).map(([name]) => keyOf(name)));
}

/** A field's key: its TOML spelling and its property name (one string when they agree). */
export function keyOf(name: string): Key {
  const toml = tomlKey(name);
  return toml === name ? name : [toml, name];
}

function fieldsOf(schema: TableSchema<unknown>): [string, FieldSpec<unknown>][] {
  return Object.entries(schema.fields) as [string, FieldSpec<unknown>][];
}

function readField(t: Table, key: Key, spec: FieldSpec<unknown>): unknown {
  switch (spec.kind) {
    case "int":
      return t.int(key, [spec.min ?? Number.MIN_SAFE_INTEGER, spec.max ?? Number.MAX_SAFE_INTEGER]);
    case "number":
      return t.number(key, { gt: spec.gt, ge: spec.min, lt: spec.lt, le: spec.max });
    case "bool":
      return t.bool(key);
    case "string":
      return spec.nonEmpty ? t.nonEmptyString(key) : t.string(key);
    case "url":
      return t.url(key, spec.schemes ?? []);
    case "secret":
      return t.secret(key);
    case "enum":
      return t.oneOf(key, spec.values ?? []);
    case "stringList":
      return t.stringList(key);
    case "custom":
      return undefined;
  }
}
