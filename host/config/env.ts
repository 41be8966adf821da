// Environment substitution in config strings. It runs on values the TOML parser has already
// produced, never on the file's text, so a variable's value is always data: it cannot close a
// string, add a key or open a table. Values are not scanned again after substitution, so a
// variable holding "${OTHER}" or "$$" comes through as exactly those characters.
import { LockhostError } from "../../kit/errors.js";
import { redactUrlSecrets } from "../../kit/redact.js";

const REFERENCE = /^([A-Za-z_][A-Za-z0-9_]*)(?::-([\s\S]*))?$/;

/**
 * Replaces `${VAR}` and `${VAR:-default}` in `text` with values from `env`; `$$` stands for a
 * literal `$`. As in the shell, the default applies when VAR is unset or empty. The default is
 * literal text up to the first `}`.
 *
 * @param where names the value for messages (file, table and key), e.g.
 *   `lockhost.toml: [locking.redis]: url`; called only when an error is raised.
 * @throws LockhostError CONFIG_INVALID when a variable without a default is unset, or when a
 *   `$` starts neither `$$` nor a well-formed `${...}`.
 */
export function expandEnv(text: string, env: NodeJS.ProcessEnv, where: () => string): string {
  if (!text.includes("$")) return text;
  let out = "";
  let i = 0;
  while (i < text.length) {
    const dollar = text.indexOf("$", i);
    if (dollar < 0) {
      out += text.slice(i);
      break;
    }
    out += text.slice(i, dollar);
    const next = text[dollar + 1];
    if (next === "$") {
      out += "$";
      i = dollar + 2;
      continue;
    }
    if (next !== "{") {
      // Rejected rather than kept: "$HOME" silently staying "$HOME" is the likelier mistake.
      throw invalid(where, `has a "$" at character ${dollar + 1} that starts no substitution; write "$$" for a literal "$", or \${NAME} for a variable`);
    }
    const close = text.indexOf("}", dollar + 2);
    if (close < 0) throw invalid(where, `has an unterminated "\${" at character ${dollar + 1}`);
    out += lookup(text.slice(dollar + 2, close), env, where);
    i = close + 1;
  }
  return out;
}

function lookup(reference: string, env: NodeJS.ProcessEnv, where: () => string): string {
  const match = REFERENCE.exec(reference);
  if (!match) {
    throw invalid(where, `has "\${${reference}}", which is not \${NAME} or \${NAME:-default} (NAME: letters, digits and '_', not starting with a digit)`);
  }
  const name = match[1] as string;
  const fallback = match[2];
  const value = env[name];
  if (fallback !== undefined) return value === undefined || value === "" ? fallback : value;
  if (value === undefined) {
    throw invalid(where, `uses \${${name}}, but the environment variable ${name} is not set (set it, or give a default: \${${name}:-value})`, {
      unsetVariable: name,
    });
  }
  return value;
}

function invalid(where: () => string, problem: string, details?: Readonly<Record<string, string>>): LockhostError {
  // The problem may quote the raw value, and a value may be a URL with a password in it.
  return new LockhostError("CONFIG_INVALID", redactUrlSecrets(`${where()} ${problem}`), details && { details });
}

/** Whether `err` is expandEnv's error for a variable that is not set (details.unsetVariable names it). */
export function isUnsetVariable(err: unknown): boolean {
  return err instanceof LockhostError && typeof err.details?.unsetVariable === "string";
}

/** The names of the variables `text` refers to (`${NAME}` or `${NAME:-default}`), in order; `$$` is no reference. */
export function variablesIn(text: string): string[] {
  const names: string[] = [];
  for (const m of text.matchAll(/\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-[^}]*)?\}/g)) if (m[1] !== undefined) names.push(m[1]);
  return names;
}
