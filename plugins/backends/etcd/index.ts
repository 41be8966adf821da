// lockhost/etcd: locks in an etcd v3 cluster. Every kind of the lock model: the mutex and the
// leader kind as one key per lock (mutex.ts, served through kit's MutexSteps), the queue kinds
// as a directory of holder and queue-place keys (queue.ts). Fences are etcd revisions (times the
// prefix's fence scale, fence-scale.ts; above 1 the mutex can be delegated, delegation.ts); waiters
// wake on one watch over the prefix (watch.ts); locks ride on this host's leases, one per TTL
// class (leases.ts), and end at their own TTL by this host's timer (held.ts).
import type { Logger } from "pino";
import { isPermanent, LOCK_KINDS, LockhostError, markPermanent, StepsByKind, TLS_REFUSED_PATTERN } from "../../../kit/index.js";
import type { DelegationSteps, KindSteps, LockBackend, LockKind } from "../../../kit/index.js";
import { EtcdClient } from "./client.js";
import type { EtcdConfig } from "./config.js";
import { EtcdDelegation } from "./delegation.js";
import { FenceScale } from "./fence-scale.js";
import { HeldLocks, type EtcdContext } from "./held.js";
import { Leases } from "./leases.js";
import { EtcdMutexStore } from "./mutex.js";
import { CMP, TARGET } from "./proto.js";
import { EtcdQueueSteps } from "./queue.js";
import { PrefixWatcher } from "./watch.js";

export { etcdConfigSchema, etcdDefaults, type EtcdConfig } from "./config.js";

/** The key under the prefix that ping's permission check names (never written). */
const GRANT_CHECK_KEY = "grant-check";

export class EtcdBackend implements LockBackend {
  /** Always "etcd". */
  readonly name = "etcd";
  readonly distributed = true;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  /** A dead holder's lock lasts until its lease ends (or its TTL, by its host's timer, while the host lives). */
  readonly endsOnlyAtExpiry = true;
  /** Lock delegation's steps: only with `fence_scale` above 1 (delegation.ts says why). */
  readonly delegation?: DelegationSteps;
  readonly #client: EtcdClient;
  readonly #leases: Leases;
  readonly #book: HeldLocks;
  readonly #watcher: PrefixWatcher;
  readonly #steps: StepsByKind;
  readonly #lostListeners: ((owner: string) => void)[] = [];
  readonly #missedListeners: (() => void)[] = [];
  #closed = false;
  readonly #prefix: string;
  readonly #scale: FenceScale;
  /** Set once the start-up check of the key permissions passed (ping). */
  #granted = false;

  /**
   * Connects lazily: the backend exists at once, and calls fail with BACKEND_UNAVAILABLE until a
   * member answers. Only the TLS files are read here (a file that cannot be read is a config error).
   */
  constructor(config: EtcdConfig, log: Logger) {
    const client = new EtcdClient(config, log);
    this.#client = client;
    this.#prefix = config.keyPrefix;
    this.#leases = new Leases(client, log, config.leaseMarginMs, config.commandTimeoutMs, (id) => this.#book.leaseExpired(id));
    this.#book = new HeldLocks(client, this.#leases, log, (owner) => this.#lost(owner));
    this.#watcher = new PrefixWatcher(client, log, config.keyPrefix, {
      deleted: (owner, key) => this.#book.deleted(owner, key),
      missed: () => {
        for (const listener of this.#missedListeners) listener();
      },
    });
    this.#scale = new FenceScale(client, config.keyPrefix, config.fenceScale ?? 1);
    const context: EtcdContext = { client, leases: this.#leases, book: this.#book, watcher: this.#watcher, prefix: config.keyPrefix, scale: this.#scale };
    const mutex = new EtcdMutexStore(context);
    this.#steps = new StepsByKind(mutex, (kind) => new EtcdQueueSteps(kind, context));
    if (this.#scale.value > 1) this.delegation = new EtcdDelegation(context, mutex);
  }

  steps(kind: LockKind): KindSteps {
    return this.#steps.get(kind);
  }

  onLost(listener: (owner: string) => void, missed?: () => void): void {
    this.#lostListeners.push(listener);
    if (missed !== undefined) this.#missedListeners.push(missed);
  }

  /**
   * A status request (LockBackend.ping). Until it once passed, also a transaction on a key under
   * the prefix that writes nothing (its compare never holds: the put is never applied, the read
   * runs) but asks for read and write permission there: a user without the prefix's grant fails
   * the host's start naming it, instead of its first lock call.
   */
  async ping(): Promise<void> {
    try {
      await this.#client.status();
    } catch (err) {
      // A refused TLS handshake is permanent (errors.ts says so for refused credentials).
      throw markPermanent(err, TLS_REFUSED_PATTERN);
    }
    if (this.#granted) return;
    const key = `${this.#prefix}${GRANT_CHECK_KEY}`;
    await this.#client
      .txn(
        {
          compare: [{ key, target: TARGET.VERSION, result: CMP.LESS, version: 0 }],
          success: [{ request_put: { key, value: "" } }],
          failure: [{ request_range: { key, count_only: true } }],
        },
        "the start-up check of its key permissions",
      )
      .catch((err: unknown) => {
        if (!isPermanent(err) || !/permission denied/.test((err as Error).message)) throw err;
        throw new LockhostError(
          "BACKEND_UNAVAILABLE",
          `${(err as Error).message.replace(/ \(the etcd user lacks.*$/, "")}: the etcd user lacks read/write permission on the key prefix ${this.#prefix} ` +
            `(etcdctl role grant-permission <role> --prefix=true readwrite ${this.#prefix}; docs/backends.md#least-privilege-grants)`,
          { details: { permanent: 1 } },
        );
      });
    this.#granted = true;
    await this.#scale.check();
  }

  /** Revokes this host's leases (whatever it still holds is freed at once) and closes the connections. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#watcher.close();
    this.#book.clear();
    await this.#leases.close();
    this.#client.close();
  }

  #lost(owner: string): void {
    for (const listener of this.#lostListeners) listener(owner);
  }
}
