// Generated blocks in the docs: a block stands between two markers and is written by
// `npm run docs` from its source (the config declarations, the operation table); the tests
// hold each block to its source, so the docs cannot drift from the code.

/** The markers around the block `name`. */
export function markers(name: string): readonly [string, string] {
  return [`<!-- ${name}:begin (npm run docs writes this) -->`, `<!-- ${name}:end -->`];
}

/** `text` with block `name` replaced by `content`. */
export function withBlock(text: string, name: string, content: string): string {
  const [begin, end] = markers(name);
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no ${begin} … ${end} block`);
  return `${text.slice(0, from + begin.length)}\n${content}\n${text.slice(to)}`;
}

/** A Markdown table of `header` and `rows` (cells as they are: a caller escapes a `|` in its text). */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  return [header, header.map(() => "---"), ...rows].map((cells) => `| ${cells.join(" | ")} |`).join("\n");
}
