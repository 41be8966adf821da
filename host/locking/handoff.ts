// Handing a key to this host's next waiter: a release of a kind whose row says handsOffLocally
// (the mutex) whose key has a sleeping head in this host's line (waiting.ts) releases and takes
// the key for that head in one backend step (KindSteps.handoff: on Redis one script, one round
// trip), so the key is never free in between and the head holds it without asking again. A
// backend without the step is served by its release, then the head's attempt: two round trips,
// and another host may take the key in between (the head then waits on). The head's lease is
// made here, into the books, and given to it (Waiter.deliver); the releasing caller's next
// attempt queues behind the line (acquire.ts), so nobody barges past the head. The fairness
// bound (MAX_LOCAL_HANDOFFS in a row) is WaitQueues.claimNext's.
import type { AcquireRequest, AcquireResult, HandoffResult, ReleaseResult } from "../../kit/backend.js";
import { KINDS } from "../../kit/kinds.js";
import { acquireRequest, asIs, failed, NO_TIME_LEFT, NO_TIME_LEFT_BACKOFF_MS, taken } from "./acquire.js";
import type { ServiceCore } from "./core.js";
import { waitKey } from "./kinds.js";
import { Lease } from "./lease.js";
import { releaseDone, releaseFailed, releaseRefused } from "./release-books.js";
import { jittered, timerMs, type Waiter } from "./waiting.js";

/**
 * Releases `lease` (out of the books already: `minted` as leaveBooks said) by handing its key to
 * this host's next waiter; undefined when it is not handed over (no sleeping head, another kind,
 * or the fairness bound): then the caller releases it as usual.
 */
export function handOver(core: ServiceCore, lease: Lease, minted: boolean): Promise<void> | undefined {
  if (!KINDS[lease.kind].handsOffLocally) return undefined;
  // A delegated key is handed on without the bound of local handoffs in a row: its grant's own rules (delegation.ts) say when it goes.
  const delegated = core.delegation?.delegates(lease.name, lease.owner) === true;
  const waiter = core.waits.claimNext(waitKey(lease.kind, lease.name), lease, delegated);
  if (waiter === undefined) return undefined;
  let req: AcquireRequest;
  try {
    req = acquireRequest(core, waiter.request!, 0, undefined, true);
  } catch {
    // The head's own request is refused here (its owner holds another lock now): it tries, and hears why.
    waiter.deliver(undefined);
    return undefined;
  }
  return handOverTo(core, lease, minted, waiter, req);
}

async function handOverTo(core: ServiceCore, lease: Lease, minted: boolean, waiter: Waiter, req: AcquireRequest): Promise<void> {
  const request = waiter.request!;
  const steps = core.steps(lease.kind);
  let handed: Lease | undefined;
  // Set when the head's grant came with no time left: it tries itself only after a backoff.
  let backoff = false;
  // close() waits for it as for an attempt: the head may get a lease from it.
  core.life.attemptStarted();
  try {
    // The head's deadline counts from before the request left, as an attempt's does.
    const sentAt = performance.now();
    let next: AcquireResult | undefined;
    if (steps.handoff !== undefined) {
      let result: HandoffResult;
      try {
        result = await steps.handoff(lease.name, lease.owner, req);
      } catch (err) {
        // Applied or not, nobody knows: the lease stays ours until its TTL (as after a failed
        // release), and the head's grant, if the step made one, is given back (failed()).
        failed(core, request, req, err);
        throw releaseFailed(core, lease, minted, err);
      }
      if (result.released !== "released") throw releaseRefused(core, lease, result.released);
      next = result.next;
    } else {
      let result: ReleaseResult;
      try {
        result = await steps.release(lease.name, lease.owner);
      } catch (err) {
        throw releaseFailed(core, lease, minted, err);
      }
      if (result !== "released") throw releaseRefused(core, lease, result);
      try {
        next = await steps.acquire(req);
      } catch (err) {
        // Released all the same; the head tries on its own.
        failed(core, request, req, err);
      }
    }
    releaseDone(core, lease);
    // close() began meanwhile: nobody may get a lease now.
    if (next?.acquired === true && core.life.closing) await core.giveBack(req.name, req.owner, lease.kind, true);
    else if (next !== undefined) {
      // As an attempt's answer: a lease, or contended (another host took the key between a
      // release and the attempt; or a grant with no time left, given back).
      const outcome = taken(core, request, next, req, sentAt, asIs);
      if (outcome instanceof Lease) handed = outcome;
      else backoff = outcome === NO_TIME_LEFT;
    }
  } finally {
    core.life.attemptDone();
    // No lease: the head tries itself (the key may be free, or the release failed); after a
    // grant with no time left, not before a backoff (as an attempt of its own would wait).
    if (backoff) setTimeout(() => waiter.deliver(undefined), timerMs(jittered(NO_TIME_LEFT_BACKOFF_MS)));
    else waiter.deliver(handed);
  }
  if (handed !== undefined) core.counts.handoffs++;
}
