// HeldLeases (the service's leases by owner token) against a Map doing the same operations.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { HeldLeases } from "../host/locking/held-leases.js";
import { Lease } from "../host/locking/lease.js";
import { mintOwner } from "../host/locking/owner-token.js";

const leaseOf = (owner: string, fence = 1): Lease =>
  new Lease({
    name: `global:${owner}`,
    owner,
    fence,
    ttlMs: 1_000,
    holder: { plugin: "host", node: "n" },
    acquiredAtMs: 0,
    expiresAtMs: 1_000,
    deadline: 1_000,
    keepalive: false,
  });

/**
 * Minted-form owners that collide: they share the hex digits the table hashes (24..31) and
 * differ in the last four, so they pile up in one run of slots and deletes must shift them back.
 */
const colliding = (i: number): string => `00000000-0000-4000-8000-abcdef01${i.toString(16).padStart(4, "0")}`;

type Op = { op: "add"; id: number; minted: boolean } | { op: "delete"; id: number } | { op: "get"; id: number };

describe("HeldLeases", () => {
  it("answers as a Map would, through growth, shrinking, collisions and both kinds of token", () => {
    // Owners 0..99 minted at random, 100..139 colliding, 140..159 a caller's own words.
    const minted = Array.from({ length: 100 }, () => mintOwner());
    const owners = [...minted, ...Array.from({ length: 40 }, (_, i) => colliding(i)), ...Array.from({ length: 20 }, (_, i) => `worker-${i}`)];
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      fc.record({ op: fc.constant("add" as const), id: fc.nat(owners.length - 1), minted: fc.boolean() }),
      fc.record({ op: fc.constant("delete" as const), id: fc.nat(owners.length - 1) }),
      fc.record({ op: fc.constant("get" as const), id: fc.nat(owners.length - 1) }),
    );
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 600 }), (ops) => {
        const held = new HeldLeases();
        const model = new Map<string, Lease>();
        let fence = 0;
        for (const o of ops) {
          const owner = owners[o.id]!;
          if (o.op === "add") {
            const lease = leaseOf(owner, ++fence);
            held.add(lease, o.minted);
            model.set(owner, lease);
          } else if (o.op === "delete") {
            held.delete(owner);
            model.delete(owner);
          }
          expect(held.get(owner)).toBe(model.get(owner));
          expect(held.size).toBe(model.size);
        }
        for (const owner of owners) expect(held.get(owner)).toBe(model.get(owner));
        expect(new Set(held.values())).toEqual(new Set(model.values()));
      }),
      { numRuns: 200 },
    );
  });

  it("holds thousands of minted leases and lets them all go", () => {
    const held = new HeldLeases();
    const leases = Array.from({ length: 5_000 }, () => leaseOf(mintOwner()));
    for (const lease of leases) held.add(lease, true);
    expect(held.size).toBe(5_000);
    for (const lease of leases) expect(held.get(lease.owner)).toBe(lease);
    for (const lease of leases.slice(0, 4_990)) held.delete(lease.owner);
    expect(held.size).toBe(10);
    expect(new Set(held.values())).toEqual(new Set(leases.slice(4_990)));
    for (const lease of leases.slice(4_990)) expect(held.get(lease.owner)).toBe(lease);
  });

  it("tells release whether a lease sat in the table, so a failed release puts it back there", () => {
    const held = new HeldLeases();
    const mine = leaseOf(mintOwner());
    const theirs = leaseOf("worker-7");
    held.add(mine, true);
    held.add(theirs, false);
    expect(held.delete(mine.owner)).toBe(true);
    expect(held.delete(theirs.owner)).toBe(false);
    expect(held.size).toBe(0);
  });
});
