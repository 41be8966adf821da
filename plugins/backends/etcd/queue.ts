// The kinds with holders and a queue (read/write lock, semaphore, fair mutex) in etcd: a lock is
// a directory of keys, one per holder (`h/<owner>`) and one per waiting exclusive acquirer's
// queue place (`w/<owner>`), each on its writer's lease. An acquisition reads the directory, and
// writes its holder key in a transaction that succeeds only if no key of the directory was
// created or changed since that read (a compare over the directory's range), so two hosts never
// both decide on the same state. Queue places are ordered by their create revision: FIFO across
// every host, from etcd itself. The fence is the revision of the acquiring transaction (times the
// prefix's fence scale, fence-scale.ts).
import type {
  AcquireRequest,
  AcquireResult,
  KindSteps,
  LockState,
  LockStatePage,
  ListRequest,
  QueueKind,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import { KINDS } from "../../../kit/index.js";
import { isLeaseGone } from "./errors.js";
import { renewRequests, type EtcdContext, type HeldEntry } from "./held.js";
import { escapeName, parseKey, prefixEnd, queueDir, queueRoot, unescapeName } from "./keys.js";
import { endOf } from "./leases.js";
import { CMP, TARGET, type KeyValue, type RequestOp } from "./proto.js";
import { decodeHolder, encode, holderRecord, readHolder, retryAfter, storedHolder, type StoredHolder } from "./record.js";

/** How often an acquisition re-reads a directory another host changed under it before it says "not now". */
const MAX_ATTEMPTS = 8;
/** Keys read per range while listing. */
const LIST_BATCH = 256;

interface Dir {
  readonly holders: { kv: KeyValue; stored: StoredHolder }[];
  readonly places: { kv: KeyValue; owner: string }[];
  readonly revision: string;
}

export class EtcdQueueSteps implements KindSteps {
  readonly kind: QueueKind;
  readonly #c: EtcdContext;
  readonly #queues: boolean;

  constructor(kind: QueueKind, context: EtcdContext) {
    this.kind = kind;
    this.#c = context;
    this.#queues = KINDS[kind].queuesExclusive;
  }

  async acquire(req: AcquireRequest): Promise<AcquireResult> {
    const dir = queueDir(this.#c.prefix, this.kind, req.name);
    const holderKey = `${dir}h/${req.owner}`;
    const placeKey = `${dir}w/${req.owner}`;
    for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
      const d = await this.#read(dir);
      const now = Date.now();
      if (d.holders.some((h) => h.stored.o === req.owner)) return { acquired: false };
      if (req.mode === "shared" && d.holders.length > 0) {
        const theirs = d.holders[0]!.stored.l ?? 0;
        if (theirs !== req.limit) return { acquired: false, limit: theirs };
      }
      const free =
        req.mode === "exclusive"
          ? d.holders.length === 0 && (d.places.length === 0 || d.places[0]!.owner === req.owner)
          : d.holders.every((h) => h.stored.m === "s") && d.places.length === 0 && (req.limit === 0 || d.holders.length < req.limit);
      if (!free) {
        if (req.mode === "exclusive" && req.queueMs > 0 && this.#queues) await this.#keepPlace(placeKey, req);
        return { acquired: false, ...retryAfter(d.holders.map((h) => h.stored.e)) };
      }
      await this.#c.scale.check();
      const lease = await this.#c.leases.leaseFor(req.ttlMs);
      const leaseId = lease.id!;
      const expiresAtMs = endOf(now, req.ttlMs, lease);
      const record = storedHolder(req.owner, req.mode, req.limit, req.holder, now, expiresAtMs, req.ttlMs);
      const success: RequestOp[] = [{ request_put: { key: holderKey, value: encode(record), lease: leaseId } }];
      if (d.places.some((p) => p.owner === req.owner)) success.push({ request_delete_range: { key: placeKey } });
      let res;
      try {
        res = await this.#c.client.txn(
          {
            // Nothing in the directory created or changed since the read (deletions only free it further).
            compare: [{ key: dir, range_end: prefixEnd(dir), target: TARGET.MOD, result: CMP.LESS, mod_revision: String(Number(d.revision) + 1) }],
            success,
          },
          "an acquisition",
        );
      } catch (err) {
        if (!isLeaseGone(err)) {
          // Its answer was lost, not its request perhaps: the key may be there, on a lease this host keeps alive.
          this.#c.book.unsure(req.owner, holderKey, lease, req.ttlMs, record);
          throw err;
        }
        this.#c.leases.forget(lease, leaseId);
        continue;
      }
      if (!res.succeeded) continue; // another host changed the directory: decide again on what is there now
      const fence = res.header.revision;
      this.#c.book.add(req.owner, holderKey, fence, lease, req.ttlMs, record);
      return { acquired: true, fence: this.#c.scale.of(fence), acquiredAtMs: now, expiresAtMs };
    }
    // The directory kept changing under every decision: contended, with no hint (a hint is > 0).
    return { acquired: false };
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    // A holder key names its owner: a key that is there is the caller's.
    return renewRequests(
      this.#c,
      reqs,
      (r) => `${queueDir(this.#c.prefix, this.kind, r.name)}h/${r.owner}`,
      (key, owner) => this.#holderRead(key, owner),
      async () => "not_found",
    );
  }

  async release(name: string, owner: string): Promise<ReleaseResult> {
    const key = `${queueDir(this.#c.prefix, this.kind, name)}h/${owner}`;
    const own = this.#c.book.get(owner);
    let entry = own?.key === key ? own : undefined;
    if (entry === undefined) {
      // Not taken by this instance (a restored lock, or an acquisition whose answer was lost):
      // entered so that it ends at its TTL if the deletion fails.
      const found = await readHolder(this.#c.client, key);
      if (found === undefined) return "not_found";
      entry = await this.#c.book.adopt(owner, key, found.kv, found.stored);
    }
    const held = entry;
    const res = await this.#c.book.letGo(held, () =>
      this.#c.client.txn(
        {
          compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: held.fence }],
          success: [{ request_delete_range: { key } }],
        },
        "a release",
      ),
    );
    return res === undefined || res.succeeded ? "released" : "not_found";
  }

  async leaveQueue(name: string, owner: string): Promise<void> {
    const key = `${queueDir(this.#c.prefix, this.kind, name)}w/${owner}`;
    const entry = this.#c.book.get(owner);
    if (entry?.key !== key) return; // only this host writes its waiters' places
    this.#c.book.lettingGo(owner);
    try {
      await this.#c.client.txn({ success: [{ request_delete_range: { key } }] }, "leaving a queue");
    } catch (err) {
      // The place would stay while this host's shortest lease lives: its timer ends it now, retrying.
      if (!this.#c.book.kept(entry)) this.#c.book.endNow(entry);
      throw err;
    }
    if (this.#c.book.get(owner) === entry) this.#c.book.drop(owner);
  }

  async status(name: string): Promise<LockState | null> {
    const d = await this.#read(queueDir(this.#c.prefix, this.kind, name));
    if (d.holders.length === 0 && d.places.length === 0) return null;
    return this.#record(name, d, Date.now());
  }

  async forceRelease(name: string): Promise<number> {
    const holders = `${queueDir(this.#c.prefix, this.kind, name)}h/`;
    const res = await this.#c.client.txn({ success: [{ request_delete_range: { key: holders, range_end: prefixEnd(holders) } }] }, "a force-release");
    // Each holder hears of it from the watch's delete events; the queue stays.
    return Number(res.responses[0]?.response_delete_range?.deleted ?? 0);
  }

  async list(req: ListRequest): Promise<LockStatePage> {
    const root = queueRoot(this.#c.prefix, this.kind);
    const end = prefixEnd(root + escapeName(req.prefix ?? ""));
    let from: string | Buffer = req.cursor ?? root + escapeName(req.prefix ?? "");
    const records: LockState[] = [];
    let dir: string | undefined;
    let kvs: KeyValue[] = [];
    const now = Date.now();
    const finish = (): void => {
      if (dir === undefined) return;
      const d = this.#group(kvs, "0");
      if (d.holders.length > 0) records.push(this.#record(unescapeName(dir.slice(root.length, -1)), d, now));
    };
    for (;;) {
      const res = await this.#c.client.range({ key: from, range_end: end, limit: LIST_BATCH });
      for (const kv of res.kvs) {
        const key = kv.key.toString("utf8");
        const ref = parseKey(this.#c.prefix, key);
        if (ref === undefined || ref.type === "mutex") continue;
        if (ref.watchKey !== dir) {
          finish();
          if (records.length >= req.limit) return { records, cursor: ref.watchKey };
          dir = ref.watchKey;
          kvs = [];
        }
        kvs.push(kv);
      }
      if (!res.more || res.kvs.length === 0) {
        finish();
        return { records };
      }
      from = Buffer.concat([res.kvs[res.kvs.length - 1]!.key, Buffer.from([0])]);
    }
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#c.watcher.watch(queueDir(this.#c.prefix, this.kind, name), listener);
  }

  /** A holder key read from etcd (a restored lock), entered in this instance's book. */
  async #holderRead(key: string, owner: string): Promise<HeldEntry | "not_found"> {
    const found = await readHolder(this.#c.client, key);
    return found === undefined ? "not_found" : this.#c.book.adopt(owner, key, found.kv, found.stored);
  }

  /**
   * Takes or keeps the waiter's place: written once, then kept by this host's timer (no write per
   * attempt). It rides on the shortest lease this host has (the margin's class), not one as long
   * as `queueMs`: a place matters only while its host lives, so a dead host's waiter stops
   * standing in the queue within the margin.
   */
  async #keepPlace(key: string, req: AcquireRequest): Promise<void> {
    const entry = this.#c.book.get(req.owner);
    if (entry?.key === key) return this.#c.book.refresh(entry, req.queueMs);
    const lease = await this.#c.leases.leaseFor(0);
    const now = Date.now();
    const record = storedHolder(req.owner, "exclusive", 0, req.holder, now, now + req.queueMs, req.queueMs);
    const res = await this.#c.client.txn(
      {
        compare: [{ key, target: TARGET.CREATE, result: CMP.EQUAL, create_revision: 0 }],
        success: [{ request_put: { key, value: encode(record), lease: lease.id! } }],
        failure: [{ request_range: { key } }],
      },
      "taking a queue place",
    );
    if (res.succeeded) this.#c.book.add(req.owner, key, res.header.revision, lease, req.queueMs, record, true);
    else {
      // There already (an earlier write of this waiter's whose answer was lost): kept by this host's timer all the same.
      const kv = res.responses[0]?.response_range?.kvs[0];
      const there = kv === undefined ? undefined : decodeHolder(kv.value);
      if (kv !== undefined && there?.o === req.owner)
        this.#c.book.add(req.owner, key, kv.create_revision, this.#c.leases.byId(kv.lease) ?? lease, req.queueMs, record, true);
    }
  }

  async #read(dir: string): Promise<Dir> {
    const res = await this.#c.client.range({ key: dir, range_end: prefixEnd(dir) });
    return this.#group(res.kvs, res.header.revision);
  }

  #group(kvs: readonly KeyValue[], revision: string): Dir {
    const d: Dir = { holders: [], places: [], revision };
    for (const kv of kvs) {
      const ref = parseKey(this.#c.prefix, kv.key.toString("utf8"));
      if (ref === undefined || ref.type === "mutex") continue;
      if (ref.type === "place") d.places.push({ kv, owner: ref.owner });
      else {
        const stored = decodeHolder(kv.value);
        if (stored !== undefined) d.holders.push({ kv, stored });
      }
    }
    const byRevision = (a: { kv: KeyValue }, b: { kv: KeyValue }): number => Number(a.kv.create_revision) - Number(b.kv.create_revision);
    d.holders.sort(byRevision);
    d.places.sort(byRevision);
    return d;
  }

  #record(name: string, d: Dir, now: number): LockState {
    return {
      name,
      kind: this.kind,
      limit: d.holders[0]?.stored.l ?? 0,
      holders: d.holders.map((h) => holderRecord(h.kv, h.stored, now, this.#c.scale.value)),
      queued: d.places.length,
    };
  }
}
