// Key scopes: a plugin's keys live under its own name, global keys under "global:". The
// separator ':' cannot occur in a plugin name, and "global" is a reserved plugin name, so
// no plugin key can ever name a global lock or another plugin's lock.

/** Plugin names lockhost keeps for itself. */
export const RESERVED_PLUGIN_NAMES: ReadonlySet<string> = new Set(["global", "host", "lockhost"]);

/** The longest plugin name, in characters (all ASCII, so also in bytes). */
export const MAX_PLUGIN_NAME_LENGTH = 64;

/**
 * What a plugin name must look like, at most MAX_PLUGIN_NAME_LENGTH characters: lowercase
 * letters, digits, '-', '_' and '.', optionally under an npm-style scope (`@acme/cron`), so a
 * plugin can carry the name of the package it ships in. Never ':' (the scope separator of lock
 * names, so `@acme/cron:nightly` splits at its first ':'), never upper case or spaces.
 */
export const PLUGIN_NAME_PATTERN = new RegExp(`^(?=.{1,${MAX_PLUGIN_NAME_LENGTH}}$)(?:@[a-z0-9][a-z0-9_.-]*/)?[a-z0-9][a-z0-9_.-]*$`);

/**
 * The longest scope prefix qualify() puts before a key, in UTF-8 bytes: a maximal plugin
 * name and ':' (longer than "global:" and "lockhost:").
 */
export const MAX_SCOPE_PREFIX_BYTES = MAX_PLUGIN_NAME_LENGTH + 1;

/** Where a key lives. */
export type Scope = { readonly plugin: string } | "global";

/** The full lock name of `key` in `scope`. */
export function qualify(key: string, scope: Scope): string {
  return scope === "global" ? `global:${key}` : `${scope.plugin}:${key}`;
}

/**
 * The full name of the same key in the other scope: "global:k" for a plugin's "p:k", and "p:k"
 * for "global:p:k" (a global key that reads as a plugin's name). Undefined when there is none:
 * a global key without ':' is no plugin's.
 */
export function otherScopeName(name: string): string | undefined {
  const global = qualify("", "global");
  if (!name.startsWith(global)) return `${global}${name}`;
  const rest = name.slice(global.length);
  return rest.includes(":") ? rest : undefined;
}

/**
 * A matcher for the global keys a plugin may use. Patterns are literal except `*`, which
 * matches any run of characters (including none and including ':' and '/').
 */
export function globalKeyMatcher(patterns: readonly string[]): (key: string) => boolean {
  if (patterns.length === 0) return () => false;
  const escaped = patterns.map((p) =>
    p
      .split("*")
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, "\\$&"))
      .join(".*"),
  );
  const re = new RegExp(`^(?:${escaped.join("|")})$`, "su");
  return (key) => re.test(key);
}
