// Taking a lock: one atomic attempt that mints the owner token and the Lease, and the waiting
// acquisition built on it. Waiters of one host on one key queue in arrival order (WaitQueues)
// and only the head asks the backend; it sleeps until a release, the holder's lease end, or a
// jittered poll. For a kind whose row says handsOffLocally (the mutex), contention on this host
// costs no round trip: while the host holds or queues the key a try is contended and an
// acquire queues without asking the backend, and a release hands the key to the sleeping head
// (handoff.ts). Written once here, above every backend.
import { mintOwner } from "./owner-token.js";
import type { DelegatedRequest } from "./delegation.js";
import { LockhostError } from "../../kit/errors.js";
import type { Acquired } from "../../kit/common.js";
import type { AcquireRequest, AcquireResult } from "../../kit/steps.js";
import { kindName, waitKey } from "./kinds.js";
import { KINDS } from "../../kit/kinds.js";
import { backendError, closedError, kindOf, type ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import type { CheckedRequest, TryLockOptions } from "./request.js";
import { jittered, timerMs, Waiter } from "./waiting.js";
import { startAcquire, traceAcquire } from "../tracing/tracer.js";

/** Options of a waiting acquisition. */
export interface AcquireOptions extends TryLockOptions {
  /**
   * The longest wait for the key, in ms (0 to MAX_WAIT_MS, or Infinity to wait with no limit):
   * it is taken as soon as the holder releases it (or its lease ends); after `waitMs` the call
   * rejects with TIMEOUT. An unlimited wait ends only with the lock, the signal, or close().
   */
  readonly waitMs: number;
  /** Aborts the wait: the call then rejects with the signal's reason. */
  readonly signal?: AbortSignal;
}

/** A waiting writer's place in the backend's writer queue: how long it lasts past each attempt, and its owner. */
interface Queueing {
  readonly queueMs: number;
  readonly owner: string;
}

/** A contended attempt (the backend's result). */
type Contended = Extract<AcquireResult, { acquired: false }>;

/**
 * How long a waiting writer's place in the backend's writer queue lasts past each attempt: a
 * waiter tries again at least every poll interval, so a live waiter's place never lapses, and
 * a waiter that died frees the queue within this.
 */
function queueMsOf(core: ServiceCore): number {
  return 3 * core.config.pollIntervalMs + 1_000;
}

const contendedAsNull = (): null => null;
export const asIs = (r: Contended): Contended => r;

/** The contended outcome of a grant given back for having no time left (taken). */
export const NO_TIME_LEFT: Contended = Object.freeze({ acquired: false });

/**
 * A waiter whose attempt was given back for having no time left tries again only this long
 * (jittered) after: its own give-back's release notice would wake it at once, and a server
 * answering that late, or granting nothing, is struggling.
 */
export const NO_TIME_LEFT_BACKOFF_MS = 50;

/** One attempt at a checked request: a Lease, or null when someone else holds the key. */
export function tryChecked(core: ServiceCore, request: CheckedRequest): Promise<Lease | null> {
  // Not async: the lock path is measured in microseconds, and one more frame is one more microtask.
  if (core.life.closing) return Promise.reject(closedError());
  // With no tracing SDK this is a no-op span: nothing more is done for it.
  const span = startAcquire(request, 0);
  if (span.isRecording()) return traceAcquire(span, contendedHere(core, request) ? Promise.resolve(null) : attempt(core, request, contendedAsNull));
  if (contendedHere(core, request)) return Promise.resolve(null);
  return attempt(core, request, contendedAsNull);
}

/**
 * Whether this host holds or queues the request's key (a kind that hands off locally): then
 * the attempt is contended without a round trip (counted as a contended attempt).
 */
function contendedHere(core: ServiceCore, request: CheckedRequest): boolean {
  const { kind } = request.spec;
  if (!KINDS[kind].handsOffLocally || !core.waits.heldHere(waitKey(kind, request.name))) return false;
  countContended(core, request);
  return true;
}

/** Counts an attempt that found the key held (and tells the listeners that asked for "contended" events). */
export function countContended(core: ServiceCore, request: CheckedRequest): void {
  core.counts.contended++;
  if (core.events.wants("contended"))
    core.events.emit({ type: "contended", ...kindOf(request.spec), name: request.name, plugin: request.plugin, atMs: Date.now() });
}

/** Takes a checked request's key, waiting up to `waitMs` (validated) for it (see LockService.acquire). */
export function acquireChecked(core: ServiceCore, request: CheckedRequest, waitMs: number, signal?: AbortSignal): Promise<Lease> {
  const span = startAcquire(request, waitMs);
  return span.isRecording() ? traceAcquire(span, acquireWaiting(core, request, waitMs, signal)) : acquireWaiting(core, request, waitMs, signal);
}

async function acquireWaiting(core: ServiceCore, request: CheckedRequest, waitMs: number, signal?: AbortSignal): Promise<Lease> {
  if (core.life.closing) throw closedError();
  signal?.throwIfAborted();
  const started = performance.now();
  // A waiting writer queues from its first attempt, so readers arriving after it stand behind it,
  // and keeps one owner for all its attempts: its place in the queue is that owner's.
  const writer = waitMs > 0 && KINDS[request.spec.kind].queuesExclusive && request.mode === "exclusive";
  const queue: Queueing | undefined = writer ? { queueMs: queueMsOf(core), owner: request.owner ?? mintOwner() } : undefined;
  // Held or queued here: straight into this host's line, where a release hands the key over.
  const first = contendedHere(core, request) ? undefined : await attempt(core, request, asIs, queue?.queueMs, queue?.owner, waitMs > 0);
  if (first instanceof Lease) return first;
  if (waitMs === 0) throw timeoutError(request, 0, waitMs);
  return wait(core, request, first, started, waitMs, signal, queue);
}

/**
 * One atomic attempt: a Lease, or what `contended` makes of the contended result (with the
 * backend's retry hint). Mapped here rather than by a `.then` after: one promise less. The
 * backend is awaited in place (no closure, no `.catch` promise per call) and the attempt is
 * counted in flight for close() by a number, not by tracking its promise. What happens before
 * and after the await lives in plain functions: an async function keeps every local of its own
 * in an object made per call, so the fewer it has, the less each attempt allocates.
 */
async function attempt<C>(
  core: ServiceCore,
  request: CheckedRequest,
  contended: (result: Contended) => C,
  queueMs = 0,
  minted?: string,
  waiting = false,
): Promise<Lease | C> {
  const req = acquireRequest(core, request, queueMs, minted, waiting);
  const steps = core.steps(request.spec.kind);
  core.life.attemptStarted();
  try {
    // The host's deadline counts from before the request left, so it never outlives the server's.
    const sentAt = performance.now();
    let result: AcquireResult;
    try {
      result = await steps.acquire(req);
    } catch (err) {
      throw failed(core, request, req, err);
    }
    if (core.life.closing) {
      // close() began while the backend worked: nobody may get a lease now (close() waits for this).
      if (result.acquired) await core.giveBack(req.name, req.owner, request.spec.kind, true);
      throw closedError();
    }
    return taken(core, request, result, req, sentAt, contended, minted !== undefined);
  } finally {
    core.life.attemptDone();
  }
}

/**
 * The backend's request for one attempt, with its owner: the caller's, the waiter's (`minted`), or a
 * fresh one. `waiting`: made for a waiting acquisition (a delegated one then marks the key wanted).
 */
export function acquireRequest(core: ServiceCore, request: CheckedRequest, queueMs: number, minted: string | undefined, waiting = false): AcquireRequest {
  const { name } = request;
  const owner = request.owner ?? minted ?? mintOwner();
  if (request.owner !== undefined) checkOwnerFree(core, name, owner);
  // Only a waiting writer passes a queueMs (acquireChecked).
  const req: DelegatedRequest = {
    name,
    owner,
    ttlMs: request.ttlMs,
    holder: core.holderOf(request.plugin),
    mode: request.mode,
    limit: request.limit,
    queueMs,
    delegate: request.delegate,
    waiting,
  };
  return req;
}

/**
 * The error of an attempt the backend failed. The attempt's owner is never used again, even a
 * waiting writer's: the error ends its wait (acquireChecked and wait() do not catch it).
 */
export function failed(core: ServiceCore, request: CheckedRequest, req: AcquireRequest, err: unknown): LockhostError {
  // A timed-out or cut-off acquire may still have been applied on the server, or be applied
  // later (a paused server runs it when it resumes): it is given back by owner now and, until
  // the backend answers, again (unsettled.ts). A minted owner is ours alone, so giving it back
  // can delete nothing else; a caller's owner may name a lock someone holds already, so that
  // one is left to its TTL (or the caller's release).
  if (request.owner === undefined) void core.giveBack(req.name, req.owner, request.spec.kind);
  return backendError(err);
}

/**
 * Releases a waiting writer's owner once, without booking it (unsettled.ts): its next attempt
 * reuses the owner, and a later round of the book, finding no lease of it held here while that
 * attempt is in flight, would release the lock the attempt takes.
 */
function releaseOnce(core: ServiceCore, request: CheckedRequest, req: AcquireRequest): void {
  void core.backendCall(() => core.steps(request.spec.kind).release(req.name, req.owner)).catch(() => undefined);
}

/**
 * What an answer makes (an attempt's, or a handoff's for the waiter it was made for): a held
 * Lease, or the contended outcome. A grant with no time left as this host counts it (an answer
 * after the lease's end: a server paused past the TTL with the request queued; or a grant of
 * nothing) must not make anyone a holder: it is given back and counts as contended (NO_TIME_LEFT).
 * `reused`: the owner is a waiting writer's, which its next attempt uses again: released once
 * (releaseOnce), not booked.
 */
export function taken<C>(
  core: ServiceCore,
  request: CheckedRequest,
  result: AcquireResult,
  req: AcquireRequest,
  sentAt: number,
  contended: (result: Contended) => C,
  reused = false,
): Lease | C {
  const { spec } = request;
  if (!result.acquired) {
    if ("limit" in result && result.limit !== undefined && KINDS[spec.kind].limit !== null) throw permitsMismatch(request, request.limit, result.limit);
    countContended(core, request);
    return contended(result);
  }
  const deadline = sentAt + lifeOf(result, request.ttlMs);
  if (performance.now() >= deadline) {
    if (reused) releaseOnce(core, request, req);
    else void core.giveBack(req.name, req.owner, spec.kind, true);
    countContended(core, request);
    return contended(NO_TIME_LEFT);
  }
  return leaseOf(core, request, result, req, deadline);
}

/**
 * How long a granted lease lasts from its request's send time: its TTL, or what the backend
 * granted when that is less (`expiresAtMs - acquiredAtMs`, both by the server's clock: a
 * lease the server ends sooner than asked, as etcd's may when its lease is not sure to last,
 * must end sooner here too, or its holder would work on past the server's end).
 */
function lifeOf(result: Acquired, ttlMs: number): number {
  const granted = result.expiresAtMs - result.acquiredAtMs;
  return granted < ttlMs ? granted : ttlMs;
}

/** The Lease of a granted acquisition, ending here at `deadline` (performance.now()), taken into the service's books. */
function leaseOf(core: ServiceCore, request: CheckedRequest, result: Acquired, req: AcquireRequest, deadline: number): Lease {
  const { name, ttlMs, keepalive, spec } = request;
  const { fence, acquiredAtMs, expiresAtMs } = result;
  const lease = new Lease({
    name,
    owner: req.owner,
    fence,
    ttlMs,
    holder: req.holder,
    acquiredAtMs,
    expiresAtMs,
    deadline,
    keepalive,
    hooks: core.hooks,
    kind: spec.kind,
    mode: req.mode,
  });
  core.hold(lease, request.owner === undefined);
  return lease;
}

/**
 * A caller's owner names one lease of this service: the books (held, restore, release notices)
 * find leases by owner. The same key is left to the backend, which answers contended.
 */
function checkOwnerFree(core: ServiceCore, name: string, owner: string): void {
  const other = core.held.get(owner);
  if (other !== undefined && other.name !== name) {
    throw new LockhostError("INVALID_ARGUMENT", `owner ${JSON.stringify(owner)} already holds lock ${other.name} here; an owner names one live lock at a time`);
  }
}

/** The waiting part of acquireChecked, after a first attempt found the key held (or none was made: held or queued here). */
async function wait(
  core: ServiceCore,
  request: CheckedRequest,
  first: Contended | undefined,
  started: number,
  waitMs: number,
  signal: AbortSignal | undefined,
  queue: Queueing | undefined,
): Promise<Lease> {
  const { name, spec } = request;
  const queueKey = waitKey(spec.kind, name);
  const steps = core.steps(spec.kind);
  const deadline = started + waitMs;
  // A queuing waiter asks the backend on its own: its place there, not this host's line, orders it.
  const handsOff = KINDS[spec.kind].handsOffLocally;
  // Only a waiter of such a kind can be handed the key: it carries its request for that.
  const waiter = new Waiter(queue !== undefined, handsOff ? request : undefined, deadline);
  const onAbort = (): void => waiter.wake("release");
  signal?.addEventListener("abort", onAbort, { once: true });
  let taken: Lease | undefined;
  try {
    // The subscription is bounded by the wait and its signal: polling covers a late one.
    await untilSettled(
      core.waits.join(queueKey, waiter, (listener) => steps.watch(name, listener)),
      deadline - performance.now(),
      signal,
    );
    let hint = first?.retryAfterMs;
    // Subscribed now: one more try, or a release just before the subscription would be missed.
    let shouldTry = true;
    // No try before this (performance.now()), whatever wakes it: see NO_TIME_LEFT_BACKOFF_MS.
    let notBefore = first === NO_TIME_LEFT ? performance.now() + jittered(NO_TIME_LEFT_BACKOFF_MS) : 0;
    for (;;) {
      signal?.throwIfAborted();
      if (core.life.closing) throw closedError();
      const head = core.waits.isHead(queueKey, waiter);
      // A lease of this host's line holds the key: it will be handed over, or released here.
      const local = head && shouldTry && handsOff ? core.waits.localHolder(queueKey) : undefined;
      if (local !== undefined) {
        hint = local.deadline - performance.now();
      } else if (head && shouldTry && performance.now() >= notBefore) {
        const result = await attempt(core, request, asIs, queue?.queueMs, queue?.owner, true);
        if (result instanceof Lease) {
          taken = result;
          return result;
        }
        hint = result.retryAfterMs;
        if (result === NO_TIME_LEFT) notBefore = performance.now() + jittered(NO_TIME_LEFT_BACKOFF_MS);
      }
      const left = deadline - performance.now();
      if (left <= 0) {
        core.counts.waitTimeouts++;
        throw timeoutError(request, performance.now() - started, waitMs);
      }
      // The head sleeps until a release, the holder's lease end, or the next poll; the others until promoted.
      const poll = jittered(core.config.pollIntervalMs);
      const backoff = notBefore - performance.now();
      const nap = head ? Math.min(left, backoff > 0 ? backoff : hint === undefined ? poll : Math.min(poll, hint + 1)) : left;
      const why = await waiter.sleep(nap);
      if (why === "handed") {
        // A release handed it the key (handoff.ts): the lease is in the books already.
        taken = waiter.takeHanded();
        return taken;
      }
      if (why === "release" && performance.now() < notBefore) {
        shouldTry = false;
        continue;
      }
      shouldTry = why !== "promoted";
      // The lease-end hint is used once: after that, polling or a release decides.
      if (why === "timer") hint = undefined;
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    core.waits.leave(queueKey, waiter, taken, handsOff);
    const acquired = taken !== undefined;
    // A writer that gives up leaves the backend's queue now, so readers need not wait for its place to lapse.
    if (!acquired && queue) void steps.leaveQueue(name, queue.owner).catch(() => undefined);
    core.counts.waitsDone++;
    const waitedMs = performance.now() - started;
    core.counts.waitTimeMs += waitedMs;
    if (core.events.wants("waited")) {
      const outcome = acquired ? "acquired" : performance.now() >= deadline ? "timeout" : "failed";
      core.events.emit({ type: "waited", ...kindOf(spec), name, plugin: request.plugin, waitedMs: Math.round(waitedMs), outcome, atMs: Date.now() });
    }
  }
}

/**
 * A wait that ran out. Its details name the lock three ways (key as given, scope, full name)
 * so a caller that waits on many keys can tell which one timed out without parsing the message.
 */
function timeoutError(request: CheckedRequest, waitedMs: number, waitMs: number): LockhostError {
  const waited = Math.round(waitedMs);
  const { name, key, scope } = request;
  return new LockhostError("TIMEOUT", `lock ${kindName(request.spec.kind, name)} is still held by someone else after waiting ${waited} ms (waitMs ${waitMs})`, {
    details: { waitedMs: waited, key, scope: scope === "global" ? "global" : scope.plugin, name },
  });
}

/** A semaphore taken with another number of permits than its live holders'. */
function permitsMismatch(request: CheckedRequest, permits: number, theirs: number): LockhostError {
  return new LockhostError(
    "PERMITS_MISMATCH",
    `semaphore ${request.name} is held with ${theirs} permits; this call names permits ${permits} (a key keeps its holders' number until the last one lets go)`,
    {
      details: { permits, heldWith: theirs, name: request.name },
    },
  );
}

/** Resolves when `promise` settles, `ms` pass, or `signal` aborts, whichever is first. */
function untilSettled(promise: Promise<unknown>, ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, timerMs(ms));
    signal?.addEventListener("abort", done, { once: true });
    promise.then(done, done);
  });
}
