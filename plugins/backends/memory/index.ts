// The in-process backend: a Map in this process. It is the embedded default for development
// and single-node use. It is NOT distributed: two host processes never see each other's
// locks (two hosts in one process can share one instance, which the tests use). This file
// wires the parts: the mutex's steps (mutex.ts, served through MutexSteps for the mutex and the
// leader kind) and the queue kinds' (queue.ts), on one clock and one set of fence counters.
// It is the package entry (`lockhost/memory`).
import { LOCK_KINDS, StepsByKind } from "../../../kit/index.js";
import type {
  KindSteps,
  LockKind,
  MutexAcquireRequest,
  MutexAcquireResult,
  ListRequest,
  LockBackend,
  LockPage,
  LockRecord,
  MutexStore,
  ReleaseResult,
  ReleaseWatch,
  RenewRequest,
  RenewResult,
} from "../../../kit/index.js";
import type { MemoryBackendOptions } from "./config.js";
import { MemoryMutex } from "./mutex.js";
import { MemoryQueueSteps } from "./queue.js";

export type { MemoryBackendOptions } from "./config.js";

/** Whole ms since the epoch, never going back: performance.now() is monotonic, and so is its floor. */
const monotonicEpochMs = (): number => Math.floor(performance.timeOrigin + performance.now());

/**
 * In-process lock store. It implements LockBackend (see kit/steps.ts for each step's
 * contract); the mutex's steps are also callable on it (the MutexStore methods below, which are
 * mutex.ts's), as tests and benchmarks do. Every time it reports is an integer number of ms on
 * its clock.
 */
export class MemoryBackend implements LockBackend, MutexStore {
  /** Always "memory". */
  readonly name = "memory";
  /** Always false: only this process (and hosts sharing this instance) sees its locks. */
  readonly distributed = false;
  /** Every kind. */
  readonly kinds = LOCK_KINDS;
  readonly #lostListeners: ((owner: string) => void)[] = [];
  /** The mutex's steps (mutex.ts), whose fence counters the queue kinds share. */
  readonly #mutex: MemoryMutex;
  /**
   * Each kind's steps, made on first use: the single-record kinds from the mutex's (mutex.ts,
   * called through this class's methods below, so a caller that wraps one of them on the backend
   * wraps it for the steps too), the queue kinds in MemoryQueueSteps.
   */
  readonly #steps: StepsByKind<MemoryQueueSteps>;

  constructor(options: MemoryBackendOptions = {}) {
    const now = options.now ?? monotonicEpochMs;
    const lost = (owner: string): void => this.#lost(owner);
    const mutex = new MemoryMutex({ now, lost });
    this.#mutex = mutex;
    this.#steps = new StepsByKind(this, (kind) => new MemoryQueueSteps(kind, { now, nextFence: (name) => mutex.nextFence(name), lost }));
  }

  /** Entries in the mutex's map, including expired ones not swept yet (for tests and metrics). */
  get size(): number {
    return this.#mutex.size;
  }

  /** The steps of `kind` in this instance (LockBackend.steps). */
  steps(kind: LockKind): KindSteps {
    return this.#steps.get(kind);
  }

  /** Tells `listener` of every release and force-release, by owner token (LockBackend.onLost). */
  onLost(listener: (owner: string) => void): void {
    this.#lostListeners.push(listener);
  }

  #lost(owner: string): void {
    for (const listener of this.#lostListeners) queueMicrotask(() => listener(owner));
  }

  /** Always answers: the store is this process. */
  async ping(): Promise<void> {}

  /** Drops every lock (fence counters stay, so a reused instance keeps fences increasing). */
  async close(): Promise<void> {
    this.#mutex.clear();
    for (const steps of this.#steps.queues) steps.clear();
  }

  // The mutex's steps (mutex.ts MemoryMutex, where each is documented), on the backend itself:
  // MutexSteps calls them here, as do tests and benchmarks.

  acquire(req: MutexAcquireRequest): Promise<MutexAcquireResult> {
    return this.#mutex.acquire(req);
  }

  renew(name: string, owner: string, ttlMs: number): Promise<RenewResult> {
    return this.#mutex.renew(name, owner, ttlMs);
  }

  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    return this.#mutex.renewMany(reqs);
  }

  release(name: string, owner: string): Promise<ReleaseResult> {
    return this.#mutex.release(name, owner);
  }

  proclaim(name: string, owner: string, value: string): Promise<boolean> {
    return this.#mutex.proclaim(name, owner, value);
  }

  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#mutex.watch(name, listener);
  }

  status(name: string): Promise<LockRecord | null> {
    return this.#mutex.status(name);
  }

  list(req: ListRequest): Promise<LockPage> {
    return this.#mutex.list(req);
  }

  forceRelease(name: string): Promise<boolean> {
    return this.#mutex.forceRelease(name);
  }
}
