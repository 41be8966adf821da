// The renewal manager: one per LockService (so one per host), one timer and one min-heap of
// deadlines for every lease it watches, however many. A keepalive lease is renewed once
// `renewAtRatio` of its TTL has passed; renewals due in the same tick (within the batch
// window) go to the backend as one KindSteps.renewMany call, i.e. one round trip. A
// renewal that fails on I/O is retried a bounded number of times, spread over what is left
// before the safety margin; one not confirmed by then, or refused by the backend, ends the
// lease as lost. Leases without keepalive are watched only once someone observes them
// (signal / onLost), and end as lost when their host-side deadline passes. A new keepalive lease
// waits in a bag (renewal-pending.ts) until one scan, queued in the same heap at the earliest
// first renewal among them, moves the ones still held into the heap: a lease released before
// then never costs an entry or a heap operation.
import type { KeepaliveSettings } from "./options.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { RenewRequest, RenewResult } from "../../kit/backend.js";
import type { LockKind } from "../../kit/kinds.js";
import { DeadlineQueue, type Timed } from "../../kit/deadline-queue.js";
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";
import { PendingLeases } from "./renewal-pending.js";

/** What the renewal manager needs from its service. */
export interface RenewalHost {
  /** One batched round trip to the store of one lock kind. */
  renewMany(kind: LockKind, reqs: readonly RenewRequest[]): Promise<RenewResult[]>;
  /** A renewal was confirmed: the lease now ends `ttlMs` after `sentAt` (host clock). */
  renewed(lease: Lease, expiresAtMs: number, sentAt: number): void;
  /** A renewal was refused or failed (counted; `lost` follows when it is final). */
  renewalFailed(lease: Lease): void;
  /** The lease is lost for `reason` (LOST); `stillHeld` when the server may still hold it. */
  lost(lease: Lease, reason: LockhostError, stillHeld: boolean): void;
}

/** The one item of the queue that is no lease's: when due, the pending leases move into the heap. */
interface ScanMark extends Timed {
  readonly phase: "scan";
}

/** A watched lease's one place in the queue. */
interface Entry extends Timed {
  readonly lease: Lease;
  /** "renew": the next renewal is due at `deadline`; "end": the lease ends (or must be confirmed) by then. */
  phase: "renew" | "end";
  /** Whether a renewal of this lease is on its way to the backend. */
  inFlight: boolean;
  /** I/O failures of the current renewal so far. */
  failures: number;
}

/** One renewal manager: one timer, one heap, batched renewals. */
export class RenewalManager {
  readonly #host: RenewalHost;
  readonly #settings: KeepaliveSettings;
  /**
   * Every entry, for counting and close(). A lease finds its own entry through its renewal
   * slot (LeaseControl.renewalEntry): release() asks for every lease, and most were never
   * watched, so the lookup must not hash anything.
   */
  readonly #entries = new Set<Entry>();
  readonly #queue: DeadlineQueue<Entry | ScanMark>;
  /** New keepalive leases, before their first renewal is near (their renewal slot: their index there). */
  readonly #pending = new PendingLeases();
  /** Queued while leases are pending, at the earliest first renewal among those added since the last scan. */
  readonly #scan: ScanMark = { phase: "scan", deadline: 0, heapIndex: -1 };
  /** Renewals taken from the queue in the current firing, sent together after it. */
  #batch: Entry[] = [];
  #batches = 0;
  #closed = false;

  /** `settings` are validated (resolveKeepalive). */
  constructor(host: RenewalHost, settings: KeepaliveSettings) {
    this.#host = host;
    this.#settings = settings;
    const window = this.#settings.batchWindowMs;
    this.#queue = new DeadlineQueue<Entry | ScanMark>((e) => (e.phase === "scan" ? this.#promotePending() : this.#due(e)), {
      // Renewing (or scanning) a little early is harmless; declaring a lease lost early is not.
      slackMs: (e) => (e.phase === "renew" ? Math.min(window, e.lease.ttlMs * 0.1) : e.phase === "scan" ? window : 0),
      afterFire: () => this.#flush(),
    });
  }

  /** Leases watched now under keepalive. */
  get keepaliveCount(): number {
    let n = 0;
    for (const { lease } of this.#entries) if (lease.keepalive) n++;
    for (const lease of this.#pending.all) if (lease.keepalive) n++;
    return n;
  }

  /** renewMany calls made: one per firing that had renewals due. */
  get batches(): number {
    return this.#batches;
  }

  /** Timers armed now (0 or 1). */
  get timers(): number {
    return this.#queue.timers;
  }

  /**
   * Starts renewing a new keepalive lease (one nothing watches yet): it waits in the bag until
   * its first renewal is near. Costs a place in the bag, and a queue update only when it is due
   * before every lease added since the last scan.
   */
  start(lease: Lease): void {
    if (this.#closed || lease.state !== "held" || slotOf(lease) !== undefined) return;
    if (!lease.keepalive) return this.watch(lease);
    this.#pending.add(lease);
    const due = this.#renewAt(lease);
    const scan = this.#scan;
    if (scan.heapIndex < 0 || due < scan.deadline) {
      scan.deadline = due;
      this.#queue.update(scan);
    }
  }

  /** Starts watching `lease`: renewals if it has keepalive, else its end. Idempotent. */
  watch(lease: Lease): void {
    if (this.#closed || lease.state !== "held") return;
    const slot = slotOf(lease);
    // A pending keepalive lease is watched already: the scan queues its renewal in time.
    if (typeof slot === "number") {
      if (lease.keepalive) return;
      this.#pending.remove(lease, slot);
    }
    let entry = entryOf(lease);
    if (!entry) entry = this.#entryFor(lease);
    if (!entry.inFlight) this.#schedule(entry);
  }

  /** The lease's deadline moved (a manual renew) or its keepalive changed: re-plan it. */
  replan(lease: Lease): void {
    const slot = slotOf(lease);
    if (typeof slot === "number") {
      // Rare (a manual renew, or keepalive turned off, before the first renewal): the lease
      // leaves the bag for the heap, which plans it from its new deadline.
      this.#pending.remove(lease, slot);
      this.#schedule(this.#entryFor(lease));
      return;
    }
    if (slot && !slot.inFlight) this.#schedule(slot);
  }

  /** Stops watching `lease` (released or lost); a renewal in flight for it is ignored. */
  forget(lease: Lease): void {
    const slot = slotOf(lease);
    if (slot === undefined) return;
    if (typeof slot === "number") return this.#pending.remove(lease, slot);
    this.#drop(slot);
    this.#queue.remove(slot);
  }

  /** Stops the timer and forgets every lease. */
  close(): void {
    this.#closed = true;
    this.#queue.clear();
    this.#pending.takeAll();
    for (const entry of this.#entries) leases.setRenewalEntry(entry.lease, undefined);
    this.#entries.clear();
    this.#batch = [];
  }

  /** A new entry for `lease` (whose renewal slot is empty), not queued yet. */
  #entryFor(lease: Lease): Entry {
    const entry: Entry = { lease, phase: "end", inFlight: false, failures: 0, deadline: 0, heapIndex: -1 };
    leases.setRenewalEntry(lease, entry);
    this.#entries.add(entry);
    return entry;
  }

  /**
   * The scan: every pending lease moves into the heap, due or not, so each lease is scanned at
   * most once. Those due within this firing's slack are taken in it (the queue re-reads its head).
   */
  #promotePending(): void {
    for (const lease of this.#pending.takeAll()) if (lease.state === "held") this.#schedule(this.#entryFor(lease));
  }

  /** When `lease`'s next renewal is due: once renewAtRatio of its TTL has passed. */
  #renewAt(lease: Lease): number {
    // The lease started ttlMs before its deadline.
    return lease.deadline - lease.ttlMs * (1 - this.#settings.renewAtRatio);
  }

  /** Forgets `entry` (its lease is released, lost, or no longer watched). */
  #drop(entry: Entry): void {
    leases.setRenewalEntry(entry.lease, undefined);
    this.#entries.delete(entry);
  }

  /** Queues the next step of an idle entry: its renewal, or its end. */
  #schedule(entry: Entry): void {
    const { lease } = entry;
    if (lease.keepalive) {
      entry.phase = "renew";
      entry.deadline = this.#renewAt(lease);
    } else {
      entry.phase = "end";
      entry.deadline = lease.deadline;
    }
    this.#queue.update(entry);
  }

  #due(entry: Entry): void {
    const { lease } = entry;
    if (entryOf(lease) !== entry || lease.state !== "held") return;
    if (entry.phase === "renew") {
      entry.inFlight = true;
      this.#batch.push(entry);
      // Watch the confirmation: a renewal not back by the safety margin ends the lease.
      entry.phase = "end";
      entry.deadline = this.#confirmBy(lease);
      this.#queue.add(entry);
      return;
    }
    this.#drop(entry);
    const unconfirmed = entry.inFlight || lease.keepalive;
    this.#host.lost(
      lease,
      lostError(lease, unconfirmed ? "its renewal could not be confirmed before the lease would end" : "its lease ran out (no keepalive, not renewed)"),
      unconfirmed,
    );
  }

  /** The latest host time by which a renewal must be confirmed. */
  #confirmBy(lease: Lease): number {
    return lease.deadline - lease.ttlMs * this.#settings.safetyMarginRatio;
  }

  #flush(): void {
    const all = this.#batch;
    if (all.length === 0) return;
    this.#batch = [];
    // One round trip per kind of lock due in this tick (almost always one: mutexes).
    const kind = all[0]!.lease.kind;
    if (all.every((e) => e.lease.kind === kind)) {
      this.#send(kind, all);
      return;
    }
    const byKind = new Map<LockKind, Entry[]>();
    for (const entry of all) {
      const list = byKind.get(entry.lease.kind);
      if (list) list.push(entry);
      else byKind.set(entry.lease.kind, [entry]);
    }
    for (const [k, batch] of byKind) this.#send(k, batch);
  }

  #send(kind: LockKind, batch: Entry[]): void {
    this.#batches++;
    const reqs: RenewRequest[] = batch.map(({ lease }) => ({ name: lease.name, owner: lease.owner, ttlMs: lease.ttlMs }));
    const sentAt = performance.now();
    let sent: Promise<RenewResult[]>;
    try {
      sent = this.#host.renewMany(kind, reqs);
    } catch (err) {
      sent = Promise.reject(err);
    }
    sent.then(
      (results) => batch.forEach((entry, i) => this.#settle(entry, results[i], sentAt)),
      (err: unknown) => {
        const e = toLockhostError(err, "BACKEND_UNAVAILABLE");
        for (const entry of batch) this.#failed(entry, e);
      },
    );
  }

  #settle(entry: Entry, result: RenewResult | undefined, sentAt: number): void {
    const { lease } = entry;
    const current = entryOf(lease) === entry;
    entry.inFlight = false;
    if (!current || lease.state !== "held") {
      // Released meanwhile, or already declared lost: a late success holds a lock nobody uses.
      if (result?.ok && lease.state === "lost") this.#host.lost(lease, lease.lostReason!, true);
      return;
    }
    if (result === undefined) {
      this.#failed(entry, new LockhostError("INTERNAL", "renewMany returned fewer results than requests"));
      return;
    }
    if (result.ok) {
      entry.failures = 0;
      this.#host.renewed(lease, result.expiresAtMs, sentAt);
      this.#schedule(entry);
      return;
    }
    this.#drop(entry);
    this.#queue.remove(entry);
    this.#host.renewalFailed(lease);
    const why = result.reason === "mismatch" ? "another owner holds it now" : "it expired, was deleted or was force-released";
    this.#host.lost(lease, lostError(lease, `its renewal was refused: ${why}`), false);
  }

  /** An I/O failure: retry inside the safety margin while retries last, else the lease is lost. */
  #failed(entry: Entry, err: LockhostError): void {
    const { lease } = entry;
    if (entryOf(lease) !== entry || lease.state !== "held") return;
    entry.inFlight = false;
    this.#host.renewalFailed(lease);
    const now = performance.now();
    const left = this.#confirmBy(lease) - now;
    const retriesLeft = this.#settings.maxRetries - entry.failures;
    if (retriesLeft > 0 && left > 1) {
      entry.failures++;
      entry.phase = "renew";
      // Spread the remaining attempts over what is left of the window.
      entry.deadline = now + Math.max(1, left / (retriesLeft + 1));
      this.#queue.update(entry);
      return;
    }
    this.#drop(entry);
    this.#queue.remove(entry);
    this.#host.lost(lease, lostError(lease, `its renewal could not be confirmed before the lease would end (${err.code}: ${err.message})`), true);
  }
}

/** A lease's renewal slot: its entry (in the heap's care), its index in the pending bag, or nothing (not watched). */
const slotOf = (lease: Lease): Entry | number | undefined => leases.renewalEntry(lease) as Entry | number | undefined;

/** A lease's entry, if the heap watches it (not while it is pending). */
const entryOf = (lease: Lease): Entry | undefined => {
  const slot = slotOf(lease);
  return typeof slot === "object" ? slot : undefined;
};

function lostError(lease: Lease, why: string): LockhostError {
  return new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) was lost: ${why}`);
}
