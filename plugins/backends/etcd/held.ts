// What this backend instance holds in etcd: one entry per owner (a lock's holder key, or a
// waiter's queue place), with the revisions that prove it is still the one this host wrote.
// The entry ends the hold at its own TTL with this host's timer (one timer for all, kit's
// DeadlineQueue), so a lock that nobody renews ends on time while the host lives; and it tells
// the backend's loss listeners when etcd deleted a key it did not delete itself.
import { DeadlineQueue, type Timed } from "../../../kit/index.js";
import type { Logger } from "pino";
import type { EtcdClient } from "./client.js";
import type { ClassLease, Leases } from "./leases.js";
import { CMP, TARGET, type KeyValue } from "./messages.js";
import type { StoredHolder } from "./record.js";

/** One key this host wrote and still counts as its own. */
export interface HeldEntry extends Timed {
  readonly owner: string;
  readonly key: string;
  /** The key's create revision: the fence of a holder. */
  readonly fence: string;
  /** The key's latest mod revision as this host wrote it. */
  mod: string;
  lease: ClassLease;
  leaseId: string;
  /** A queue place rather than a holder: not a loss when it goes. */
  readonly place: boolean;
  /** The key's value as this host last wrote it (a renewal rewrites it with a new end). */
  record: StoredHolder;
}

/** The entries of one backend instance. */
export class HeldBook {
  readonly #byOwner = new Map<string, HeldEntry>();
  readonly #client: EtcdClient;
  readonly #leases: Leases;
  readonly #log: Logger;
  readonly #lost: (owner: string) => void;
  readonly #due = new DeadlineQueue<HeldEntry>((entry) => this.#expire(entry), { slackMs: () => 1 });

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
    const entry: HeldEntry = { owner, key, fence, mod: fence, lease, leaseId: lease.id!, place, record, deadline: performance.now() + ttlMs, heapIndex: -1 };
    this.#leases.use(lease);
    this.#byOwner.set(owner, entry);
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
    const entry = this.add(owner, key, kv.create_revision, lease, Math.max(0, record.e - Date.now()), record);
    entry.mod = kv.mod_revision;
    return entry;
  }

  /** A renewal landed: the hold ends `ttlMs` from now, on `lease` (the same one unless the TTL class changed). */
  renewed(entry: HeldEntry, mod: string, lease: ClassLease, ttlMs: number): void {
    entry.mod = mod;
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

  /** Forgets `owner` before this host deletes its key itself (a release): its deletion is then no loss. */
  drop(owner: string): HeldEntry | undefined {
    const entry = this.#byOwner.get(owner);
    if (entry === undefined) return undefined;
    this.#byOwner.delete(owner);
    this.#due.remove(entry);
    this.#leases.unuse(entry.lease);
    return entry;
  }

  /** etcd deleted `key` (at `modRevision`): if it was a holder this host did not release, its owner lost it. */
  deleted(owner: string, key: string): void {
    const entry = this.#byOwner.get(owner);
    if (entry === undefined || entry.key !== key) return;
    this.drop(owner);
    if (!entry.place) this.#lost(owner);
  }

  /** etcd said lease `id` expired: every key on it is gone. */
  leaseExpired(id: string): void {
    for (const entry of [...this.#byOwner.values()]) if (entry.leaseId === id) this.deleted(entry.owner, entry.key);
  }

  clear(): void {
    for (const owner of [...this.#byOwner.keys()]) this.drop(owner);
    this.#due.clear();
  }

  /** The hold reached its end unrenewed: delete the key if it is still the one this host wrote. */
  #expire(entry: HeldEntry): void {
    if (this.#byOwner.get(entry.owner) !== entry) return;
    this.drop(entry.owner);
    void this.#deleteIfUnchanged(entry.key, entry.mod, 0);
  }

  async #deleteIfUnchanged(key: string, mod: string, attempt: number): Promise<void> {
    try {
      await this.#client.txn({
        compare: [{ key, target: TARGET.MOD, result: CMP.EQUAL, mod_revision: mod }],
        success: [{ request_delete_range: { key } }],
      }, "the deletion of an expired lock");
    } catch (err) {
      // Its lease would keep it while this host lives: try again until etcd answers.
      if (attempt < 60) setTimeout(() => void this.#deleteIfUnchanged(key, mod, attempt + 1), 1_000).unref();
      else this.#log.warn({ err: (err as Error).message }, "etcd: could not delete an expired lock; it ends with its lease");
    }
  }
}
