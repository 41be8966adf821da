// Typed reads of raw config tables, knowing nothing of lockhost's own keys. Every failure names
// the file, the table and the key, because an operator reading the message has the file open
// and nothing else. The same reader serves TOML and objects built in code; the two differ only
// in key spelling (snake_case or camelCase), in how a table is named, and in that only TOML
// values get environment substitution: `${VAR}` in a string, and a string with a `${VAR}` where
// a number or a boolean belongs, read as one after substitution (so a port or a time limit can
// come from the environment too), its type checked then.
import { LockhostError } from "../../kit/errors.js";
import { maskUrl, redactUrlSecrets } from "../../kit/redact.js";
import { expandEnv, isUnsetVariable, variablesIn } from "./env.js";
import { didYouMean } from "../suggest.js";

/** A table as the TOML parser or the caller handed it over, not yet checked. */
export type Raw = { readonly [key: string]: unknown };

/** What holds for the whole input being read. */
export interface Ctx {
  /** Names the input at the start of every message. */
  readonly source: string;
  readonly mode: "toml" | "code";
  /** Where the schema resolves relative paths from. */
  readonly baseDir: string;
  /** Set for TOML only: objects built in code get no substitution. */
  readonly env: NodeJS.ProcessEnv | undefined;
  /**
   * "if-set": a secret whose `${VAR}` is not set is read as absent rather than as an error. For
   * callers that only read (lockhost status, locks), which need no secret; default "required".
   */
  readonly secrets?: "required" | "if-set";
  /**
   * Set while a whole config is read: the errors found so far. Reads then record an error and
   * go on (Table.attempt), so that every error is reported at once; without it the first
   * error is thrown.
   */
  readonly problems?: LockhostError[];
}

/**
 * Ends the read of a table or entry whose errors are recorded already: what is left of it
 * cannot be read without them, and would only add errors that follow from those.
 */
class Reported extends Error {}

/** A key's TOML name and code name; a plain string when both are spelled the same. */
export type Key = string | readonly [toml: string, code: string];

/** One table of the input, with what is needed to name it in messages. */
export class Table {
  private constructor(
    readonly ctx: Ctx,
    /** How messages name this table: `[[plugins]] #2 ("report")` or `plugins[1] ("report")`; "" for the root. */
    readonly label: string,
    /** Its dotted TOML path ("locking.redis"), for naming unknown sub-tables. */
    private readonly header: string,
    private readonly raw: Raw,
  ) {}

  /** The top level of an input. */
  static root(ctx: Ctx, raw: Raw): Table {
    return new Table(ctx, "", "", raw);
  }

  /** The same input, reading on after an error: each is recorded in `problems` (see Ctx.problems). */
  collecting(problems: LockhostError[]): Table {
    return new Table({ ...this.ctx, problems }, this.label, this.header, this.raw);
  }

  /** The same table, labelled with its entry's name once that is known. */
  named(name: string | undefined): Table {
    if (name === undefined) return this;
    const t = new Table(this.ctx, `${this.label} (${this.show(name)})`, this.header, this.raw);
    t.entryName = name;
    return t;
  }

  /** The name of the entry this table belongs to, once named(). */
  entryName: string | undefined;

  /** The keys the table was given a value for. */
  keys(): string[] {
    return Object.keys(this.raw).filter((k) => this.raw[k] !== undefined);
  }

  get(key: Key): unknown {
    const name = this.nameOf(key);
    // Own keys only: a TOML key named "constructor" must not find Object.prototype's.
    return Object.hasOwn(this.raw, name) ? this.raw[name] : undefined;
  }

  fail(key: Key, problem: string): never {
    throw configError(`${this.where(key)} ${problem}`);
  }

  /**
   * Runs `read`. While a whole config is read (Ctx.problems), a config error it raises is
   * recorded and undefined returned, so reading goes on; otherwise the error is thrown.
   */
  attempt<T>(read: () => T): T | undefined {
    try {
      return read();
    } catch (err) {
      if (err instanceof Reported) return undefined;
      if (this.ctx.problems === undefined || !(err instanceof LockhostError) || err.code !== "CONFIG_INVALID") throw err;
      this.ctx.problems.push(err);
      return undefined;
    }
  }

  /** How many errors were recorded so far (always 0 when the first error is thrown). */
  get recorded(): number {
    return this.ctx.problems?.length ?? 0;
  }

  /** Ends this read (see Reported) when errors were recorded since `recorded` was `since`. */
  stopIfFailedSince(since: number): void {
    if (this.recorded > since) throw new Reported();
  }

  /** `[[plugins]]` in TOML, `plugins` in code. */
  plural(key: string): string {
    return this.ctx.mode === "toml" ? `[[${key}]]` : key;
  }

  show(value: unknown): string {
    return show(value, this.ctx.mode);
  }

  /** Rejects any key not in `keys` (each one, when errors are collected), suggesting the nearest known one. */
  onlyKeys(keys: readonly Key[]): void {
    const known = keys.map((k) => this.nameOf(k));
    for (const name of Object.keys(this.raw)) {
      // An undefined value is how code leaves an optional field out, not a key it meant to set.
      if (known.includes(name) || this.raw[name] === undefined) continue;
      const value = this.raw[name];
      const hint = didYouMean(name, known);
      const what =
        this.ctx.mode === "code"
          ? `unknown key "${name}"`
          : isTable(value)
            ? `unknown table [${this.header ? `${this.header}.` : ""}${name}]`
            : Array.isArray(value) && value.length > 0 && value.every(isTable)
              ? `unknown table [[${name}]]`
              : `unknown key "${name}"`;
      // The table's other keys are still read: an unknown one does not change what they mean.
      this.attempt(() => {
        throw configError(`${this.prefix()}${what} (${hint}known: ${known.join(", ")})`);
      });
    }
  }

  /**
   * The sub-table at `key`; none when absent.
   *
   * @param dotted its full dotted name, which labels it in messages.
   */
  table(key: string, dotted: string): Table | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (!isTable(value)) this.fail(key, `must be a table, got ${this.show(value)}`);
    const label = this.ctx.mode === "toml" ? `[${dotted}]` : dotted;
    return new Table(this.ctx, label, dotted, value);
  }

  /** The sub-table at `key`, or an empty one standing in for it when absent (its defaults then apply). */
  emptyTable(key: string, dotted: string): Table {
    return this.table(key, dotted) ?? new Table(this.ctx, this.ctx.mode === "toml" ? `[${dotted}]` : dotted, dotted, {});
  }

  /** The entries of an array of tables (`[[plugins]]`); none when absent. */
  entries(key: string): Table[] {
    const value = this.get(key);
    if (value === undefined) return [];
    if (!Array.isArray(value)) this.fail(key, `must be an array of tables (${this.plural(key)}), got ${this.show(value)}`);
    // An entry that is no table is reported, and the others are read.
    return value.flatMap(
      (item: unknown, i) =>
        this.attempt(() => {
          const label = this.ctx.mode === "toml" ? `[[${key}]] #${i + 1}` : `${key}[${i}]`;
          if (!isTable(item)) throw configError(`${this.ctx.source}: ${label} must be a table, got ${this.show(item)}`);
          return [new Table(this.ctx, label, key, item)];
        }) ?? [],
    );
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
    const since = this.recorded;
    const items = value.map((item: unknown, i) =>
      // Each entry on its own: every bad one is reported.
      this.attempt(() => {
        const where = () => `${this.where(key)}[${i}]`;
        if (typeof item !== "string" || item === "") {
          throw configError(`${where()} must be a non-empty string, got ${this.show(item)}`);
        }
        const expanded = this.expand(item, where);
        if (expanded === "") throw configError(`${where()} must not be empty (after substitution)`);
        return expanded;
      }),
    );
    this.stopIfFailedSince(since);
    return items as string[];
  }

  bool(key: Key): boolean | undefined {
    const { value, from } = this.typed(key, parseBool);
    if (value === undefined) return undefined;
    if (typeof value !== "boolean") this.fail(key, `must be true or false, got ${this.show(value)}${from}`);
    return value;
  }

  int(key: Key, [min, max]: readonly [number, number]): number | undefined {
    const { value, from } = this.typed(key, parseNumber);
    if (value === undefined) return undefined;
    if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
      this.fail(key, `must be an integer from ${min} to ${max}, got ${this.show(value)}${from}`);
    }
    return value;
  }

  /**
   * A number (integer or not) within `range`; bounds given as `gt`/`lt` are exclusive, as
   * `ge`/`le` inclusive. NaN and infinities (TOML `nan`, `inf`) never pass.
   */
  number(key: Key, range: NumberRange): number | undefined {
    const { value, from } = this.typed(key, parseNumber);
    if (value === undefined) return undefined;
    const { gt, ge, lt, le } = range;
    const ok =
      typeof value === "number" &&
      Number.isFinite(value) &&
      (gt === undefined || value > gt) &&
      (ge === undefined || value >= ge) &&
      (lt === undefined || value < lt) &&
      (le === undefined || value <= le);
    if (!ok) this.fail(key, `must be a number ${describeRange(range)}, got ${this.show(value)}${from}`);
    return value as number;
  }

  /**
   * The value at `key` for a number or boolean read: as given, or, for a TOML string with a
   * `${VAR}` in it, the substituted text as `parse` reads it (the text itself when it does not
   * parse, for the caller's message), with `from` naming the variables for that message.
   */
  private typed<T>(key: Key, parse: (text: string) => T | undefined): { value: unknown; from: string } {
    const value = this.get(key);
    if (typeof value !== "string" || this.ctx.env === undefined || !value.includes("${")) return { value, from: "" };
    const text = this.expand(value, () => this.where(key));
    return {
      value: parse(text.trim()) ?? text,
      from: ` (from ${variablesIn(value)
        .map((v) => `\${${v}}`)
        .join(", ")})`,
    };
  }

  /**
   * A string that must never appear in a message or a log (a token): no message quotes it,
   * not even when its type or a substitution in it is wrong.
   */
  secret(key: Key): string | undefined {
    const value = this.get(key);
    if (value === undefined) return undefined;
    if (typeof value !== "string") this.fail(key, `must be a string, got ${kindOf(value, this.ctx.mode)} (the value is not shown: it is a secret)`);
    try {
      return this.expand(value, () => this.where(key));
    } catch (err) {
      if (this.ctx.secrets === "if-set" && isUnsetVariable(err)) return undefined;
      // The one substitution error that quotes the text it read; a token pasted inside ${...} would leak.
      const message = err instanceof Error ? err.message : String(err);
      throw configError(message.replace(/has "\$\{[\s\S]*?\}", which is not/, `has "\${***}", which is not`));
    }
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
    // A password's "/", "?" or "#" ends the host part early for the URL parsers the drivers use
    // (the URL does not parse, or names the wrong host): an "@" in the path means that happened.
    const encode = 'percent-encode "/", "?", "#" and "@" in a user name or password (%2F, %3F, %23, %40)';
    if (!URL.canParse(value)) this.fail(key, `is not a valid URL (${encode}), got ${this.show(value)}`);
    else if (new URL(value).pathname.includes("@")) this.fail(key, `has an "@" after its host (${encode}), got ${this.show(value)}`);
    return value;
  }

  /**
   * Claims `value` for this entry in `seen`, a map of the values earlier entries claimed to
   * their labels; fails naming the first claimant when it is taken.
   */
  unique(key: Key, value: string, seen: Map<string, string>): void {
    const first = seen.get(value);
    if (first !== undefined) this.fail(key, `${this.show(value)} is already used by ${first}`);
    seen.set(value, this.label);
  }

  private expand(value: string, where: () => string): string {
    return this.ctx.env === undefined ? value : expandEnv(value, this.ctx.env, where);
  }

  /** The key as this input spells it (snake_case in TOML, camelCase in code). */
  nameOf(key: Key): string {
    return typeof key === "string" ? key : this.ctx.mode === "toml" ? key[0] : key[1];
  }

  private prefix(): string {
    return this.label ? `${this.ctx.source}: ${this.label}: ` : `${this.ctx.source}: `;
  }

  private where(key: Key): string {
    return `${this.prefix()}${this.nameOf(key)}`;
  }
}

/**
 * The one error of a config whose read recorded `problems` (in the order found): the error
 * itself when there is one, so its message stays as stable as any; else one CONFIG_INVALID that
 * lists every message, a line each (`details.errors`: how many; `cause`: an AggregateError of
 * them all).
 */
export function allProblems(source: string, problems: readonly LockhostError[]): LockhostError {
  if (problems.length === 1) return problems[0]!;
  return new LockhostError(
    "CONFIG_INVALID",
    `${source}: ${problems.length} errors:\n${problems.map((p) => `  ${p.message.replace(/\n/g, "\n  ")}`).join("\n")}`,
    {
      cause: new AggregateError(problems),
      details: { errors: problems.length },
    },
  );
}

/**
 * The CONFIG_INVALID error every config check raises. The whole message is masked, since a
 * path or a parser's excerpt can quote a connection URL too.
 */
export function configError(message: string, cause?: unknown): LockhostError {
  return new LockhostError("CONFIG_INVALID", redactUrlSecrets(message), cause === undefined ? undefined : { cause });
}

/** Bounds of Table.number: `gt`/`lt` exclusive, `ge`/`le` inclusive. */
export interface NumberRange {
  readonly gt?: number;
  readonly ge?: number;
  readonly lt?: number;
  readonly le?: number;
}

function describeRange({ gt, ge, lt, le }: NumberRange): string {
  const parts = [
    gt !== undefined ? `greater than ${gt}` : ge !== undefined ? `at least ${ge}` : undefined,
    lt !== undefined ? `less than ${lt}` : le !== undefined ? `at most ${le}` : undefined,
  ].filter((p) => p !== undefined);
  return parts.join(" and ");
}

/** What kind of value a secret's wrong value is, without showing it. */
function kindOf(value: unknown, mode: Ctx["mode"]): string {
  // show() reveals only scalars; anything else it names by kind.
  return typeof value === "object" || value === undefined ? show(value, mode) : `a ${typeof value}`;
}

/** Whether `value` is a table: an object that is neither an array nor a TOML date. */
export function isTable(value: unknown): value is Raw {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !(value instanceof Date);
}

/** A value as a message shows it: strings quoted, shortened and with URL secrets masked. */
export function show(value: unknown, mode: Ctx["mode"]): string {
  if (typeof value === "string") {
    // Masked before shortening: a URL cut inside its password no longer matches the mask.
    const safe = maskUrl(value);
    return JSON.stringify(safe.length > 80 ? `${safe.slice(0, 77)}...` : safe);
  }
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  if (value instanceof Date) return "a date";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return mode === "toml" ? "a table" : "an object";
  return String(value);
}

/** A number in the text of an environment variable, as TOML writes one (underscores between digits allowed); undefined when it is none. */
function parseNumber(text: string): number | undefined {
  if (!/^[+-]?\d+(_\d+)*(\.\d+(_\d+)*)?([eE][+-]?\d+)?$/.test(text)) return undefined;
  return Number(text.replace(/_/g, ""));
}

/** A boolean in the text of an environment variable, as TOML writes one. */
function parseBool(text: string): boolean | undefined {
  return text === "true" ? true : text === "false" ? false : undefined;
}
