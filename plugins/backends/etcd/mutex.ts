// The mutex (and, through kit's MutexSteps, the leader kind) in etcd: one key per lock, taken by
// a put-if-absent transaction on this host's lease of the TTL's class, released by a delete
// that compares the key's create revision. The fence is that create revision (times the prefix's
// fence scale, fence-scale.ts): etcd's revision of the acquiring transaction, above every
// revision before it in the whole cluster, durable and the same on every member, so it never
// steps back, whatever restarts or elections happen.
import type {
  ListRequest,
  LockPage,
  LockRecord,
  MutexAcquireRequest,
  MutexAcquireResult,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import { isLeaseGone } from "./errors.js";
import { renewRequests, type EtcdContext, type HeldEntry, type Refusal } from "./held.js";
import { mutexKey, prefixEnd } from "./keys.js";
import { endOf } from "./leases.js";
import { CMP, TARGET, type RequestOp } from "./proto.js";
import { decodeHolder, encode, holderRecord, readHolder, retryAfter, storedHolder, type StoredHolder } from "./record.js";

export class EtcdMutexStore implements MutexStore {
  readonly #c: EtcdContext;

  constructor(context: EtcdContext) {
    this.#c = context;
  }

  /** `failure`: more operations for the transaction to run when the key is held (delegation.ts's wanted notice). */
  async acquire(req: MutexAcquireRequest, failure: readonly RequestOp[] = []): Promise<MutexAcquireResult> {
    const key = mutexKey(this.#c.prefix, req.name);
    await this.#c.scale.check();
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#c.leases.leaseFor(req.ttlMs);
      const leaseId = lease.id!;
      const now = Date.now();
      const expiresAtMs = endOf(now, req.ttlMs, lease);
      const record = storedHolder(req.owner, "exclusive", 0, req.holder, now, expiresAtMs, req.ttlMs);
      try {
        const res = await this.#c.client.txn(
          {
            compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: 0 }],
            success: [{ request_put: { key, value: encode(record), lease: leaseId } }],
            failure: [{ request_range: { key } }, ...failure],
          },
          "an acquisition",
        );
        if (!res.succeeded) {
          const held = decodeHolder(res.responses[0]?.response_range?.kvs[0]?.value ?? Buffer.alloc(0));
          return { acquired: false, ...retryAfter(held === undefined ? [] : [held.e]) };
        }
        const fence = res.header.revision;
        this.#c.book.add(req.owner, key, fence, lease, req.ttlMs, record);
        return { acquired: true, fence: this.#c.scale.of(fence), acquiredAtMs: now, expiresAtMs };
      } catch (err) {
        if (!isLeaseGone(err) || attempt > 0) {
          // Its answer was lost, not its request perhaps: the key may be there, on a lease this host keeps alive.
          this.#c.book.unsure(req.owner, key, lease, req.ttlMs, record);
          throw err;
        }
        this.#c.leases.forget(lease, leaseId); // expired behind this host's back: grant a new one
      }
    }
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return renewRequests(
      this.#c,
      reqs,
      (r) => mutexKey(this.#c.prefix, r.name),
      (key, owner) => this.#holderRead(key, owner),
      (key) => this.#refused(key),
    );
  }

  async release(name: string, owner: string): Promise<ReleaseResult> {
    const key = mutexKey(this.#c.prefix, name);
    const own = this.#c.book.get(owner);
    let entry: HeldEntry;
    if (own?.key === key) entry = own;
    else {
      // Not taken by this instance (a restored lock, or an acquisition whose answer was lost): one
      // read says whose it is, and it is entered so that it ends at its TTL if the deletion fails.
      const found = await readHolder(this.#c.client, key);
      if (found === undefined) return "not_found";
      if (found.stored.o !== owner) return "mismatch";
      entry = await this.#c.book.adopt(owner, key, found.kv, found.stored);
    }
    const res = await this.#c.book.letGo(entry, () =>
      this.#c.client.txn(
        {
          compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: entry.fence }],
          success: [{ request_delete_range: { key } }],
          failure: [{ request_range: { key, count_only: true } }],
        },
        "a release",
      ),
    );
    if (res === undefined || res.succeeded) return "released";
    return Number(res.responses[0]?.response_range?.count ?? 0) > 0 ? "mismatch" : "not_found";
  }

  async status(name: string): Promise<LockRecord | null> {
    const found = await readHolder(this.#c.client, mutexKey(this.#c.prefix, name));
    return found === undefined ? null : { name, ...withoutMode(holderRecord(found.kv, found.stored, Date.now(), this.#c.scale.value)) };
  }

  async forceRelease(name: string): Promise<boolean> {
    const key = mutexKey(this.#c.prefix, name);
    const res = await this.#c.client.txn({ success: [{ request_delete_range: { key } }] }, "a force-release");
    // The holder (on this host or another) hears of it from the watch's delete event.
    return Number(res.responses[0]?.response_delete_range?.deleted ?? 0) > 0;
  }

  async list(req: ListRequest): Promise<LockPage> {
    const base = mutexKey(this.#c.prefix, "");
    const from = req.cursor !== undefined ? Buffer.concat([Buffer.from(base + req.cursor), Buffer.from([0])]) : base + (req.prefix ?? "");
    const res = await this.#c.client.range({ key: from, range_end: prefixEnd(base + (req.prefix ?? "")), limit: req.limit });
    const now = Date.now();
    const locks: LockRecord[] = [];
    let last: string | undefined;
    for (const kv of res.kvs) {
      last = kv.key.toString("utf8").slice(base.length);
      const stored = decodeHolder(kv.value);
      if (stored !== undefined) locks.push({ name: last, ...withoutMode(holderRecord(kv, stored, now, this.#c.scale.value)) });
    }
    return res.more && last !== undefined ? { locks, cursor: last } : { locks };
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#c.watcher.watch(mutexKey(this.#c.prefix, name), listener);
  }

  async proclaim(name: string, owner: string, value: string): Promise<boolean> {
    const key = mutexKey(this.#c.prefix, name);
    const own = this.#c.book.get(owner);
    const entry = own?.key === key ? own : await this.#holderRead(key, owner);
    if (typeof entry === "string") return false;
    const record: StoredHolder = { ...entry.record, v: value };
    const res = await this.#c.client.txn(
      {
        compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: entry.fence }],
        success: [{ request_put: { key, value: encode(record), ignore_lease: true } }],
      },
      "a proclamation",
    );
    if (res.succeeded) entry.record = record;
    return res.succeeded;
  }

  /** Why `key` is not the caller's: held by someone else, or by no one. */
  async #refused(key: string): Promise<Refusal> {
    return (await readHolder(this.#c.client, key)) === undefined ? "not_found" : "mismatch";
  }

  /** The key's holder read from etcd, entered in this instance's book if it is `owner`. */
  async #holderRead(key: string, owner: string): Promise<HeldEntry | Refusal> {
    const found = await readHolder(this.#c.client, key);
    if (found === undefined) return "not_found";
    if (found.stored.o !== owner) return "mismatch";
    return this.#c.book.adopt(owner, key, found.kv, found.stored);
  }
}

function withoutMode<T extends { mode: unknown }>(record: T): Omit<T, "mode"> {
  const { mode: _mode, ...rest } = record;
  return rest;
}
