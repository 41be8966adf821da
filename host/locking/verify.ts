// After the backend says loss notices may have been missed (the connection that carries them
// dropped and came back), ask it about every lock this service holds: one that another process
// released or took over meanwhile is marked lost now, keepalive or not, instead of at its next
// renewal or never (a lease without keepalive would otherwise look held until its TTL).
import { LockhostError } from "../../kit/errors.js";
import type { HeldLeases } from "./held-leases.js";
import type { Lease } from "./lease.js";
import { holds, waitKey } from "./kinds.js";
import type { LockKind } from "../../kit/kinds.js";
import type { KindSteps } from "../../kit/steps.js";

/** The parts of a service's core this needs (core.ts calls it, so it does not import core). */
export interface HeldBooks {
  /** The steps of each kind's store. */
  steps(kind: LockKind): KindSteps;
  /** Held leases by owner token. */
  readonly held: Pick<HeldLeases, "get" | "values">;
  /** Names the service is force-releasing itself (it marks those leases with its own reason). */
  readonly forceReleasing: ReadonlySet<string>;
  markLost(lease: Lease, reason: LockhostError): void;
}

/** Status requests in flight at once: a reconnect of a host holding many locks must not flood the store. */
const AT_ONCE = 32;

/** Checks every held lease with the backend; a missing or foreign record marks it lost. Never rejects. */
export async function verifyHeld(core: HeldBooks): Promise<void> {
  const leases = core.held.values();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < leases.length) await verifyOne(core, leases[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(AT_ONCE, leases.length) }, worker));
}

async function verifyOne(core: HeldBooks, lease: Lease): Promise<void> {
  let held: boolean;
  try {
    held = await holds(core.steps(lease.kind), lease.name, lease.owner);
  } catch {
    return; // the store is not answering: its next renewal or the next reconnect will tell
  }
  // Released or lost here meanwhile, or being force-released by this service: nothing to tell.
  if (held || core.held.get(lease.owner) !== lease || core.forceReleasing.has(waitKey(lease.kind, lease.name))) return;
  core.markLost(
    lease,
    new LockhostError(
      "LOST",
      `lock ${lease.name} (fence ${lease.fence}) was lost: another process released, force-released or took it while this host's notices were interrupted`,
    ),
  );
}
