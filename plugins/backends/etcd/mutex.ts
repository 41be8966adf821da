// The mutex (and, through kit's MutexSteps, the leader kind) in etcd: one key per lock, taken by
// a put-if-absent transaction on this host's lease of the TTL's class, released by a delete
// that compares the key's create revision. The fence is that create revision: etcd's revision
// of the acquiring transaction, above every revision before it in the whole cluster, durable
// and the same on every member, so it never steps back, whatever restarts or elections happen.
import type { ListRequest, LockPage, LockRecord, MutexAcquireRequest, MutexAcquireResult, MutexStore, ReleaseResult, ReleaseWatch, RenewRequest, RenewResult } from "../../../kit/index.js";
import { endOf, isLeaseGone, retryAfter, type EtcdContext } from "./context.js";
import type { HeldEntry } from "./held.js";
import { mutexKey, prefixEnd } from "./keys.js";
import { renewHeld, type HeldRenewal } from "./renew.js";
import { CMP, TARGET, type KeyValue } from "./messages.js";
import { decodeHolder, encode, holderRecord, storedHolder, type StoredHolder } from "./record.js";

export class EtcdMutexStore implements MutexStore {
  readonly #c: EtcdContext;

  constructor(context: EtcdContext) {
    this.#c = context;
  }

  async acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    const key = mutexKey(this.#c.prefix, req.key);
    for (let attempt = 0; ; attempt++) {
      const lease = await this.#c.leases.leaseFor(req.ttlMs);
      const leaseId = lease.id!;
      const now = Date.now();
      const expiresAtMs = endOf(now, req.ttlMs, lease);
      const record = storedHolder(req.owner, "exclusive", 0, req.holder, now, expiresAtMs, req.ttlMs);
      try {
        const res = await this.#c.client.txn({
          compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: 0 }],
          success: [{ request_put: { key, value: encode(record), lease: leaseId } }],
          failure: [{ request_range: { key } }],
        }, "an acquisition");
        if (!res.succeeded) {
          const held = decodeHolder(res.responses[0]?.response_range?.kvs[0]?.value ?? Buffer.alloc(0));
          return { acquired: false, ...retryAfter(held === undefined ? [] : [held.e]) };
        }
        const fence = res.header.revision;
        this.#c.book.add(req.owner, key, fence, lease, req.ttlMs, record);
        return { acquired: true, fence: Number(fence), acquiredAtMs: now, expiresAtMs };
      } catch (err) {
        if (!isLeaseGone(err) || attempt > 0) throw err;
        this.#c.leases.forget(lease, leaseId); // expired behind this host's back: grant a new one
      }
    }
  }

  async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    const results: (RenewResult | undefined)[] = new Array(reqs.length);
    const held: HeldRenewal[] = [];
    const at: number[] = [];
    await Promise.all(reqs.map(async (r, i) => {
      const key = mutexKey(this.#c.prefix, r.key);
      let entry = this.#c.book.get(r.owner);
      // Not taken by this instance (a restored lock): read it, then count it as held here.
      if (entry?.key !== key) entry = (await this.#adopt(key, r.owner))?.entry;
      if (entry === undefined) results[i] = { ok: false, reason: await this.#refused(key) };
      else {
        held.push({ entry, ttlMs: r.ttlMs });
        at.push(i);
      }
    }));
    const renewed = await renewHeld(this.#c, held, (key) => this.#refused(key));
    renewed.forEach((r, j) => (results[at[j]!] = r));
    return results as RenewResult[];
  }

  async release(name: string, owner: string): Promise<ReleaseResult> {
    const key = mutexKey(this.#c.prefix, name);
    const entry = this.#c.book.get(owner);
    const fence = entry?.key === key ? entry.fence : (await this.#adopt(key, owner))?.kv.create_revision;
    if (fence === undefined) return (await this.#read(key)) === undefined ? "not_found" : "mismatch";
    // Forgotten first: the deletion's event is then no loss.
    this.#c.book.drop(owner);
    const res = await this.#c.client.txn({
      compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: fence }],
      success: [{ request_delete_range: { key } }],
      failure: [{ request_range: { key, count_only: true } }],
    }, "a release");
    if (res.succeeded) return "released";
    return Number(res.responses[0]?.response_range?.count ?? 0) > 0 ? "mismatch" : "not_found";
  }

  async status(name: string): Promise<LockRecord | null> {
    const found = await this.#read(mutexKey(this.#c.prefix, name));
    return found === undefined ? null : { key: name, ...withoutMode(holderRecord(found.kv, found.stored, Date.now())) };
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
      if (stored !== undefined) locks.push({ key: last, ...withoutMode(holderRecord(kv, stored, now)) });
    }
    return res.more && last !== undefined ? { locks, cursor: last } : { locks };
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return { ready: this.#c.watcher.ready, close: this.#c.watcher.listeners.add(mutexKey(this.#c.prefix, name), listener) };
  }

  async proclaim(name: string, owner: string, value: string): Promise<boolean> {
    const key = mutexKey(this.#c.prefix, name);
    const found = await this.#adopt(key, owner);
    if (found === undefined) return false;
    const { kv, entry } = found;
    const record: StoredHolder = { ...entry.record, v: value };
    const res = await this.#c.client.txn({
      compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: kv.create_revision }],
      success: [{ request_put: { key, value: encode(record), ignore_lease: true } }],
    }, "a proclamation");
    if (res.succeeded) {
      entry.record = record;
      entry.mod = res.header.revision;
    }
    return res.succeeded;
  }

  /** Why `key` is not the caller's: held by someone else, or by no one. */
  async #refused(key: string): Promise<"not_found" | "mismatch"> {
    return (await this.#read(key)) === undefined ? "not_found" : "mismatch";
  }

  /** The key's holder if it is `owner`, entered in this instance's book if it was not. */
  async #adopt(key: string, owner: string): Promise<{ kv: KeyValue; stored: StoredHolder; entry: HeldEntry } | undefined> {
    const found = await this.#read(key);
    if (found === undefined || found.stored.o !== owner) return undefined;
    let entry = this.#c.book.get(owner);
    if (entry === undefined || entry.key !== key || entry.fence !== found.kv.create_revision) {
      const lease = this.#c.leases.byId(found.kv.lease);
      if (lease === undefined) {
        // On another host's lease: it stays there until a renewal moves it to one of this host's.
        const mine = await this.#c.leases.leaseFor(found.stored.t);
        entry = this.#c.book.add(owner, key, found.kv.create_revision, mine, Math.max(0, found.stored.e - Date.now()), found.stored);
      } else {
        entry = this.#c.book.add(owner, key, found.kv.create_revision, lease, Math.max(0, found.stored.e - Date.now()), found.stored);
      }
      entry.mod = found.kv.mod_revision;
    }
    return { ...found, entry };
  }

  async #read(key: string): Promise<{ kv: KeyValue; stored: StoredHolder } | undefined> {
    const kv = (await this.#c.client.range({ key })).kvs[0];
    const stored = kv === undefined ? undefined : decodeHolder(kv.value);
    return kv === undefined || stored === undefined ? undefined : { kv, stored };
  }
}

function withoutMode<T extends { mode: unknown }>(record: T): Omit<T, "mode"> {
  const { mode: _mode, ...rest } = record;
  return rest;
}
