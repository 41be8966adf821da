// The host's etcd leases: one per TTL class (whole seconds), shared by every lock of that class
// this backend holds, and kept ahead of each of them by `leaseMarginMs`. Why not a lease per
// lock: a grant is a Raft write of its own, so a lock would cost a second round trip (or a
// second write) per acquisition, and every renewal a keepalive per lock; with a class lease an
// acquisition is one transaction, exactly like a raw put-if-absent, and a tick's keepalives are
// one message per class. Why not one lease per host: a lock must outlive a frozen holder for its
// whole TTL (the holder believes in it until then), so the lease carrying it must last at least
// that long after the last keepalive, and a long session lease would keep a dead host's short
// locks for too long. A lock ends at its own TTL by this host's timer (HeldLocks) while the host
// lives; when the host dies or stalls, its class lease ends it at most TTL + margin later. A
// lock's recorded end is never later than its lease is sure to last (endOf).
import type { Logger } from "pino";
import { LockhostError } from "../../../kit/index.js";
import type { EtcdClient, EtcdStream } from "./client.js";
import type { LeaseKeepAliveResponse } from "./proto.js";

/** One TTL class's lease. */
export interface ClassLease {
  /** The lease's TTL as etcd granted it (never below the server's minimum). */
  readonly ttlS: number;
  /** The lease id; undefined until granted, and again once lost. */
  id: string | undefined;
  /**
   * When the lease is sure to last until at least (epoch ms, this host's clock): the send time of
   * the grant or of the latest keepalive etcd confirmed, plus the TTL. The server restarts the
   * lease when it receives the message, never before it was sent.
   */
  sureUntilMs: number;
  /** Locks and queue places on it now. */
  users: number;
  /** When it last had a user (ms, monotonic); an idle lease is revoked after a while. */
  idleSinceMs: number;
  granting: Promise<void> | undefined;
}

/**
 * When a lock of `ttlMs` taken now ends (epoch ms): its TTL from now, or sooner if its lease is
 * not sure to last that long (keepalives went unanswered), so a holder never counts on a lock
 * its lease may already have ended.
 */
export function endOf(nowMs: number, ttlMs: number, lease: ClassLease): number {
  return Math.min(nowMs + ttlMs, lease.sureUntilMs);
}

/** How long a lease without users is kept for the next lock of its class. */
const IDLE_KEEP_MS = 30_000;

/** The leases of one backend instance, and the keepalive stream that keeps them. */
export class Leases {
  readonly #client: EtcdClient;
  readonly #log: Logger;
  readonly #marginMs: number;
  readonly #commandTimeoutMs: number;
  readonly #classes = new Map<number, ClassLease>();
  /** Leases replaced in their class (not sure to last) that locks still ride on. */
  readonly #retired = new Set<ClassLease>();
  /** Called with a lease id that etcd no longer has (the host stalled past it): its locks are gone. */
  readonly #onExpired: (id: string) => void;
  #stream: EtcdStream | undefined;
  /** Keepalives sent and not answered yet: lease id → send times, in order. */
  readonly #inFlight = new Map<string, number[]>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #opening = false;
  /** The server's smallest TTL, learned from the first grant (etcd raises a smaller request silently). */
  #minTtlS = 1;

  constructor(client: EtcdClient, log: Logger, marginMs: number, commandTimeoutMs: number, onExpired: (id: string) => void) {
    this.#client = client;
    this.#log = log;
    this.#marginMs = marginMs;
    this.#commandTimeoutMs = commandTimeoutMs;
    this.#onExpired = onExpired;
    this.#timer = setInterval(() => this.#tick(), Math.max(100, Math.floor(marginMs / 2)));
    this.#timer.unref();
  }

  /** The TTL class (whole seconds) whose lease covers a lock of `ttlMs`. */
  #classOf(ttlMs: number): number {
    return Math.max(this.#minTtlS, Math.ceil((ttlMs + this.#marginMs) / 1000));
  }

  /**
   * The granted lease of `ttlMs`'s class, granting it first when there is none (the only case
   * that costs a round trip). The caller counts itself a user (use/unuse).
   */
  leaseFor(ttlMs: number): ClassLease | Promise<ClassLease> {
    const ttlS = this.#classOf(ttlMs);
    let lease = this.#classes.get(ttlS);
    if (lease !== undefined && lease.id !== undefined && lease.granting === undefined && lease.sureUntilMs < Date.now() + ttlMs) {
      // Its keepalives went unconfirmed (a stuck stream, a paused member): a lock put on it now
      // might outlive it on the server. New locks of the class take a fresh lease; this one
      // keeps its keepalives while locks still ride on it.
      this.#retired.add(lease);
      lease = undefined;
    }
    if (lease === undefined) {
      lease = { ttlS, id: undefined, sureUntilMs: 0, users: 0, idleSinceMs: performance.now(), granting: undefined };
      this.#classes.set(ttlS, lease);
    }
    if (lease.id !== undefined) return lease;
    const l = lease;
    l.granting ??= this.#grant(l).finally(() => (l.granting = undefined));
    return l.granting.then(() => l);
  }

  /** The class lease `id` belongs to, if it is one of this host's. */
  byId(id: string): ClassLease | undefined {
    for (const lease of this.#classes.values()) if (lease.id === id) return lease;
    for (const lease of this.#retired) if (lease.id === id) return lease;
    return undefined;
  }

  use(lease: ClassLease): void {
    lease.users++;
  }

  unuse(lease: ClassLease): void {
    if (--lease.users === 0) lease.idleSinceMs = performance.now();
  }

  /** Forgets a lease etcd said it does not know (a put on it failed): the next use grants a new one. */
  forget(lease: ClassLease, id: string): void {
    if (lease.id === id) lease.id = undefined;
  }

  /** Revokes every lease (the host is closing: whatever it still holds is freed at once). */
  async close(): Promise<void> {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#stream?.cancel();
    await Promise.allSettled([...this.#classes.values(), ...this.#retired].flatMap((l) => (l.id === undefined ? [] : [this.#client.leaseRevoke(l.id)])));
  }

  async #grant(lease: ClassLease): Promise<void> {
    const sentMs = Date.now();
    const granted = await this.#client.leaseGrant(lease.ttlS);
    if (granted.ttlS > lease.ttlS && granted.ttlS > this.#minTtlS) {
      // etcd raised it to its minimum: classes below it are that class.
      this.#minTtlS = granted.ttlS;
      this.#log.debug({ minTtlS: granted.ttlS }, "etcd: the server's smallest lease TTL");
    }
    if (granted.ttlS < lease.ttlS) {
      void this.#client.leaseRevoke(granted.id).catch(() => undefined);
      throw new LockhostError("BACKEND_UNAVAILABLE", `${this.#client.server} granted a lease of ${granted.ttlS} s instead of ${lease.ttlS} s`);
    }
    lease.id = granted.id;
    lease.sureUntilMs = sentMs + lease.ttlS * 1000;
  }

  /** Sends a keepalive for every lease in use (and revokes leases idle too long). */
  #tick(): void {
    if (this.#closed) return;
    const now = performance.now();
    for (const [ttlS, lease] of this.#classes) {
      if (lease.id === undefined) continue;
      if (lease.users === 0 && now - lease.idleSinceMs > IDLE_KEEP_MS) {
        this.#classes.delete(ttlS);
        void this.#client.leaseRevoke(lease.id).catch(() => undefined);
        continue;
      }
      this.#keepAlive(lease.id);
    }
    for (const lease of this.#retired) {
      if (lease.users > 0 && lease.id !== undefined) this.#keepAlive(lease.id);
      else {
        this.#retired.delete(lease);
        if (lease.id !== undefined) void this.#client.leaseRevoke(lease.id).catch(() => undefined);
      }
    }
    this.#checkStalled();
  }

  #keepAlive(id: string): void {
    const stream = this.#openStream();
    if (stream === undefined) return;
    const sent = this.#inFlight.get(id);
    if (sent === undefined) this.#inFlight.set(id, [Date.now()]);
    else sent.push(Date.now());
    stream.write({ ID: id });
  }

  /** A stream whose oldest keepalive waited past the command timeout is stuck (a paused member): start over on the next. */
  #checkStalled(): void {
    const now = Date.now();
    for (const times of this.#inFlight.values()) {
      if (times.length > 0 && now - times[0]! > this.#commandTimeoutMs) {
        this.#log.debug("etcd: keepalives unanswered; reopening the keepalive stream on the next endpoint");
        this.#restart(true);
        return;
      }
    }
  }

  #openStream(): EtcdStream | undefined {
    if (this.#stream !== undefined) return this.#stream;
    if (this.#opening) return undefined;
    this.#opening = true;
    this.#client.stream("Lease").then(
      (stream) => {
        this.#opening = false;
        if (this.#closed) return stream.cancel();
        this.#stream = stream;
        stream.on("data", (res: LeaseKeepAliveResponse) => this.#answered(res));
        stream.on("error", () => this.#restart(true));
        stream.on("end", () => this.#restart(false));
      },
      (err: unknown) => {
        this.#opening = false;
        this.#log.debug({ err: (err as Error).message }, "etcd: keepalive stream not opened");
      },
    );
    return undefined;
  }

  #restart(failover: boolean): void {
    const stream = this.#stream;
    this.#stream = undefined;
    this.#inFlight.clear();
    if (stream !== undefined) {
      stream.removeAllListeners();
      stream.on("error", () => undefined);
      stream.cancel();
    }
    if (failover && !this.#closed) this.#client.failover();
  }

  #answered(res: LeaseKeepAliveResponse): void {
    const sentMs = this.#inFlight.get(res.ID)?.shift();
    const lease = this.byId(res.ID);
    if (lease === undefined) return;
    if (Number(res.TTL) <= 0) {
      // etcd let it expire (this host stalled or was cut off past it): its keys are deleted.
      lease.id = undefined;
      this.#log.warn({ ttlS: lease.ttlS }, "etcd: a lease of this host expired; its locks are lost");
      this.#onExpired(res.ID);
      return;
    }
    if (sentMs !== undefined) lease.sureUntilMs = Math.max(lease.sureUntilMs, sentMs + lease.ttlS * 1000);
  }
}
