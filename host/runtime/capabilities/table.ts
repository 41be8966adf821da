// The capabilities a plugin can be granted, one row each: what `lockhost.capability(name)`
// answers and what the loader lets a guest import. Host function namespaces are rows of their
// own per plugin (the embedder names them), added by grantedCapabilities.
import type { HttpGrant } from "./http/index.js";

/** What a plugin's config grants, as the capability rows read it. */
export interface PluginGrants {
  readonly http?: HttpGrant;
  /** Host function namespaces granted and registered. */
  readonly functions: readonly string[];
}

/** One capability: its name (`lockhost.capability`), and whether a plugin has it. */
interface CapabilityRow {
  readonly name: string;
  readonly doc: string;
  readonly granted: (grants: PluginGrants) => boolean;
}

/** Every built-in capability. */
export const CAPABILITIES: readonly CapabilityRow[] = [
  { name: "config", doc: "read the plugin's [plugins.config] values (config.get)", granted: () => true },
  { name: "log", doc: "log at debug, info, warn and error (log.write)", granted: () => true },
  { name: "http", doc: "HTTP requests to the hosts [plugins.http] allows (http.request)", granted: (g) => g.http !== undefined },
];

/** The names `lockhost.capability` answers 1 for. */
export function grantedCapabilities(grants: PluginGrants): string[] {
  return [...CAPABILITIES.filter((row) => row.granted(grants)).map((row) => row.name), ...grants.functions];
}
