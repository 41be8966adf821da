// Whether another live host runs under this host's node name. Two hosts with one name record
// the same holder on their locks, so status, logs and metrics cannot tell them apart, and with
// reclaim_own_locks (Redis) each takes the other's locks; nothing else would say so. Each host
// holds the mutex `lockhost:node:<name>` while it runs, kept alive. A host that finds it held
// by another (or loses it to another: a reclaim) does not fight for it: it looks again once a
// hold left by a run that ended without releasing it would have lapsed, and warns, naming the
// node, if it is still held (a live host renews its hold). A hold of its own that outlived an
// outage (its renewals failed, so this host counts it lost, but the backend kept the key: etcd
// keeps a live host's lease, Redis a key that has not expired yet) is known by its owner token:
// released and taken again, never taken for a twin. One try and one or two status reads
// per start, one renewal per half TTL, all through the public LockService API; a mutex, so a
// pg backend needs none of the read/write lock tables for it.
import type { Logger } from "pino";
import { toLockhostError } from "../kit/errors.js";
import type { Lease } from "./locking/lease.js";
import type { LockService } from "./locking/service.js";

/** The presence hold's lease: short, so a hold left by a run that ended fades soon. */
export const PRESENCE_TTL_MS = 10_000;
/** How long past a held presence's expiry it is looked at again, for clocks and round trips. */
const RECHECK_MARGIN_MS = 500;
/** The scope of the host's own locks, as the scheduler's. */
const SCOPE = { plugin: "lockhost" } as const;

/** The key of the presence lock of `node` (full name `lockhost:node:<node>`). */
export const presenceKey = (node: string): string => `node:${node}`;

/** This host's presence under its node name, on a distributed backend. */
export class NodePresence {
  readonly #locks: LockService;
  readonly #log: Logger;
  readonly #ttlMs: number;
  #lease: Lease | undefined;
  /** The owner tokens of this host's holds: a holder with one of them is this host, not a twin. */
  readonly #mine = new Set<string>();
  #claiming: Promise<void> | undefined;
  #recheck: NodeJS.Timeout | undefined;
  /** Set once another live holder was found: warned once, and no more claims (it would only fight over the lock). */
  #warned = false;
  #stopped = false;

  /** @param ttlMs the hold's lease (PRESENCE_TTL_MS; tests shorten it). */
  constructor(locks: LockService, log: Logger, ttlMs: number = PRESENCE_TTL_MS) {
    this.#locks = locks;
    this.#log = log;
    this.#ttlMs = ttlMs;
  }

  /**
   * Takes this host's hold unless it has one, and looks at who has it if another does. Never
   * rejects: an unavailable backend leaves it for the next claim (the host claims again when the
   * backend answers again).
   */
  claim(): Promise<void> {
    if (this.#stopped || this.#warned || this.#lease?.state === "held" || this.#recheck !== undefined) return Promise.resolve();
    this.#claiming ??= this.#claim().finally(() => (this.#claiming = undefined));
    return this.#claiming;
  }

  /** Stops looking; the hold itself is released with every other lock when the service closes. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#recheck);
  }

  /** Tries for the hold; held by another, looks at it (first: a holder is given time to lapse). */
  async #claim(first = true): Promise<void> {
    try {
      const lease = await this.#locks.try(presenceKey(this.#locks.node), { ttlMs: this.#ttlMs, scope: SCOPE, plugin: SCOPE.plugin, keepalive: true });
      if (lease) {
        this.#lease = lease;
        this.#mine.add(lease.owner);
        // Lost to another holder (a reclaim by a host of this name), or lapsed in an outage.
        lease.onLost(() => void this.#look(true));
        return;
      }
      // Not claimed again from there: a lock that flaps between holders is not fought over.
      await this.#look(first, false);
    } catch (err) {
      this.#notChecked(err);
    }
  }

  /**
   * Looks at the presence lock's holder: gone, it is claimed (when `mayClaim`); held by another,
   * looked at again once its hold would have lapsed (when `first`), else warned about.
   */
  async #look(first: boolean, mayClaim = true): Promise<void> {
    this.#recheck = undefined;
    if (this.#stopped || this.#warned) return;
    try {
      const key = presenceKey(this.#locks.node);
      const { holders } = await this.#locks.status(key, { scope: SCOPE, elsewhere: false, owners: true });
      const holder = holders[0];
      if (holder === undefined) return mayClaim ? await this.#claim(false) : undefined;
      if (this.#lease?.state === "held" && holder.fence === this.#lease.fence) return;
      if (holder.owner !== undefined && this.#mine.has(holder.owner)) {
        // This host's own hold, which it counted lost in an outage while the backend kept it:
        // let it go and take the name again (a release by owner deletes only that hold).
        await this.#locks.tryRelease(key, holder.owner, { scope: SCOPE });
        this.#mine.delete(holder.owner);
        return await this.#claim(false);
      }
      if (first) {
        this.#recheck = setTimeout(() => void this.#look(false), holder.ttlRemainingMs + RECHECK_MARGIN_MS);
        this.#recheck.unref();
        return;
      }
      this.#warned = true;
      const node = this.#locks.node;
      this.#log.warn(
        { node, ...(holder.hostname !== undefined && { otherHostname: holder.hostname }), fence: holder.fence },
        `another live host uses the node name "${node}" (it holds lockhost:${presenceKey(node)}): both record the same holder on their locks, so ` +
          `status, logs and metrics cannot tell them apart (and with reclaim_own_locks each takes the other's locks); give each host its own [host] ` +
          `node`,
      );
    } catch (err) {
      this.#notChecked(err);
    }
  }

  #notChecked(err: unknown): void {
    const e = toLockhostError(err);
    // An outage is said by the host's health; the next claim, once it answers, looks again.
    this.#log.debug({ node: this.#locks.node, code: e.code, err: e.message }, "node presence: not checked now");
  }
}
