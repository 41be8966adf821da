// LockBackend.list on Redis: SCAN over the lock records under the key prefix (MATCH on the
// prefix of the lock names asked for), on every master of a cluster in turn, then each
// record's status. SCAN's own guarantees carry over: a lock present for the whole listing is
// listed; one taken or freed meanwhile may or may not be, or twice. A SCAN step can find more
// names than the page has room for, and cannot be resumed halfway: the names left over travel
// in the cursor (a step asks for no more than the page needs, so they are few).
import type { Redis } from "ioredis";
import { LockhostError, type ListRequest } from "../../../kit/index.js";
import type { LockClient } from "./connect.js";
import { hashTag, type KeyLayout } from "./keys.js";

/** Names of held locks, one page: the caller reads their status. */
export interface NamePage {
  readonly names: readonly string[];
  readonly cursor?: string;
}

/** How many keys one SCAN step examines: big enough for few round trips, small enough not to stall the server. */
const SCAN_COUNT = 500;

/** The masters to scan, in a stable order (the cursor names one by its index). */
function mastersOf(client: LockClient): Redis[] {
  if (!("nodes" in client) || !client.isCluster) return [client as Redis];
  return client.nodes("master").sort((a, b) => addressOf(a).localeCompare(addressOf(b)));
}

const addressOf = (node: Redis): string => `${node.options.host}:${node.options.port}`;

/** Escapes SCAN MATCH's glob characters. */
const globEscape = (text: string): string => text.replace(/[*?[\]\\]/g, "\\$&");

/** The lock name of a lock record's key (KeyLayout.lock, undone). */
function nameOf(redisKey: string, head: string): string {
  return redisKey.slice(head.length, -1).replace(/%7D|%25/g, (c) => (c === "%7D" ? "}" : "%"));
}

/** Where a listing stands: the master, its SCAN cursor, and names found but not listed yet. */
interface Position {
  node: number;
  scan: string;
  pending: string[];
}

/**
 * Reads names of held locks until `req.limit` are found or every master is scanned.
 * @param head the head of the keys to scan, up to the hash tag's `{`: a mutex's lock records by
 *   default, or a shared kind's holders keys (keys.ts QueueKeyLayout).
 */
export async function scanNames(client: LockClient, keys: KeyLayout, req: ListRequest, head = `${keys.prefix}lock:{`): Promise<NamePage> {
  const match = globEscape(head + hashTag(req.prefix ?? "")) + "*";
  const masters = mastersOf(client);
  const at = parseCursor(req.cursor, masters.length);
  while (at.node < masters.length && at.pending.length < req.limit) {
    const count = Math.min(SCAN_COUNT, Math.max(10, req.limit - at.pending.length));
    const [next, found] = await masters[at.node]!.scan(at.scan, "MATCH", match, "COUNT", count);
    for (const key of found) at.pending.push(nameOf(key, head));
    if (next === "0") {
      at.node++;
      at.scan = "0";
    } else {
      at.scan = next;
    }
  }
  const names = at.pending.splice(0, req.limit);
  return at.node < masters.length || at.pending.length > 0 ? { names, cursor: formatCursor(at) } : { names };
}

function formatCursor(at: Position): string {
  return Buffer.from(JSON.stringify([at.node, at.scan, at.pending])).toString("base64url");
}

function parseCursor(text: string | undefined, masters: number): Position {
  if (text === undefined) return { node: 0, scan: "0", pending: [] };
  try {
    const [node, scan, pending] = JSON.parse(Buffer.from(text, "base64url").toString("utf8")) as unknown[];
    if (typeof node === "number" && typeof scan === "string" && Array.isArray(pending) && pending.every((n) => typeof n === "string")) {
      // A cluster that shrank since: what was left of the scan is gone with its masters.
      return node < masters ? { node, scan, pending } : { node: masters, scan: "0", pending };
    }
  } catch {
    // falls through: not a cursor of this backend
  }
  throw new LockhostError("INVALID_ARGUMENT", "cursor is not one a Redis listing gave");
}
