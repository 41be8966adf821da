// The value of a holder's key (and of a queue place's): who holds it and until when, as short
// JSON. Times are this host's clock (etcd has none to read): `a` when it was taken, `e` when it
// ends unless renewed, `t` the TTL of the latest acquire or renew. A contended acquirer's hint
// comes from the holders' recorded ends (retryAfter).
import type { Holder, HolderRecord, LockMode } from "../../../kit/index.js";
import type { EtcdClient } from "./client.js";
import type { KeyValue } from "./proto.js";

export interface StoredHolder {
  /** owner token */
  readonly o: string;
  /** mode (queue kinds; absent: exclusive) */
  readonly m?: "s";
  /** limit the holder took the key with (semaphores; absent: 0) */
  readonly l?: number;
  readonly p: string;
  readonly n: string;
  readonly h?: string;
  readonly a: number;
  readonly e: number;
  readonly t: number;
  /** proclaimed value */
  readonly v?: string;
  /**
   * A delegated re-grant (delegation.ts) rewrote the key in place: its fence's revision is `g`,
   * or, in the re-grant's own write (which cannot hold its revision), `r` (1) says it is the
   * key's mod revision. Absent both: the key's create revision.
   */
  readonly g?: number;
  readonly r?: 1;
}

export function storedHolder(
  owner: string,
  mode: LockMode,
  limit: number,
  holder: Holder,
  acquiredAtMs: number,
  expiresAtMs: number,
  ttlMs: number,
): StoredHolder {
  return {
    o: owner,
    ...(mode === "shared" && { m: "s" as const }),
    ...(limit > 0 && { l: limit }),
    p: holder.plugin,
    n: holder.node,
    ...(holder.hostname !== undefined && { h: holder.hostname }),
    a: acquiredAtMs,
    e: expiresAtMs,
    t: ttlMs,
  };
}

/** The bytes of a stored holder. */
export const encode = (stored: StoredHolder): string => JSON.stringify(stored);

/** The stored holder of a key's value, or undefined for a value this backend did not write. */
export function decodeHolder(value: Buffer): StoredHolder | undefined {
  try {
    const v = JSON.parse(value.toString("utf8")) as StoredHolder;
    return typeof v?.o === "string" && typeof v.e === "number" ? v : undefined;
  } catch {
    return undefined;
  }
}

/** The revision of the grant a holder's key records (see StoredHolder.g): its fence is that times the prefix's fence scale. */
export function grantRevision(kv: KeyValue, stored: StoredHolder): number {
  return stored.g ?? Number(stored.r === 1 ? kv.mod_revision : kv.create_revision);
}

/** A holder's record as it is written again by its owner (a renewal, a proclamation): a re-grant's revision made explicit. */
export function settled(kv: KeyValue, stored: StoredHolder): StoredHolder {
  if (stored.r !== 1) return stored;
  const { r: _r, ...rest } = stored;
  return { ...rest, g: Number(kv.mod_revision) };
}

/** A holder's record as status and list report it; its fence is its grant's revision (grantRevision) times `scale`. */
export function holderRecord(kv: KeyValue, stored: StoredHolder, nowMs: number, scale: number): HolderRecord {
  return {
    owner: stored.o,
    mode: stored.m === "s" ? "shared" : "exclusive",
    fence: grantRevision(kv, stored) * scale,
    holder: { plugin: stored.p, node: stored.n, ...(stored.h !== undefined && { hostname: stored.h }) },
    acquiredAtMs: stored.a,
    expiresAtMs: stored.e,
    ttlMs: stored.t,
    ttlRemainingMs: Math.max(0, stored.e - nowMs),
    ...(stored.v !== undefined && { value: stored.v }),
  };
}

/** The holder stored at `key`, with its key-value; undefined when there is none (or it is not a holder's). */
export async function readHolder(client: EtcdClient, key: string): Promise<{ kv: KeyValue; stored: StoredHolder } | undefined> {
  const kv = (await client.range({ key })).kvs[0];
  const stored = kv === undefined ? undefined : decodeHolder(kv.value);
  return kv === undefined || stored === undefined ? undefined : { kv, stored };
}

/**
 * The hint of a contended acquisition: when the earliest holder's recorded end comes. None once
 * it has passed: that holder's host deletes the key at its end (or its lease does, if the host
 * is gone), and the deletion wakes the waiters through the watch; retrying at once would only
 * find the key again until the deletion lands.
 */
export function retryAfter(ends: readonly number[]): { retryAfterMs?: number } {
  if (ends.length === 0) return {};
  const left = Math.min(...ends) - Date.now();
  return left > 0 ? { retryAfterMs: left } : {};
}
