// Renewal registration: a manual renew, turning keepalive on and off, and what the service
// does when the renewal manager reports (a renewal confirmed, failed, or a lease lost). The
// manager itself (renewal.ts) owns the timer, the heap and the batching.
import type { RenewResult } from "../../kit/backend.js";
import { renewOne } from "./kinds.js";
import { lostError, type ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { leases } from "./lease-control.js";
import type { RenewalHost } from "./renewal.js";
import { validateTtl } from "./validate.js";

/** The renewal manager's events, applied to `core`'s leases and counters. */
export function renewalHost(core: ServiceCore): RenewalHost {
  return {
    renewMany: (kind, reqs) => core.backendCall(() => core.steps(kind).renewMany(reqs)),
    renewed: (lease, expiresAtMs, sentAt) => {
      core.counts.renewalsOk++;
      leases.extend(lease, expiresAtMs, sentAt + lease.ttlMs);
    },
    renewalFailed: () => void core.counts.renewalsFailed++,
    lost: (lease, reason, stillHeld) => {
      if (lease.state === "held") core.markLost(lease, reason);
      // Only we know the owner token: giving it back can delete nothing but our own lock.
      if (stillHeld) void core.giveBack(lease.name, lease.owner, lease.kind);
    },
  };
}

/** Extends `lease` to `ttlMs` from now on the server's clock (see LockService.renew). */
export async function renew(core: ServiceCore, lease: Lease, ttlMs: number): Promise<void> {
  core.checkUsable(lease);
  validateTtl(ttlMs);
  const sentAt = performance.now();
  let result: RenewResult;
  try {
    result = await core.backendCall(() => renewOne(core.steps(lease.kind), lease.name, lease.owner, ttlMs));
  } catch (err) {
    core.counts.renewalsFailed++;
    throw err;
  }
  if (!result.ok) {
    core.counts.renewalsFailed++;
    const e = lostError(lease, result.reason);
    if (lease.state === "held") core.markLost(lease, e);
    throw e;
  }
  core.counts.renewalsOk++;
  if (lease.state !== "held") return;
  leases.extend(lease, result.expiresAtMs, sentAt + ttlMs);
  core.renewals.replan(lease);
}

/** Turns keepalive on or off for a held lease. */
export function setKeepalive(core: ServiceCore, lease: Lease, on: boolean): void {
  core.checkUsable(lease);
  if (lease.keepalive === on) return;
  leases.setKeepalive(lease, on);
  if (on) core.renewals.watch(lease);
  else core.renewals.replan(lease);
}
