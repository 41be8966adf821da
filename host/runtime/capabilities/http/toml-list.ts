/** A list as the operator writes it in TOML, for messages: `["a", "b"]`. */
export function tomlList(items: readonly string[]): string {
  return `[${items.map((i) => JSON.stringify(i)).join(", ")}]`;
}
