// What the CLI says first on a Node older than the ones lockhost supports: it still runs (the
// machine's Node may be all an operator has at hand), but nobody should find out from a crash.

/** The oldest Node major lockhost supports (22, 24 and 26 are tested). */
export const OLDEST_SUPPORTED_NODE = 22;

/** The notice for Node `version` ("20.20.2"), or undefined on a supported one. */
export function nodeNotice(version: string): string | undefined {
  const major = Number.parseInt(version, 10);
  if (!(major < OLDEST_SUPPORTED_NODE)) return undefined;
  return (
    `lockhost: Node ${version} is end of life and unsupported; lockhost supports Node 22, 24 and 26. ` +
    `Install one from https://nodejs.org/en/download (or with nvm / fnm / your distribution), or run lockhost ` +
    `with the node package from npm: npx -y node@22 "$(command -v lockhost)" …  (LOCKHOST_NODE_NOTICE=0 silences this line)`
  );
}

/** Writes the notice to stderr on an unsupported Node, unless LOCKHOST_NODE_NOTICE=0 (the CLI's and the demo's first line). */
export function sayIfOldNode(): void {
  const notice = process.env.LOCKHOST_NODE_NOTICE === "0" ? undefined : nodeNotice(process.versions.node);
  if (notice !== undefined) console.error(notice);
}
