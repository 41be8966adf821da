// Shutting a service down: no new acquisitions, the ones in flight finish (and give back what
// they got), every lease is released (a release the backend failed is tried again while the
// caller's time lasts), then the renewal manager and the backend close.
import { performance } from "node:perf_hooks";
import { setTimeout as sleep } from "node:timers/promises";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { release, releaseAll } from "./release.js";

/** The first pause before a failed release is tried again; it doubles up to the next. */
const FIRST_RETRY_PAUSE_MS = 100;
const MAX_RETRY_PAUSE_MS = 1000;

/**
 * Closes `core` once; later calls get the first call's promise (see LockService.close).
 * `releaseTimeoutMs` undefined: each lease is released once, as long as that takes; a number:
 * releases the backend failed are tried again until then, and what is not released by then
 * is given up.
 */
export function close(core: ServiceCore, closeBackend: boolean, releaseTimeoutMs?: number): Promise<LockhostError[]> {
  core.life.closePromise ??= closeOnce(core, closeBackend, releaseTimeoutMs);
  return core.life.closePromise;
}

/** Resolves to the errors of releases that failed (those locks end at their TTL). */
async function closeOnce(core: ServiceCore, closeBackend: boolean, releaseTimeoutMs: number | undefined): Promise<LockhostError[]> {
  const deadline = releaseTimeoutMs === undefined ? undefined : performance.now() + releaseTimeoutMs;
  core.life.closing = true;
  // Waiting acquisitions end with CLOSED (they are counted in `inFlight` while they try).
  core.waits.wakeAll();
  core.sentinel.stop();
  // An acquisition that completes now gives its lock back itself (see attempt in acquire.ts).
  await core.life.attemptsDrained();
  // Locks left by calls that failed before get one more try while the backend is still open.
  // The book closes first: from here on, a release that fails is retried by the loop below
  // (with a deadline) or named to the caller, never by the book's timer behind its back.
  await core.unsettled.close();
  const failed = deadline === undefined ? await releaseAll(core) : await releaseAllUntil(core, deadline);
  core.renewals.close();
  // Released above: the grants' wanted watches end with them.
  core.delegation?.clear();
  core.life.closed = true;
  if (closeBackend) await core.backend.close();
  return failed;
}

/**
 * Releases every lease `core` holds, trying one the backend failed to release again (with a
 * growing pause) until `deadline` (performance.now() ms). Resolves to the errors of the leases
 * not released, each naming its lock, kind and fence (details `lock`, `kind`, `fence`); a
 * retry still unanswered at the deadline is a TIMEOUT.
 */
async function releaseAllUntil(core: ServiceCore, deadline: number): Promise<LockhostError[]> {
  const outcomes = await Promise.all(core.held.values().map((lease) => releaseUntil(core, lease, deadline)));
  return outcomes.filter((e): e is LockhostError => e !== undefined);
}

async function releaseUntil(core: ServiceCore, lease: Lease, deadline: number): Promise<LockhostError | undefined> {
  for (let pauseMs = FIRST_RETRY_PAUSE_MS, first = true; ; pauseMs = Math.min(pauseMs * 2, MAX_RETRY_PAUSE_MS), first = false) {
    const attempt = release(core, lease).then(
      () => undefined,
      (err: unknown) => toLockhostError(err),
    );
    // The first attempt is awaited whatever time is left (the backend's command timeout bounds
    // it): a host given no time still gives its locks back when the backend answers.
    const outcome = first ? await attempt : await beforeDeadline(attempt, deadline);
    if (outcome === "late") {
      return named(lease, new LockhostError("TIMEOUT", `its release had no answer within the time the shutdown had left`));
    }
    if (outcome === undefined) return undefined;
    // Gone already (LOST) or not ours to release again: nothing to retry.
    if (!outcome.retryable || lease.state !== "held") return named(lease, outcome);
    if (performance.now() + pauseMs >= deadline) return named(lease, outcome);
    await sleep(pauseMs);
  }
}

/** What `attempt` resolves to, or "late" when the deadline comes first. */
async function beforeDeadline<T>(attempt: Promise<T>, deadline: number): Promise<T | "late"> {
  const left = deadline - performance.now();
  if (left <= 0) return "late";
  const timer = new AbortController();
  try {
    return await Promise.race([attempt, sleep(left, "late" as const, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}

/** `err` with the lease's lock, kind and fence in its details, and in its message when it does not name the lock yet. */
function named(lease: Lease, err: LockhostError): LockhostError {
  const message = err.message.includes(lease.name) ? err.message : `lock ${lease.name} (${lease.kind}, fence ${lease.fence}): ${err.message}`;
  return new LockhostError(err.code, message, { cause: err, details: { ...err.details, lock: lease.name, kind: lease.kind, fence: lease.fence } });
}
