// Keepalive leases not yet due for their first renewal. Most leases are released long before
// that (a try+release pair takes microseconds, a first renewal comes at half the TTL), so a new
// keepalive lease costs the renewal manager only a place in this bag: no entry object, no heap
// insert and remove. The manager scans the bag once, when its earliest first renewal is near,
// and moves every lease still in it into its heap. A lease's renewal slot holds its index here
// while it waits (LeaseControl.renewalEntry), so leaving the bag is O(1), without a lookup.
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";

/** An unordered bag of leases with O(1) add and remove. */
export class PendingLeases {
  #leases: Lease[] = [];

  /** Leases waiting now. */
  get size(): number {
    return this.#leases.length;
  }

  /** Every lease waiting now (read only: for counting). */
  get all(): readonly Lease[] {
    return this.#leases;
  }

  /** Puts `lease` (with an empty renewal slot) in the bag. */
  add(lease: Lease): void {
    leases.setRenewalEntry(lease, this.#leases.length);
    this.#leases.push(lease);
  }

  /** Takes `lease` out of the bag; `index` is its renewal slot. The last lease fills its place. */
  remove(lease: Lease, index: number): void {
    const last = this.#leases.pop()!;
    if (last !== lease) {
      this.#leases[index] = last;
      leases.setRenewalEntry(last, index);
    }
    leases.setRenewalEntry(lease, undefined);
  }

  /** Empties the bag, returning what was in it (their renewal slots cleared). */
  takeAll(): Lease[] {
    const all = this.#leases;
    this.#leases = [];
    for (const lease of all) leases.setRenewalEntry(lease, undefined);
    return all;
  }
}
