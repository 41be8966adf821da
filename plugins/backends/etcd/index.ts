// lockhost/etcd: locks in an etcd v3 cluster. Every kind of the lock model: the mutex and the
// leader kind as one key per lock (mutex.ts, served through kit's MutexSteps), the queue kinds
// as a directory of holder and queue-place keys (queue.ts). Fences are etcd revisions; waiters
// wake on one watch over the prefix (watcher.ts); locks ride on this host's leases, one per TTL
// class (leases.ts), and end at their own TTL by this host's timer (held.ts).
import type { Logger } from "pino";
import { LOCK_KINDS, markPermanent, StepsByKind, TLS_REFUSED_PATTERN } from "../../../kit/index.js";
import type { KindSteps, LockBackend, LockKind } from "../../../kit/index.js";
import { EtcdClient } from "./client.js";
import type { EtcdConfig } from "./config.js";
import type { EtcdContext } from "./context.js";
import { HeldBook } from "./held.js";
import { Leases } from "./leases.js";
import { EtcdMutexStore } from "./mutex.js";
import { EtcdQueueSteps } from "./queue.js";
import { PrefixWatcher } from "./watcher.js";

export { etcdConfigSchema, etcdDefaults, type EtcdConfig } from "./config.js";

export class EtcdBackend implements LockBackend {
  /** Always "etcd". */
  readonly kind = "etcd";
  readonly distributed = true;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  /** A dead holder's lock lasts until its lease ends (or its TTL, by its host's timer, while the host lives). */
  readonly endsOnlyAtExpiry = true;
  readonly #client: EtcdClient;
  readonly #leases: Leases;
  readonly #book: HeldBook;
  readonly #watcher: PrefixWatcher;
  readonly #steps: StepsByKind;
  readonly #lostListeners: ((owner: string) => void)[] = [];
  readonly #missedListeners: (() => void)[] = [];
  #closed = false;

  private constructor(client: EtcdClient, config: EtcdConfig, log: Logger) {
    this.#client = client;
    this.#leases = new Leases(client, log, config.leaseMarginMs, config.commandTimeoutMs, (id) => this.#book.leaseExpired(id));
    this.#book = new HeldBook(client, this.#leases, log, (owner) => this.#lost(owner));
    this.#watcher = new PrefixWatcher(client, log, config.keyPrefix, {
      deleted: (owner, key) => this.#book.deleted(owner, key),
      missed: () => {
        for (const listener of this.#missedListeners) listener();
      },
    });
    const context: EtcdContext = { client, leases: this.#leases, book: this.#book, watcher: this.#watcher, prefix: config.keyPrefix };
    this.#steps = new StepsByKind(new EtcdMutexStore(context), (kind) => new EtcdQueueSteps(kind, context));
  }

  /** Connects lazily: the backend exists at once, and calls fail with BACKEND_UNAVAILABLE until a member answers. */
  static async open(config: EtcdConfig, log: Logger): Promise<EtcdBackend> {
    return new EtcdBackend(await EtcdClient.open(config, log), config, log);
  }

  steps(kind: LockKind): KindSteps {
    return this.#steps.get(kind);
  }

  onLost(listener: (owner: string) => void, missed?: () => void): void {
    this.#lostListeners.push(listener);
    if (missed !== undefined) this.#missedListeners.push(missed);
  }

  /** A status request (LockBackend.ping); a refused TLS handshake is permanent (errors.ts says so for refused credentials). */
  async ping(): Promise<void> {
    try {
      await this.#client.status();
    } catch (err) {
      throw markPermanent(err, TLS_REFUSED_PATTERN);
    }
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
