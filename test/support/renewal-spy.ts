// A mutex-only backend over a memory backend (on the caller's clock) whose renewal batches are
// seen by `onRenew`: the renewal tests count batches or renewed owners through it.
import type { KindSteps, LockBackend, RenewRequest, RenewResult } from "../../kit/backend.js";
import { MemoryBackend } from "../../plugins/backends/memory/index.js";

/** The memory backend's mutexes on `now`, with every renewMany batch passed to `onRenew` first. */
export function renewalSpy(now: () => number, onRenew: (reqs: readonly RenewRequest[]) => void): LockBackend {
  const inner = new MemoryBackend({ now });
  const mutex = inner.steps("mutex");
  const steps: KindSteps = {
    kind: mutex.kind,
    acquire: (req) => mutex.acquire(req),
    renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
      onRenew(reqs);
      return mutex.renewMany(reqs);
    },
    release: (key, owner) => mutex.release(key, owner),
    leaveQueue: (key, owner) => mutex.leaveQueue(key, owner),
    status: (key) => mutex.status(key),
    forceRelease: (key) => mutex.forceRelease(key),
    list: (req) => mutex.list(req),
    watch: (key, listener) => mutex.watch(key, listener),
  };
  return {
    name: inner.name,
    distributed: inner.distributed,
    kinds: ["mutex"],
    steps: () => steps,
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
}
