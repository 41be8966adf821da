// Where a lock lives in Redis. Each lock name has two keys: the lock record and its fence
// counter, and a third while anyone watches it: the watched flag, a small key with a TTL that
// tells release, force-release and proclaim to publish (watched.ts). All carry the same Redis
// Cluster hash tag, so one script can touch them on a cluster (a script may only use keys of
// one slot) and a name always maps to one slot. A
// lock's release channel (pub/sub, for waiters) carries the same tag, only so that an
// operator reads it as the lock's: channels are not keys, and a PUBLISH reaches every node.
// Read/write locks and semaphores have five keys per name in each kind's own namespace
// (QueueKeyLayout), under the same hash tag.
import keySlot from "cluster-key-slot";
import { LockhostError, type QueueKind } from "../../../kit/index.js";

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
   * watched.ts): while it exists, release, force-release and proclaim publish on released(name).
   */
  watched(name: string): string {
    return this.#watchedHead + hashTag(name) + "}";
  }
}

/**
 * The Redis keys of one shared kind's lock names (kit/steps.ts) under a prefix. Each kind has
 * its own heads (`<prefix><kind>:holders:{name}` ...), apart from the mutex's `lock:`/`fence:`
 * and from the other kind, so a mutex, a read/write lock and a semaphore of one name are
 * three locks; every key of one name carries the name as hash tag (one slot on a cluster).
 */
export class QueueKeyLayout {
  /** The head of the holders keys, as list.ts scans them. */
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

  /** HASH: the holders' limit and mode, and per holder its record and lease TTL (scripts.ts). */
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

  /** HASH: each queued waiter's backend instance, whose subscription says whether its host lives (queue-scripts.ts). */
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
