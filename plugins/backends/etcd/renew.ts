// Renewal of holds this host took, for every kind: each holder's value rewritten with its new
// end, on the lease of its new TTL's class, only if its key is still the one it created. A
// tick's renewals go as one transaction (up to etcd's 128 operations): one round trip and one
// Raft entry for the batch. Only when one of them no longer holds does the batch fail as a
// whole, and then each is sent alone to learn which.
import type { RenewRequest, RenewResult } from "../../../kit/index.js";
import { endOf, type EtcdContext } from "./context.js";
import type { HeldEntry } from "./held.js";
import type { ClassLease } from "./leases.js";
import { CMP, TARGET, type Compare, type RequestOp } from "./messages.js";
import { encode, type StoredHolder } from "./record.js";

/** One hold to renew. */
interface HeldRenewal {
  readonly entry: HeldEntry;
  readonly ttlMs: number;
}

/** Why a hold is not the caller's: no holder, or another one. */
export type Refusal = "not_found" | "mismatch";

/**
 * Renews by request, for every kind: each owner's entry in this host's book, or, for a hold this
 * host did not take (a restored lock), what `readHolder` finds in etcd and enters.
 */
export async function renewRequests(
  c: EtcdContext,
  reqs: readonly RenewRequest[],
  keyOf: (req: RenewRequest) => string,
  readHolder: (key: string, owner: string) => Promise<HeldEntry | Refusal>,
  refused: (key: string) => Promise<Refusal>,
): Promise<RenewResult[]> {
  const results: RenewResult[] = new Array(reqs.length);
  const held: HeldRenewal[] = [];
  const at: number[] = [];
  await Promise.all(reqs.map(async (r, i) => {
    const key = keyOf(r);
    const own = c.book.get(r.owner);
    const entry = own?.key === key ? own : await readHolder(key, r.owner);
    if (typeof entry === "string") results[i] = { ok: false, reason: entry };
    else {
      held.push({ entry, ttlMs: r.ttlMs });
      at.push(i);
    }
  }));
  (await renewHeld(c, held, refused)).forEach((r, j) => (results[at[j]!] = r));
  return results;
}

/** etcd's default --max-txn-ops. */
const MAX_TXN_OPS = 128;

/** Renews each hold; `refused(key)` says why a hold that failed its compare is not this owner's. */
async function renewHeld(c: EtcdContext, items: readonly HeldRenewal[], refused: (key: string) => Promise<Refusal>): Promise<RenewResult[]> {
  const leases: ClassLease[] = await Promise.all(items.map((it) => c.leases.leaseFor(it.ttlMs)));
  const now = Date.now();
  const planned = items.map((it, i) => {
    const lease = leases[i]!;
    const expiresAtMs = endOf(now, it.ttlMs, lease);
    const record: StoredHolder = { ...it.entry.record, e: expiresAtMs, t: it.ttlMs };
    const compare: Compare = { key: it.entry.key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: it.entry.fence };
    const put: RequestOp = { request_put: { key: it.entry.key, value: encode(record), lease: lease.id! } };
    return { ...it, lease, expiresAtMs, record, compare, put };
  });
  type Planned = (typeof planned)[number];
  const landed = (p: Planned): RenewResult => {
    p.entry.record = p.record;
    c.book.renewed(p.entry, p.lease, p.ttlMs);
    return { ok: true, expiresAtMs: p.expiresAtMs };
  };
  const alone = async (p: Planned): Promise<RenewResult> => {
    const res = await c.client.txn({ compare: [p.compare], success: [p.put] }, "a renewal");
    if (res.succeeded) return landed(p);
    if (c.book.get(p.entry.owner) === p.entry) c.book.drop(p.entry.owner);
    return { ok: false, reason: await refused(p.entry.key) };
  };
  const results: RenewResult[] = [];
  for (let i = 0; i < planned.length; i += MAX_TXN_OPS) {
    const chunk = planned.slice(i, i + MAX_TXN_OPS);
    if (chunk.length === 1) {
      results.push(await alone(chunk[0]!));
      continue;
    }
    const res = await c.client.txn({ compare: chunk.map((p) => p.compare), success: chunk.map((p) => p.put) }, "a batch of renewals");
    if (res.succeeded) results.push(...chunk.map((p) => landed(p)));
    else results.push(...(await Promise.all(chunk.map(alone))));
  }
  return results;
}
