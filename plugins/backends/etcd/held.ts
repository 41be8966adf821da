// What this backend instance holds in etcd (HeldLocks, its book): one entry per owner (a lock's holder key, or a
// waiter's queue place), with the create revision that proves it is still the one this host
// wrote. The entry ends the hold at its own TTL with this host's timer (one timer for all, kit's
// DeadlineQueue), so a lock that nobody renews ends on time while the host lives, whatever failed
// around it: a release that failed leaves the entry (and its timer) in place, and the end reads
// the key before deleting it, so a renewal or proclamation that timed out but was applied moves
// the end to what the key says rather than leaving the key to the class lease (which this host's
// other locks keep alive). It also tells the backend's loss listeners when etcd deleted a key it
// did not delete itself.
//
// Renewal of holds this host took, for every kind (renewRequests): each holder's value rewritten
// with its new end, on the lease of its new TTL's class, only if its key is still the one it
// created. A tick's renewals go as one transaction (up to etcd's 128 operations): one round trip
// and one Raft entry for the batch. Only when one of them no longer holds does the batch fail as
// a whole, and then each is sent alone to learn which.
//
// EtcdContext is what the steps of every kind share in one backend instance (mutex.ts, queue.ts).
import type { Logger } from "pino";
import { DeadlineQueue, type Timed } from "../../../kit/deadline-queue.js";
import type { RenewRequest, RenewResult } from "../../../kit/index.js";
import type { EtcdClient } from "./client.js";
import { endOf, type ClassLease, type Leases } from "./leases.js";
import { CMP, TARGET, type Compare, type KeyValue, type RequestOp } from "./proto.js";
import type { FenceScale } from "./fence-scale.js";
import { encode, readHolder, settled, type StoredHolder } from "./record.js";
import type { PrefixWatcher } from "./watch.js";

/** What the steps of every kind share in one backend instance. */
export interface EtcdContext {
  readonly client: EtcdClient;
  readonly leases: Leases;
  readonly book: HeldLocks;
  readonly watcher: PrefixWatcher;
  readonly prefix: string;
  readonly scale: FenceScale;
}

/** One key this host wrote and still counts as its own. */
export interface HeldEntry extends Timed {
  readonly owner: string;
  readonly key: string;
  /** The key's create revision: the fence of a holder ("" for an acquisition whose answer was lost). */
  readonly fence: string;
  lease: ClassLease;
  leaseId: string;
  /** A queue place rather than a holder: not a loss when it goes. */
  readonly place: boolean;
  /** The key's value as this host last wrote it (a renewal rewrites it with a new end). */
  record: StoredHolder;
  /** This host is deleting the key itself (a release, or the end at its TTL): its deletion is no loss. */
  lettingGo: boolean;
  /** etcd deleted the key while this host was letting it go. */
  gone: boolean;
}

/** How often the end of a hold is tried again while etcd does not answer (1 s apart). */
const END_ATTEMPTS = 60;
/** A key whose recorded end is this close counts as ended (the timer runs on whole ms). */
const END_SLACK_MS = 5;

/** The entries of one backend instance. */
export class HeldLocks {
  readonly #byOwner = new Map<string, HeldEntry>();
  /**
   * Acquisitions whose answer was lost (a timeout, a dropped connection): the key may have been
   * written, on a lease this host keeps alive. Nobody holds them; each is ended at its TTL if
   * the key is there with its owner token.
   */
  readonly #unsure = new Set<HeldEntry>();
  /**
   * Delegated re-grants (delegation.ts): the previous owner of a key rewritten in place, by the
   * owner it is now. A renewal of the previous owner sent before the re-grant may land after it
   * and write that owner back into the value; a deletion that names it then means the new owner.
   */
  readonly #replaced = new Map<string, string>();
  readonly #client: EtcdClient;
  readonly #leases: Leases;
  readonly #log: Logger;
  readonly #lost: (owner: string) => void;
  readonly #due = new DeadlineQueue<HeldEntry>((entry) => this.#expire(entry), { slackMs: () => 1 });
  #closed = false;

  constructor(client: EtcdClient, leases: Leases, log: Logger, lost: (owner: string) => void) {
    this.#client = client;
    this.#leases = leases;
    this.#log = log;
    this.#lost = lost;
  }

  get(owner: string): HeldEntry | undefined {
    return this.#byOwner.get(owner);
  }

  /** Records a key this host just wrote; it ends `ttlMs` from now unless renewed. */
  add(owner: string, key: string, fence: string, lease: ClassLease, ttlMs: number, record: StoredHolder, place = false): HeldEntry {
    this.drop(owner);
    const entry = this.#entry(owner, key, fence, lease, ttlMs, record, place);
    this.#byOwner.set(owner, entry);
    return entry;
  }

  /**
   * An acquisition of `key` by `owner` on `lease` got no answer: it may have been applied. The
   * key is ended at `ttlMs` from now if it is there with `owner`'s token (the host's give-back
   * may fail on the same fault), and never told as a loss.
   */
  unsure(owner: string, key: string, lease: ClassLease, ttlMs: number, record: StoredHolder): void {
    if (this.#closed) return;
    this.#unsure.add(this.#entry(owner, key, "", lease, ttlMs, record, false));
  }

  #entry(owner: string, key: string, fence: string, lease: ClassLease, ttlMs: number, record: StoredHolder, place: boolean): HeldEntry {
    const entry: HeldEntry = {
      owner,
      key,
      fence,
      lease,
      leaseId: lease.id!,
      place,
      record,
      lettingGo: false,
      gone: false,
      deadline: performance.now() + ttlMs,
      heapIndex: -1,
    };
    this.#leases.use(lease);
    this.#due.add(entry);
    return entry;
  }

  /**
   * Enters a holder's key this host did not take (a restored lock), as read from etcd. It stays on
   * its lease (another host's, if it is not one of this host's) until a renewal moves it to this
   * host's lease of its class.
   */
  async adopt(owner: string, key: string, kv: KeyValue, record: StoredHolder): Promise<HeldEntry> {
    const lease = this.#leases.byId(kv.lease) ?? (await this.#leases.leaseFor(record.t));
    return this.add(owner, key, kv.create_revision, lease, Math.max(0, record.e - Date.now()), settled(kv, record));
  }

  /** A renewal landed: the hold ends `ttlMs` from now, on `lease` (the same one unless the TTL class changed). */
  renewed(entry: HeldEntry, lease: ClassLease, ttlMs: number): void {
    if (this.#byOwner.get(entry.owner) !== entry) return; // released or ended meanwhile
    entry.lettingGo = false;
    if (lease !== entry.lease) {
      this.#leases.unuse(entry.lease);
      this.#leases.use(lease);
      entry.lease = lease;
    }
    entry.leaseId = lease.id ?? entry.leaseId;
    entry.deadline = performance.now() + ttlMs;
    this.#due.update(entry);
  }

  /** Moves a queue place's end to `ttlMs` from now (a waiter's new attempt): no write needed, this host ends it. */
  refresh(entry: HeldEntry, ttlMs: number): void {
    entry.deadline = performance.now() + ttlMs;
    this.#due.update(entry);
  }

  /**
   * This host is about to delete `owner`'s key itself (a release): its deletion is then no loss.
   * The entry stays, with its timer, until the deletion is confirmed (`drop`) or fails (`kept`).
   */
  lettingGo(owner: string): HeldEntry | undefined {
    const entry = this.#byOwner.get(owner);
    if (entry !== undefined) entry.lettingGo = true;
    return entry;
  }

  /**
   * The deletion of `entry`'s key failed (etcd did not answer): true when etcd deleted it anyway
   * (its event came), else the hold is this host's again and ends at its TTL by the timer.
   */
  kept(entry: HeldEntry): boolean {
    if (entry.gone) return true;
    entry.lettingGo = false;
    return false;
  }

  /**
   * Deletes `entry`'s key (a release) with `remove`, a transaction whose answer the caller reads.
   * Let go first, not forgotten: the deletion's event is then no loss, and if the deletion fails
   * the hold still ends at its TTL by this host's timer. Resolves to the transaction's answer
   * (the entry forgotten), or to undefined when it failed but its deletion was seen (it was
   * applied: released); rejects when it failed and the key is this host's again.
   */
  async letGo<T>(entry: HeldEntry, remove: () => Promise<T>): Promise<T | undefined> {
    this.lettingGo(entry.owner);
    let res: T;
    try {
      res = await remove();
    } catch (err) {
      if (this.kept(entry)) return undefined; // its deletion was seen: it was applied
      throw err;
    }
    if (this.get(entry.owner) === entry) this.drop(entry.owner);
    return res;
  }

  /** Ends `entry`'s hold at once (a queue place whose host gave it up but whose deletion failed). */
  endNow(entry: HeldEntry): void {
    if (this.#byOwner.get(entry.owner) !== entry) return;
    entry.deadline = performance.now();
    this.#due.update(entry);
  }

  /** Forgets `owner` (its key was deleted, or is not its own). */
  drop(owner: string): HeldEntry | undefined {
    const entry = this.#byOwner.get(owner);
    if (entry === undefined) return undefined;
    this.#forget(entry);
    return entry;
  }

  #forget(entry: HeldEntry): void {
    if (entry.fence === "") {
      if (!this.#unsure.delete(entry)) return;
    } else {
      if (this.#byOwner.get(entry.owner) !== entry) return;
      this.#byOwner.delete(entry.owner);
      for (const [old, now] of this.#replaced) if (now === entry.owner) this.#replaced.delete(old);
    }
    this.#due.remove(entry);
    this.#leases.unuse(entry.lease);
  }

  /** `to` now holds `from`'s key, rewritten in place (a delegated re-grant): `from` is forgotten. */
  replaced(from: string, to: string): void {
    this.drop(from);
    for (const [old, now] of this.#replaced) if (now === from) this.#replaced.delete(old);
    this.#replaced.set(from, to);
  }

  /** etcd deleted `key`: if it was a holder this host did not let go, its owner lost it. */
  deleted(named: string, key: string): void {
    const owner = this.#byOwner.has(named) ? named : (this.#replaced.get(named) ?? named);
    const entry = this.#byOwner.get(owner);
    if (entry === undefined || entry.key !== key) return;
    this.drop(owner);
    if (entry.lettingGo) entry.gone = true;
    else if (!entry.place) this.#lost(owner);
  }

  /** etcd said lease `id` expired: every key on it is gone. */
  leaseExpired(id: string): void {
    for (const entry of [...this.#byOwner.values()]) if (entry.leaseId === id) this.deleted(entry.owner, entry.key);
    for (const entry of [...this.#unsure]) if (entry.leaseId === id) this.#forget(entry);
  }

  clear(): void {
    this.#closed = true;
    for (const owner of [...this.#byOwner.keys()]) this.drop(owner);
    for (const entry of [...this.#unsure]) this.#forget(entry);
    this.#due.clear();
  }

  /** The hold reached its end unrenewed: the key goes, if it is still the one this host wrote and its recorded end has come. */
  #expire(entry: HeldEntry): void {
    entry.lettingGo = true;
    void this.#end(entry, 0);
  }

  #current(entry: HeldEntry): boolean {
    return !this.#closed && (entry.fence === "" ? this.#unsure.has(entry) : this.#byOwner.get(entry.owner) === entry);
  }

  async #end(entry: HeldEntry, attempt: number): Promise<void> {
    try {
      for (;;) {
        if (!this.#current(entry) || entry.heapIndex >= 0) return; // released, or renewed back into the queue
        const found = await readHolder(this.#client, entry.key);
        if (!this.#current(entry) || entry.heapIndex >= 0) return;
        if (found === undefined || found.stored.o !== entry.owner || (entry.fence !== "" && found.kv.create_revision !== entry.fence)) {
          this.#forget(entry); // not (or no longer) this hold's key
          return;
        }
        const leftMs = found.stored.e - Date.now();
        if (!entry.place && leftMs > END_SLACK_MS) {
          // A renewal (or proclamation) landed that this host never heard answered: the key says
          // it ends later. It ends then, by this timer, not with the class lease.
          entry.lettingGo = false;
          entry.deadline = performance.now() + leftMs;
          this.#due.add(entry);
          return;
        }
        const res = await this.#client.txn(
          {
            compare: [{ key: entry.key, target: TARGET.MOD, result: CMP.EQUAL, mod_revision: found.kv.mod_revision }],
            success: [{ request_delete_range: { key: entry.key } }],
          },
          "the deletion of an expired lock",
        );
        if (res.succeeded) {
          this.#forget(entry);
          return;
        }
        // Written since the read (a late renewal): read it again.
      }
    } catch (err) {
      // Its lease would keep it while this host lives: try again until etcd answers.
      if (attempt < END_ATTEMPTS && !this.#closed) setTimeout(() => void this.#end(entry, attempt + 1), 1_000).unref();
      else {
        this.#forget(entry);
        this.#log.warn({ err: (err as Error).message }, "etcd: could not delete an expired lock; it ends with its lease");
      }
    }
  }
}

/** One hold to renew. */
interface HeldRenewal {
  readonly entry: HeldEntry;
  readonly ttlMs: number;
}

/** Why a hold is not the caller's: no holder, or another one. */
export type Refusal = "not_found" | "mismatch";

/**
 * Renews by request, for every kind: each owner's entry in this host's book, or, for a hold this
 * host did not take (a restored lock), what `readEntry` finds in etcd and enters.
 */
export async function renewRequests(
  c: EtcdContext,
  reqs: readonly RenewRequest[],
  keyOf: (req: RenewRequest) => string,
  readEntry: (key: string, owner: string) => Promise<HeldEntry | Refusal>,
  refused: (key: string) => Promise<Refusal>,
): Promise<RenewResult[]> {
  const results: RenewResult[] = new Array(reqs.length);
  const held: HeldRenewal[] = [];
  const at: number[] = [];
  await Promise.all(
    reqs.map(async (r, i) => {
      const key = keyOf(r);
      const own = c.book.get(r.owner);
      const entry = own?.key === key ? own : await readEntry(key, r.owner);
      if (typeof entry === "string") results[i] = { ok: false, reason: entry };
      else {
        held.push({ entry, ttlMs: r.ttlMs });
        at.push(i);
      }
    }),
  );
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
