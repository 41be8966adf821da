// Who leads an election, read from its lock's record, and observing it change. Observers wake on
// the lock's release channel, which carries releases and force-releases and, through
// KindSteps.proclaim, each new leader's proclamation; one status read per wake tells what
// changed. A lease that merely ends is not signalled by every backend, so an observer also
// re-reads when the leader's lease is due to end, and at the service's poll interval; and a
// leader that ends without a notice at all (a killed process) is noticed by the host's
// sentinel (election-sentinel.ts), which pokes observers when it sees the leader change.
import type { LockState } from "../../kit/steps.js";
import { ELECTION } from "../../kit/kinds.js";
import type { ServiceCore } from "./core.js";
import { timerMs } from "./waiting.js";

/** Who leads an election now (LockService.leader), as observers see it change. */
export interface LeaderInfo {
  /** The election's name, as given. */
  readonly election: string;
  /** The fully qualified name of its lock, in the leader kind: "global:<name>". */
  readonly name: string;
  /** Whether someone leads. The fields below are set only then. */
  readonly held: boolean;
  /** The leader's node name. */
  readonly node?: string;
  /** The leader's plugin ("host" for host-side callers). */
  readonly plugin?: string;
  /** What the leader proclaimed (leader(): "" until its proclamation lands; observe() shows a term only once it has). */
  readonly value?: string;
  /** The leader's term: its lease's fence. */
  readonly term?: number;
  /** When it took the lead, ms since the epoch on the backend's clock. */
  readonly sinceMs?: number;
  /** When its lease ends unless renewed, ms since the epoch on the backend's clock. */
  readonly expiresAtMs?: number;
}

/** The leader of `election` from its lock's record. */
export function leaderInfo(election: string, name: string, state: LockState | null): LeaderInfo {
  const record = state?.holders[0];
  if (record === undefined) return { election, name, held: false };
  return {
    election,
    name,
    held: true,
    node: record.holder.node,
    plugin: record.holder.plugin,
    value: record.value ?? "",
    term: record.fence,
    sinceMs: record.acquiredAtMs,
    expiresAtMs: record.expiresAtMs,
  };
}

/** Reads who leads `election` (lock `name`) now. */
export async function readLeader(core: ServiceCore, election: string, name: string): Promise<LeaderInfo> {
  core.life.checkOpen();
  const record = await core.backendCall(() => core.steps(ELECTION).status(name));
  return leaderInfo(election, name, record);
}

/** What an observer compares to tell a change: leader, term and value. */
function identity(info: LeaderInfo): string {
  return info.held ? `${info.term}\u0000${info.node ?? ""}\u0000${info.value ?? ""}` : "";
}

/**
 * Yields who leads `election` now, then each change (another leader, a new term, a new value,
 * nobody), until `signal` aborts or the service closes (LockService.observe). A change within
 * one wake-up that is undone by the next read is not seen; the latest state always is.
 */
export async function* observeLeader(
  core: ServiceCore,
  election: string,
  name: string,
  signal: AbortSignal | undefined,
): AsyncGenerator<LeaderInfo, void, undefined> {
  core.life.checkOpen();
  let pending = true;
  let wake: (() => void) | undefined;
  const poke = (): void => {
    pending = true;
    wake?.();
  };
  const watch = core.steps(ELECTION).watch(name, poke);
  // A leader that ends without a notice (a killed process) is noticed by the host's sentinel.
  const unwatch = core.sentinel.watch(name, poke);
  let stopped = false;
  /** Lets go of the watches: at the end, and as soon as the signal aborts, even while the consumer holds the iterator without pulling it. */
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    watch.close();
    unwatch();
  };
  const onAbort = (): void => {
    stop();
    poke();
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    await watch.ready;
    let last: string | undefined;
    let nextReadMs = 0;
    /** Reads in a row that found the leader past its lease's end (see below). */
    let overdueReads = 0;
    for (;;) {
      if (signal?.aborted || core.life.closing) return;
      if (!pending) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(poke, timerMs(nextReadMs));
          wake = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wake = undefined;
        if (signal?.aborted || core.life.closing) return;
      }
      pending = false;
      core.life.checkOpen();
      const record = await core.backendCall(() => core.steps(ELECTION).status(name));
      const info = leaderInfo(election, name, record);
      const remainingMs = record?.holders[0]?.ttlRemainingMs;
      // A leader still reported past its lease's end (ttlRemainingMs 0): on PostgreSQL the
      // holder's session keeps the lock until the holder itself ends the lease, so a frozen
      // (SIGSTOP, stalled VM) leader stays in the record, overdue, for as long as it is frozen.
      // Re-reading 1 ms later each time made every observer a busy loop on the backend while it
      // lasted (about 800 status reads a second per observer, test/faults/election-faults.test.ts);
      // back off instead, doubling from 1 ms up to the poll interval. The lease's end is still
      // seen at once: the holder's unlock notifies, and the sentinel pokes on a change.
      overdueReads = remainingMs !== undefined && remainingMs <= 0 ? overdueReads + 1 : 0;
      // Next read without a wake: when the lease is due to end (expiry is not signalled by
      // every backend), else the poll interval (a pg session that died is not either).
      const dueMs = remainingMs === undefined ? Infinity : overdueReads > 0 ? 2 ** Math.min(overdueReads - 1, 30) : remainingMs + 1;
      nextReadMs = Math.min(dueMs, core.config.pollIntervalMs);
      const id = identity(info);
      // A leader between winning the key and proclaiming (a campaign is two writes: observers
      // read when the old leader's release wakes them, as the new one wins) is no leader yet:
      // campaign returns only once the proclamation landed, and the proclamation wakes this
      // observer. Shown now, it would be a term with a value its leader did not campaign with.
      if (info.held && record?.holders[0]?.value === undefined) continue;
      if (id !== last) {
        last = id;
        yield info;
      }
    }
  } finally {
    signal?.removeEventListener("abort", onAbort);
    stop();
  }
}
