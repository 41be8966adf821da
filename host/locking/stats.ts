// The counters of one LockService, as `lockhost status` and the admin listener's /metrics show
// them. Plain numbers bumped on the lock path (no allocation); readers take a snapshot.
import type { ServiceCore } from "./core.js";

/** A snapshot of a LockService's counters (totals since the service started). */
export interface LockStats {
  /** Leases held now. */
  readonly held: number;
  /** Leases held now under keepalive (renewed by the renewal manager). */
  readonly keepalive: number;
  /** Acquisitions that succeeded (tryLock, acquire, restore). */
  readonly acquisitions: number;
  /** Attempts that found the key held by someone else (each try of a waiting acquire counts). */
  readonly contended: number;
  /** Renewals the backend confirmed (manual and keepalive). */
  readonly renewalsOk: number;
  /** Renewals refused (the lock changed hands or ended) or not confirmed (backend failure). */
  readonly renewalsFailed: number;
  /** Leases found lost: a renewal refused or unconfirmed before the lease ended, or the lease ran out. */
  readonly lost: number;
  /** Acquire calls waiting for a key now. */
  readonly waiters: number;
  /** Waits that ended (acquired, timed out or aborted). */
  readonly waits: number;
  /** Waits that ended with TIMEOUT. */
  readonly waitTimeouts: number;
  /** Total time spent waiting by the waits that ended, in ms. */
  readonly waitTimeMsTotal: number;
  /** Releases that handed the key straight to a waiter of this host (a mutex under local contention). */
  readonly handoffs: number;
  /** Locks found held after a call that failed with its outcome unknown (timed out), and released by owner once the backend answered. */
  readonly cleanups: number;
  /** Owner tokens of such calls waiting for the backend to answer now. */
  readonly unsettled: number;
  /** Renewal manager ticks that sent at least one renewal. */
  readonly renewalTicks: number;
  /** Batched renewal calls (KindSteps.renewMany) the renewal manager made. */
  readonly renewalBatches: number;
  /** Timers the renewal manager has armed now (0 or 1: one for the whole host). */
  readonly renewalTimers: number;
  /** Delegated grants taken from the backend, each with a block of fences (delegation.ts; 0 when delegation is off). */
  readonly delegatedGrants: number;
  /** Keys handed from one local holder to the next under a delegated grant, without a round trip. */
  readonly delegatedHandoffs: number;
  /** Delegated grants given up for waiters of other hosts (or after max_hold_ms). */
  readonly delegationsYielded: number;
}

/**
 * The counters a service bumps on the lock path: plain numbers, bumped without allocating.
 * Read as a LockStats snapshot (statsOf).
 */
export class LockCounters {
  acquisitions = 0;
  contended = 0;
  renewalsOk = 0;
  renewalsFailed = 0;
  lost = 0;
  waitsDone = 0;
  waitTimeouts = 0;
  waitTimeMs = 0;
  /** Releases that handed their key to this host's next waiter (handoff.ts). */
  handoffs = 0;
}

/** A snapshot of `core`'s counters. */
export function statsOf(core: ServiceCore): LockStats {
  const { renewals, counts } = core;
  return {
    held: core.held.size,
    keepalive: renewals.keepaliveCount,
    acquisitions: counts.acquisitions,
    contended: counts.contended,
    renewalsOk: counts.renewalsOk,
    renewalsFailed: counts.renewalsFailed,
    lost: counts.lost,
    waiters: core.waits.size,
    waits: counts.waitsDone,
    waitTimeouts: counts.waitTimeouts,
    waitTimeMsTotal: counts.waitTimeMs,
    handoffs: counts.handoffs,
    cleanups: core.unsettled.cleaned,
    unsettled: core.unsettled.size,
    // Each tick that renews sends exactly one batch.
    renewalTicks: renewals.batches,
    renewalBatches: renewals.batches,
    renewalTimers: renewals.timers,
    delegatedGrants: core.delegation?.counts.grants ?? 0,
    delegatedHandoffs: core.delegation?.counts.localHandoffs ?? 0,
    delegationsYielded: core.delegation?.counts.yielded ?? 0,
  };
}
