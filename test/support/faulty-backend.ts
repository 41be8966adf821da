// A real MemoryBackend with faults injected in front of it: slow acquisitions, failing
// releases. For the callers' race and error paths; the real-server fault tests belong to the
// Redis and PostgreSQL backends.
import { LockhostError } from "../../kit/errors.js";
import type { AcquireRequest, AcquireResult, KindSteps, LockBackend, ReleaseResult, RenewRequest, RenewResult } from "../../kit/backend.js";
import type { LockKind } from "../../kit/kinds.js";
import { MemoryBackend } from "../../plugins/backends/memory/index.js";

/** Faults to inject; change them at any time. */
export interface Faults {
  /** Every acquire waits this long before reaching the store. */
  acquireDelayMs: number;
  /** The next N releases fail with BACKEND_UNAVAILABLE without reaching the store. */
  failReleases: number;
  /** The next N acquires reach the store, then fail with BACKEND_UNAVAILABLE (a lost reply). */
  loseAcquireReplies: number;
  /** The next N renewMany batches fail with BACKEND_UNAVAILABLE without reaching the store. */
  failRenewals: number;
  /**
   * When set, acquisitions report a lease of this many ms (expiresAtMs = acquiredAtMs +
   * grantMs) whatever the TTL: a backend granting less than asked.
   */
  grantMs: number | undefined;
}

/** The steps of one kind of `inner` behind `faults`. */
function faultySteps(inner: KindSteps, faults: Faults): KindSteps {
  const steps: KindSteps = {
    kind: inner.kind,
    async acquire(req: AcquireRequest): Promise<AcquireResult> {
      if (faults.acquireDelayMs > 0) await new Promise((r) => setTimeout(r, faults.acquireDelayMs));
      const result = await inner.acquire(req);
      if (faults.loseAcquireReplies > 0) {
        faults.loseAcquireReplies--;
        throw new LockhostError("BACKEND_UNAVAILABLE", "acquire timed out (injected fault: applied, reply lost)");
      }
      const { grantMs } = faults;
      return result.acquired && grantMs !== undefined ? { ...result, expiresAtMs: result.acquiredAtMs + grantMs } : result;
    },
    async renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
      if (faults.failRenewals > 0) {
        faults.failRenewals--;
        throw new LockhostError("BACKEND_UNAVAILABLE", "renewal batch failed (injected fault)");
      }
      return inner.renewMany(reqs);
    },
    async release(key: string, owner: string): Promise<ReleaseResult> {
      if (faults.failReleases > 0) {
        faults.failReleases--;
        throw new LockhostError("BACKEND_UNAVAILABLE", "release failed (injected fault)");
      }
      return inner.release(key, owner);
    },
    leaveQueue: (key, owner) => inner.leaveQueue(key, owner),
    watch: (key, listener) => inner.watch(key, listener),
    status: (key) => inner.status(key),
    forceRelease: (key) => inner.forceRelease(key),
    list: (req) => inner.list(req),
  };
  const proclaim = inner.proclaim?.bind(inner);
  return proclaim === undefined ? steps : { ...steps, proclaim };
}

/**
 * A MemoryBackend (`inner`) behind injectable faults, serving its kinds with the faults in front
 * of each kind's steps. Loss notices (onLost) are not forwarded: its holders learn of a loss at
 * their next renewal.
 */
export function faultyBackend(inner = new MemoryBackend()): { backend: LockBackend; inner: MemoryBackend; faults: Faults } {
  const faults: Faults = { acquireDelayMs: 0, failReleases: 0, loseAcquireReplies: 0, failRenewals: 0, grantMs: undefined };
  const made = new Map<LockKind, KindSteps>();
  const backend: LockBackend = {
    name: "faulty-memory",
    distributed: false,
    kinds: inner.kinds,
    steps(kind: LockKind): KindSteps {
      let steps = made.get(kind);
      if (steps === undefined) made.set(kind, (steps = faultySteps(inner.steps(kind), faults)));
      return steps;
    },
    ping: () => inner.ping(),
    close: () => inner.close(),
  };
  return { backend, inner, faults };
}
