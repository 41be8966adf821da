// Where a lock lives in Redis. Each lock name has two keys: the lock record and its fence
// counter, and a third while anyone watches it: the watched flag, a small key with a TTL that
// tells release, force-release and proclaim to publish (watch.ts WatchFlags). All carry the
// same Redis Cluster hash tag, so one script can touch them on a cluster (a script may only use keys of
// one slot) and a name always maps to one slot. A
// lock's release channel (pub/sub, for waiters) carries the same tag, only so that an
// operator reads it as the lock's: channels are not keys, and a PUBLISH reaches every node.
// The queue kinds (read/write locks, semaphores, fair mutexes) have five keys per name in each kind's own namespace
// (QueueKeyLayout), under the same hash tag.
//
// Listing (scanNames, below), the way back from keys to names: SCAN over the lock records
// under the key prefix (MATCH on the prefix of the lock names asked for), on every master of a
// cluster in turn, then each record's status. SCAN's own guarantees carry over: a lock present for the whole listing is
// listed; one taken or freed meanwhile may or may not be, or twice. A SCAN step can find more
// names than the page has room for, and cannot be resumed halfway: the names left over travel
// in the cursor (a step asks for no more than the page needs, so they are few).
import keySlot from "cluster-key-slot";
import type { Redis } from "ioredis";
import { LockhostError, type ListRequest, type QueueKind } from "../../../kit/index.js";
import type { LockClient } from "./client.js";

/**
 * The hash tag of a lock name: the name itself, with `%` and `}` percent-encoded.
 *
 * Redis hashes only the text between the first `{` of a key and the first `}` after it, and
 * the whole key when that text is empty. Left raw, a `}` in the name would cut the tag short
 * (still the same slot for both keys, but a poor spread), and a name starting with `}` would
 * make the tag empty, so the lock and fence keys would hash whole, to different slots. With
 * every `}` encoded the tag is exactly the name, never empty. `%` is encoded too so the
 * mapping stays one-to-one: no two names share a key. `{` needs nothing: inside the tag only
 * the first `}` matters.
 */
export function hashTag(name: string): string {
  // Nearly every name has neither character: skip the regex replace for them.
  if (name.indexOf("}") === -1 && name.indexOf("%") === -1) return name;
  return name.replace(ESCAPED, escapeChar);
}

const ESCAPED = /[%}]/g;
const escapeChar = (c: string): string => (c === "%" ? "%25" : "%7D");

/** The Redis keys of lock names under one configured prefix. */
export class KeyLayout {
  /** The configured prefix, as given. */
  readonly prefix: string;
  // The constant heads are built once: a key is then one concatenation per call.
  readonly #lockHead: string;
  readonly #fenceHead: string;
  readonly #releasedHead: string;
  readonly #watchedHead: string;

  /** @throws LockhostError CONFIG_INVALID when `prefix` contains a brace (it would steal the hash tag). */
  constructor(prefix: string) {
    if (/[{}]/.test(prefix)) {
      throw new LockhostError(
        "CONFIG_INVALID",
        `[locking.redis] key_prefix must not contain "{" or "}" (the lock name is the hash tag), got ${JSON.stringify(prefix)}`,
      );
    }
    this.prefix = prefix;
    this.#lockHead = `${prefix}lock:{`;
    this.#fenceHead = `${prefix}fence:{`;
    this.#releasedHead = `${prefix}released:{`;
    this.#watchedHead = `${prefix}watched:{`;
  }

  /** The key of the lock record (a hash with a TTL) of `name`. */
  lock(name: string): string {
    return this.#lockHead + hashTag(name) + "}";
  }

  /** The key of the fence counter of `name`: never expires and is never deleted. */
  fence(name: string): string {
    return this.#fenceHead + hashTag(name) + "}";
  }

  /**
   * The head of an instance's own channel: a release or force-release by someone else tells
   * the instance that took the lock there, with the lock's owner token (instance id appended).
   */
  get holderHead(): string {
    return `${this.prefix}holder:`;
  }

  /** The pub/sub channel the release, force-release and proclaim scripts publish on for `name`. */
  released(name: string): string {
    return this.#releasedHead + hashTag(name) + "}";
  }

  /**
   * The flag that someone watches `name` (a string with a TTL its watchers keep refreshing,
   * watch.ts WatchFlags): while it exists, release, force-release and proclaim publish on released(name).
   */
  watched(name: string): string {
    return this.#watchedHead + hashTag(name) + "}";
  }
}

/**
 * The Redis keys of one queue kind's lock names (kit/steps.ts) under a prefix. Each kind has
 * its own heads (`<prefix><kind>:holders:{name}` ...), apart from the mutex's `lock:`/`fence:`
 * and from the other kind, so a mutex, a read/write lock and a semaphore of one name are
 * three locks; every key of one name carries the name as hash tag (one slot on a cluster).
 */
export class QueueKeyLayout {
  /** The head of the holders keys, as scanNames scans them. */
  readonly holdersHead: string;
  readonly #infoHead: string;
  readonly #queueHead: string;
  readonly #placesHead: string;
  readonly #fenceHead: string;
  readonly #releasedHead: string;
  readonly #waitersHead: string;

  /** @param prefix a prefix KeyLayout accepted (no braces). */
  constructor(prefix: string, kind: QueueKind) {
    const head = `${prefix}${kind}:`;
    this.holdersHead = `${head}holders:{`;
    this.#infoHead = `${head}info:{`;
    this.#queueHead = `${head}queue:{`;
    this.#placesHead = `${head}places:{`;
    this.#fenceHead = `${head}fence:{`;
    this.#releasedHead = `${head}released:{`;
    this.#waitersHead = `${head}waiters:{`;
  }

  /** ZSET: each live holder's owner token, scored by when its lease ends (server ms). */
  holders(name: string): string {
    return this.holdersHead + hashTag(name) + "}";
  }

  /** HASH: the holders' limit and mode, and per holder its record and lease TTL (queue-lua.ts). */
  info(name: string): string {
    return this.#infoHead + hashTag(name) + "}";
  }

  /** ZSET: the queue of exclusive waiters' owner tokens, scored by arrival (FIFO). */
  queue(name: string): string {
    return this.#queueHead + hashTag(name) + "}";
  }

  /** ZSET: the same waiters, scored by when each one's place lapses (server ms). */
  places(name: string): string {
    return this.#placesHead + hashTag(name) + "}";
  }

  /** HASH: each queued waiter's backend instance, whose subscription says whether its host lives (queue-lua.ts). */
  waiters(name: string): string {
    return this.#waitersHead + hashTag(name) + "}";
  }

  /** The fence counter of `name` in this kind: never expires and is never deleted. */
  fence(name: string): string {
    return this.#fenceHead + hashTag(name) + "}";
  }

  /** The channel that release, force-release and queue departures publish on. */
  released(name: string): string {
    return this.#releasedHead + hashTag(name) + "}";
  }
}

/**
 * The Redis Cluster slot of every key of lock `name`, as the server (and ioredis, with the same
 * function) computes it from the hash tag. For a non-empty name only (LockService refuses empty
 * ones): an empty tag would make Redis hash each key whole.
 */
export function slotOf(name: string): number {
  return keySlot(`{${hashTag(name)}}`);
}

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
 *   default, or a queue kind's holders keys (keys.ts QueueKeyLayout).
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
