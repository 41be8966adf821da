// The leases a service holds, by owner token. Every acquisition adds one and every release
// takes one out, so this is on the lock path twice per lock. A JS Map there cost more than
// the rest of the books: its hash table is rebuilt every few deletes, and once a GC has moved
// a table to the old generation, each discarded table keeps its successor (and the leases in
// it) alive through every young-generation GC until the next full one, about 0.2-0.4 µs per
// try+release pair on the memory backend. The service's own tokens (mintOwner: random) live
// instead in an open-addressing table of two arrays, hashed by 8 of their random hex digits:
// an add or remove writes a few slots and allocates nothing. Tokens a caller chose (an
// attacker could pick ones that collide) stay in a Map, as does anything else.
import type { Lease } from "./lease.js";

/** Slots of an empty table (a power of two). */
const MIN_SLOTS = 64;
/** The value of each hex digit's char code, -1 for other codes. */
const NIBBLE = new Int8Array(128).fill(-1);
for (let c = 0; c < 16; c++) NIBBLE[c.toString(16).charCodeAt(0)] = c;

/** Held leases by owner token. */
export class HeldLeases {
  #owners: (string | undefined)[] = new Array<string | undefined>(MIN_SLOTS).fill(undefined);
  #leases: (Lease | undefined)[] = new Array<Lease | undefined>(MIN_SLOTS).fill(undefined);
  #inTable = 0;
  /** Leases under tokens the service did not mint. */
  readonly #chosen = new Map<string, Lease>();

  /** How many leases are held. */
  get size(): number {
    return this.#inTable + this.#chosen.size;
  }

  /** The lease held under `owner`, if any. */
  get(owner: string): Lease | undefined {
    const h = hashOf(owner);
    if (h >= 0) {
      const owners = this.#owners;
      const mask = owners.length - 1;
      for (let i = h & mask; owners[i] !== undefined; i = (i + 1) & mask) if (owners[i] === owner) return this.#leases[i];
    }
    // Asked only when it has entries: a Map lookup hashes the whole string even when empty.
    return this.#chosen.size > 0 ? this.#chosen.get(owner) : undefined;
  }

  /**
   * Holds `lease` under its owner token, replacing any lease under it, as a Map would.
   * `minted`: the token is one mintOwner made for it, random, so it goes in the table.
   */
  add(lease: Lease, minted: boolean): void {
    const owner = lease.owner;
    const h = minted ? hashOf(owner) : -1;
    if (h < 0) {
      this.#deleteFromTable(owner);
      this.#chosen.set(owner, lease);
      return;
    }
    if (this.#chosen.size > 0) this.#chosen.delete(owner);
    if (2 * (this.#inTable + 1) > this.#owners.length) this.#resize(2 * this.#owners.length);
    const owners = this.#owners;
    const mask = owners.length - 1;
    let i = h & mask;
    for (; owners[i] !== undefined; i = (i + 1) & mask) {
      if (owners[i] === owner) {
        this.#leases[i] = lease;
        return;
      }
    }
    owners[i] = owner;
    this.#leases[i] = lease;
    this.#inTable++;
  }

  /** Stops holding the lease under `owner`, if any. True when it sat in the table (pass that to add to put it back). */
  delete(owner: string): boolean {
    if (this.#deleteFromTable(owner)) return true;
    if (this.#chosen.size > 0) this.#chosen.delete(owner);
    return false;
  }

  #deleteFromTable(owner: string): boolean {
    const h = hashOf(owner);
    if (h < 0) return false;
    const owners = this.#owners;
    const mask = owners.length - 1;
    for (let i = h & mask; owners[i] !== undefined; i = (i + 1) & mask) {
      if (owners[i] === owner) {
        this.#removeAt(i);
        return true;
      }
    }
    return false;
  }

  /** Every lease held now (a copy: the caller may release them as it goes). */
  values(): Lease[] {
    const all: Lease[] = [];
    for (const lease of this.#leases) if (lease !== undefined) all.push(lease);
    for (const lease of this.#chosen.values()) all.push(lease);
    return all;
  }

  /** Empties slot `i`, moving later entries of its run back so every lookup still finds them (no tombstones). */
  #removeAt(i: number): void {
    const owners = this.#owners;
    const leases = this.#leases;
    const mask = owners.length - 1;
    let hole = i;
    for (let j = (i + 1) & mask; owners[j] !== undefined; j = (j + 1) & mask) {
      const home = hashOf(owners[j]!) & mask;
      // The entry at j may fill the hole unless its home lies cyclically in (hole, j].
      if (hole <= j ? home <= hole || home > j : home <= hole && home > j) {
        owners[hole] = owners[j];
        leases[hole] = leases[j];
        hole = j;
      }
    }
    owners[hole] = undefined;
    leases[hole] = undefined;
    this.#inTable--;
    if (owners.length > MIN_SLOTS && 8 * this.#inTable < owners.length) this.#resize(owners.length / 2);
  }

  #resize(slots: number): void {
    const owners = this.#owners;
    const leases = this.#leases;
    this.#owners = new Array<string | undefined>(slots).fill(undefined);
    this.#leases = new Array<Lease | undefined>(slots).fill(undefined);
    this.#inTable = 0;
    for (let i = 0; i < owners.length; i++) if (owners[i] !== undefined) this.add(leases[i]!, true);
    // The old arrays let go of their leases now, not when a GC finds the arrays dead.
    owners.fill(undefined);
    leases.fill(undefined);
  }
}

/**
 * A minted token's hash, from 8 of its random hex digits (the last group's first eight), or
 * -1 when `owner` is not of that form. Other strings are never looked for in the table.
 */
function hashOf(owner: string): number {
  if (owner.length !== 36 || owner.charCodeAt(23) !== 0x2d) return -1;
  let h = 0;
  for (let i = 24; i < 32; i++) {
    const code = owner.charCodeAt(i);
    const n = code < 128 ? NIBBLE[code]! : -1;
    if (n < 0) return -1;
    h = (h << 4) | n;
  }
  return h >>> 1;
}
