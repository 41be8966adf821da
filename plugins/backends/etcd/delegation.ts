// The etcd steps of lock delegation (kit/delegation.ts), over the mutex's own (mutex.ts). Only
// with `[locking.etcd] fence_scale` above 1 (index.ts): etcd's fence is a revision, and a grant
// cannot advance the cluster's revision by a block, so every fence of the prefix is the revision
// of the write that granted the lock times the scale S (fence-scale.ts), and a delegating host
// hands out rev·S + 1 … rev·S + S − 1 locally; any later grant of any lock of the prefix is
// written at a later revision, so its fence is at least (rev + 1)·S, above the whole block.
//
// A grant of a free name is the mutex's acquisition (fence: the key's create revision × S). A
// re-grant (`from`) rewrites the key in place for the new owner, in one transaction guarded by
// the key's create revision (only this host rewrites a key it holds in place, so that revision
// still names `from`'s grant): the key is never free, and the write's revision (its new mod
// revision) × S is the new block's base. The rewritten record says so (record.ts, `r`, then `g`),
// so status and list report that fence too, on every host.
//
// Wanted: a grant that finds the name held puts the name on one key (keys.ts wantedNoticeKey)
// in the same transaction; every host's prefix watch sees the put (watch.ts), and the delegating
// host's wanted watch of the name wakes. etcd keeps no mark that refuses other grants (its leases
// count whole seconds, far longer than `wanted_ms`): as on PostgreSQL, the host that gave the key
// up stands back for `wanted_ms` itself (host/locking/delegation.ts).
import type { DelegatedGrant, DelegationSteps, MutexAcquireResult, ReleaseWatch } from "../../../kit/index.js";
import { isLeaseGone } from "./errors.js";
import type { EtcdContext, HeldEntry } from "./held.js";
import { mutexKey, wantedNoticeKey, wantedWatchKey } from "./keys.js";
import { endOf } from "./leases.js";
import type { EtcdMutexStore } from "./mutex.js";
import { CMP, TARGET } from "./proto.js";
import { encode, readHolder, storedHolder, type StoredHolder } from "./record.js";

const NOT_ACQUIRED: MutexAcquireResult = Object.freeze({ acquired: false });

/** etcd's DelegationSteps (kit/delegation.ts). */
export class EtcdDelegation implements DelegationSteps {
  /** A block is at most the prefix's fence scale: the fences between one revision's and the next. */
  readonly maxBlock: number;
  readonly #c: EtcdContext;
  readonly #mutex: EtcdMutexStore;

  constructor(context: EtcdContext, mutex: EtcdMutexStore) {
    this.#c = context;
    this.#mutex = mutex;
    this.maxBlock = context.scale.value;
  }

  async grant(req: DelegatedGrant): Promise<MutexAcquireResult> {
    if (req.from === undefined) {
      const notice = { request_put: { key: wantedNoticeKey(this.#c.prefix), value: req.name } };
      return this.#mutex.acquire(req, req.wantedMs > 0 ? [notice] : []);
    }
    const key = mutexKey(this.#c.prefix, req.name);
    const from = await this.#held(key, req.from);
    // The previous grant had ended: nothing was changed.
    if (from === undefined) return NOT_ACQUIRED;
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#c.leases.leaseFor(req.ttlMs);
      const now = Date.now();
      const expiresAtMs = endOf(now, req.ttlMs, lease);
      const record = storedHolder(req.owner, "exclusive", 0, req.holder, now, expiresAtMs, req.ttlMs);
      const written: StoredHolder = { ...record, r: 1 };
      try {
        const res = await this.#c.client.txn(
          {
            compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: from.fence }],
            success: [{ request_put: { key, value: encode(written), lease: lease.id! } }],
          },
          "a delegated re-grant",
        );
        // Deleted meanwhile (force-released, expired): the watch tells the book.
        if (!res.succeeded) return NOT_ACQUIRED;
        const revision = res.header.revision;
        // Its later writes (renewals, proclamations) carry the grant's revision as `g`.
        this.#c.book.add(req.owner, key, from.fence, lease, req.ttlMs, { ...record, g: Number(revision) });
        this.#c.book.replaced(req.from, req.owner);
        return { acquired: true, fence: this.#c.scale.of(revision), acquiredAtMs: now, expiresAtMs };
      } catch (err) {
        if (!isLeaseGone(err) || attempt > 0) {
          // Its answer was lost: the key may name the new owner, on a lease this host keeps alive.
          this.#c.book.unsure(req.owner, key, lease, req.ttlMs, record);
          throw err;
        }
        this.#c.leases.forget(lease, lease.id!);
      }
    }
  }

  wanted(name: string, listener: () => void): ReleaseWatch {
    return this.#c.watcher.watch(wantedWatchKey(this.#c.prefix, name), listener);
  }

  /** `owner`'s entry for `key`, read from etcd when this instance does not know it; undefined when `owner` does not hold it. */
  async #held(key: string, owner: string): Promise<HeldEntry | undefined> {
    const own = this.#c.book.get(owner);
    if (own?.key === key && own.fence !== "") return own;
    const found = await readHolder(this.#c.client, key);
    if (found === undefined || found.stored.o !== owner) return undefined;
    return this.#c.book.adopt(owner, key, found.kv, found.stored);
  }
}
