// Where a lock lives in etcd. Under the configured prefix: a mutex (and the leader kind's
// namespaced names) is one key `m/<name>`; a queue kind's lock is a directory
// `q/<kind>/<escaped name>/` of one key per holder (`h/<owner>`) and per queue place
// (`w/<owner>`), each created by its own transaction, so etcd's revisions order them.

/** The key of a lock stored as one record. */
export const mutexKey = (prefix: string, name: string): string => `${prefix}m/${name}`;

/**
 * A name as one path segment: only "%" and "/" are escaped, character by character, so a name
 * prefix escapes to a key prefix (listing by prefix is a range) and the key stays readable.
 */
export const escapeName = (name: string): string => name.replace(/%/g, "%25").replace(/\//g, "%2F");
export const unescapeName = (segment: string): string => segment.replace(/%2F/g, "/").replace(/%25/g, "%");

/** The directory of a queue kind's lock. */
export const queueDir = (prefix: string, kind: string, name: string): string => `${prefix}q/${kind}/${escapeName(name)}/`;

/** The directory of every lock of a queue kind. */
export const queueRoot = (prefix: string, kind: string): string => `${prefix}q/${kind}/`;

/**
 * The one key a delegated grant that finds a mutex held puts its name on (delegation.ts): every
 * host's prefix watch sees the put and wakes the watchers of that name's wanted notice.
 */
export const wantedNoticeKey = (prefix: string): string => `${prefix}wanted`;

/** What the watchers of `name`'s wanted notice are registered under (never written). */
export const wantedWatchKey = (prefix: string, name: string): string => `${prefix}wanted/${name}`;

/** The first key after every key that starts with `key` (etcd's range_end for a prefix). */
export function prefixEnd(key: string | Buffer): Buffer {
  const bytes = Buffer.from(key);
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 0xff) {
      const end = Buffer.from(bytes.subarray(0, i + 1));
      end[i] = bytes[i]! + 1;
      return end;
    }
  }
  return Buffer.from([0]); // every key: etcd reads "\0" as "to the end"
}

/** What an event's key names: a mutex key, or a holder or a queue place of a queue kind's lock. */
export type KeyRef =
  | { readonly type: "mutex"; readonly watchKey: string }
  | { readonly type: "holder" | "place"; readonly watchKey: string; readonly owner: string };

/** Reads a key under `prefix`; undefined for keys this backend does not write. */
export function parseKey(prefix: string, key: string): KeyRef | undefined {
  if (!key.startsWith(prefix)) return undefined;
  const rest = key.slice(prefix.length);
  if (rest.startsWith("m/")) return { type: "mutex", watchKey: key };
  if (!rest.startsWith("q/")) return undefined;
  // q/<kind>/<escaped name>/<h|w>/<owner>: kind and escaped name hold no "/".
  const kindEnd = rest.indexOf("/", 2);
  const nameEnd = kindEnd < 0 ? -1 : rest.indexOf("/", kindEnd + 1);
  if (nameEnd < 0) return undefined;
  const role = rest.slice(nameEnd + 1, nameEnd + 3);
  if (role !== "h/" && role !== "w/") return undefined;
  return { type: role === "h/" ? "holder" : "place", watchKey: key.slice(0, prefix.length + nameEnd + 1), owner: rest.slice(nameEnd + 3) };
}
