// The entry points that turn a TOML file, TOML text or an object built in code into a
// validated, deep-frozen LockhostConfig. All three run the same schema, so a config means the
// same thing however it arrives.
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { LockhostError } from "../../kit/errors.js";
import { loadBackendPackages } from "../registry/packages.js";
import { configError, isTable, show, Table, type Ctx, type Raw } from "./reader.js";
import { buildConfig, buildPlugin } from "./schema.js";
import type { ConfigInput, LockhostConfig, PluginConfig, PluginInput } from "./types.js";

export type { ConfigInput, PluginInput, ScheduledInput } from "./types.js";
// Callers written before kit/redact.ts existed import it from here.
export { redactUrlSecrets } from "../../kit/redact.js";

/** How loadConfig reads a file. */
export interface LoadOptions {
  /**
   * "if-set": a secret (the [admin] token, [plugins.config] and [plugins.http.headers] values)
   * whose `${VAR}` is not set is left out rather than refused, for a caller that only reads
   * locks and counters and so needs no secret (lockhost status, locks). Default "required".
   */
  readonly secrets?: "required" | "if-set";
}

/**
 * Reads and validates a TOML config file. Relative wasm paths resolve against the file's folder.
 *
 * @param env variables for `${VAR}` substitution; defaults to `process.env`.
 * @throws LockhostError CONFIG_INVALID when the file cannot be read or is invalid.
 */
export async function loadConfig(path: string, env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): Promise<LockhostConfig> {
  const secrets = options.secrets ?? "required";
  if (secrets !== "required" && secrets !== "if-set") {
    throw new LockhostError("INVALID_ARGUMENT", `options.secrets must be "required" or "if-set", got ${show(secrets, "code")}`);
  }
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    throw configError(`${path}: cannot read the config file (${readFailure(err)})`, err);
  }
  const baseDir = dirname(resolve(path));
  const tree = parseTomlText(text, path);
  const ctx: Ctx = { source: path, mode: "toml", baseDir, env, secrets };
  // Third-party backends register before anything is validated, so their tables are read by
  // their own schemas like the built-ins'.
  const packages = Table.root(ctx, tree).table("locking", "locking")?.stringList("packages");
  if (packages) await loadBackendPackages(packages, baseDir, `${path}: [locking] packages`);
  return build(ctx, tree, path);
}

/**
 * Validates the text of a TOML config. Pure: it reads no file and no process state, so a
 * `[locking] packages` backend must be registered already (loadConfig loads them).
 *
 * @param opts.source names the file in messages and is kept as LockhostConfig.source.
 * @param opts.baseDir the folder relative wasm paths resolve against.
 * @param opts.env variables for `${VAR}` substitution; when omitted, no variable is set.
 * @throws LockhostError CONFIG_INVALID naming the file, table and key at fault.
 */
export function parseConfig(text: string, opts: { source: string; baseDir: string; env?: NodeJS.ProcessEnv }): LockhostConfig {
  const ctx: Ctx = { source: opts.source, mode: "toml", baseDir: opts.baseDir, env: opts.env ?? {} };
  return build(ctx, parseTomlText(text, opts.source), opts.source);
}

function parseTomlText(text: string, source: string): Raw {
  try {
    // Editors on Windows save a BOM, which TOML does not allow.
    return parseToml(text.replace(/^\uFEFF/, ""));
  } catch (err) {
    throw tomlSyntaxError(source, err);
  }
}

function build(ctx: Ctx, tree: Raw, source: string | undefined): LockhostConfig {
  return deepFreeze(buildConfig(Table.root(ctx, tree), source));
}

/**
 * Builds a config in code: applies the defaults and the same checks as parseConfig (keys are
 * the camelCase names of LockhostConfig; no environment substitution).
 *
 * @throws LockhostError CONFIG_INVALID naming the field at fault.
 */
export function resolveConfig(partial: ConfigInput): LockhostConfig {
  // Typed, but JavaScript callers and casts can still pass anything.
  if (!isTable(partial)) throw configError(`config must be an object, got ${show(partial, "code")}`);
  const source = typeof partial.source === "string" ? partial.source : undefined;
  const baseDir = typeof partial.baseDir === "string" ? partial.baseDir : process.cwd();
  const ctx: Ctx = { source: source ?? "config", mode: "code", baseDir, env: undefined };
  return build(ctx, partial as unknown as Raw, source);
}

/**
 * Builds one [[plugins]] entry in code, as resolveConfig builds each (the same keys, defaults
 * and checks), without a whole config: what lockhost/testing's loadGuest loads.
 *
 * @param options.source names the entry in messages (default "plugin").
 * @param options.baseDir where a relative wasm path resolves from (default: the working directory).
 * @throws LockhostError CONFIG_INVALID naming the field at fault.
 */
export function resolvePlugin(input: PluginInput, options: { readonly source?: string; readonly baseDir?: string } = {}): PluginConfig {
  if (!isTable(input)) throw configError(`a [[plugins]] entry must be an object, got ${show(input, "code")}`);
  const ctx: Ctx = { source: options.source ?? "plugin", mode: "code", baseDir: options.baseDir ?? process.cwd(), env: undefined };
  return deepFreeze(buildPlugin(Table.root(ctx, { plugins: [input] } as unknown as Raw)));
}

function tomlSyntaxError(source: string, err: unknown): LockhostError {
  if (!(err instanceof TomlError)) {
    return configError(`${source}: cannot parse TOML: ${err instanceof Error ? err.message : String(err)}`);
  }
  const reason = err.message.replace(/^Invalid TOML document: /, "").split("\n", 1)[0];
  // No cause: the parser's own message quotes the file's lines unredacted.
  return configError(`${source}: TOML syntax error at line ${err.line}, column ${err.column}: ${reason}\n\n${maskSecretLines(err.codeblock.trimEnd())}`);
}

/**
 * The parser's excerpt with the value of every secret key hidden: a token line near a syntax
 * error would otherwise be quoted whole (URL passwords are masked by configError).
 */
function maskSecretLines(codeblock: string): string {
  // Also inside an inline table (admin = { token = "..." }); an unterminated string runs to the line's end.
  return codeblock.replace(/(\btoken["']?[ \t]*=[ \t]*)("[^"\n]*"?|'[^'\n]*'?|[^\s,}]*)/g, "$1***");
}

/** Why a file could not be read, in an operator's words for the common cases. */
function readFailure(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a directory";
  return err instanceof Error ? err.message : String(err);
}

// Frozen all the way down, so no part of the host can change a config another part relies on.
function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
