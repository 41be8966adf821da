// Lock names -> PostgreSQL advisory lock ids. Advisory locks are keyed by one int8, so every
// lockhost process (and every version of it) must map a name to the same int8: this mapping
// is part of the on-server format and must never change.
import { createHash } from "node:crypto";

/** One lock name's place in PostgreSQL's advisory lock space. */
export interface AdvisoryKey {
  /** The int8 passed to pg_try_advisory_lock, as a decimal string (node-postgres sends it as text). */
  readonly id: string;
  /** High 32 bits of the id, unsigned: `pg_locks.classid` of the lock. */
  readonly classid: number;
  /** Low 32 bits of the id, unsigned: `pg_locks.objid` of the lock (`objsubid` is 1 for int8 keys). */
  readonly objid: number;
}

/** How many names' ids are remembered (hashing costs a few µs; a lookup, a fraction of one). */
const RECENT_LIMIT = 4096;
const recent = new Map<string, AdvisoryKey>();

/**
 * The advisory lock id of the fully qualified lock name `name`: the first 8 bytes of the
 * SHA-256 of its UTF-8 encoding, read big-endian as a signed int64. In SQL (to find a lock
 * in pg_locks by hand):
 * `('x' || encode(substr(sha256(convert_to(name, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint`.
 *
 * Stable across processes, versions and platforms (no seed, no locale). Two different names
 * with the same id (a collision, about 1 in 2^64 per pair) would exclude each other: one
 * holder makes the other name look contended. That is false contention, never a double
 * grant, and the host-side bookkeeping is keyed by id too, so the same holds between callers
 * of one process. status() and forceRelease() compare the stored name, so a colliding name is
 * never reported as (or released for) the other.
 */
export function advisoryKeyOf(name: string): AdvisoryKey {
  let key = recent.get(name);
  if (key === undefined) {
    const digest = createHash("sha256").update(name, "utf8").digest();
    key = { id: digest.readBigInt64BE(0).toString(), classid: digest.readUInt32BE(0), objid: digest.readUInt32BE(4) };
    // Oldest first out: a bounded memo, since acquire, renew and release each need the id.
    if (recent.size >= RECENT_LIMIT) recent.delete(recent.keys().next().value!);
    recent.set(name, key);
  }
  return key;
}

/** The AdvisoryKey of an explicit int8 id (tests use it to force collisions). */
export function advisoryKeyFromId(id: bigint): AdvisoryKey {
  const signed = BigInt.asIntN(64, id);
  const unsigned = BigInt.asUintN(64, id);
  return { id: signed.toString(), classid: Number(unsigned >> 32n), objid: Number(unsigned & 0xffff_ffffn) };
}

/**
 * The wait lock of an advisory key: the same 64 bits as two signed int4s, i.e. an advisory lock
 * in PostgreSQL's two-key space (objsubid 2), which no int8 lock id can name. Waiters hold it
 * shared while they watch the key, and a release notifies only when it cannot take it (mutex-sql.ts).
 */
export function waitLockOf(advisory: AdvisoryKey): readonly [number, number] {
  return [advisory.classid | 0, advisory.objid | 0];
}

/**
 * The advisory key standing for a read/write lock's or semaphore's name (`kind`, `name`): the
 * same hash over a domain no mutex name can produce (a NUL-separated tag), so its wait lock and
 * its wake payload never meet a mutex's. Queue-kind keys take no advisory lock of their own: this
 * routes their statements to a session and names their watchers.
 */
export function queueKeyOf(kind: string, name: string): AdvisoryKey {
  return advisoryKeyOf(`\u0000lockhost-shared\u0000${kind}\u0000${name}`);
}
