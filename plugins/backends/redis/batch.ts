// How a batch of renewals (LockBackend.renewMany) is cut into script calls. One server takes
// any keys in one script; a cluster only keys of one slot per script, so there the batch is
// grouped by slot first. Either way a script takes at most RENEW_CHUNK locks: a script runs
// alone on the server, and every other client waits for it, so a 10,000-lock tick is cut into
// calls of a few ms each rather than one long stall. The calls are sent together, so they
// share the network's round trip; RedisBackend.renewRoundTrips counts each of them.
import type { RenewRequest } from "../../../kit/index.js";
import { slotOf, type KeyLayout } from "./keys.js";

/**
 * Most locks renewed by one script call. Measured on a 2-core machine: ~6 ms of server time per
 * 1,000 (HGET, HSET, PEXPIRE each), so a 10,000-lock tick is 10 calls, none stalling the server long.
 */
export const RENEW_CHUNK = 1_000;

/** One script call: which requests it renews (indexes into the batch) and its arguments. */
export interface RenewCall {
  readonly indexes: readonly number[];
  /** numkeys, the lock keys, then owner and ttlMs per lock: lockhostRenewMany's arguments. */
  readonly args: readonly (string | number)[];
}

/**
 * The script calls that renew `reqs`: chunks of at most RENEW_CHUNK requests in batch order
 * on one server, or per slot (then chunked) on a cluster.
 */
export function renewCalls(reqs: readonly RenewRequest[], keys: KeyLayout, cluster: boolean): RenewCall[] {
  return renewCallsOf(reqs, [keys.lock.bind(keys)], cluster);
}

/**
 * As renewCalls, for a script that takes several keys per renewal: `keysOf` names them, and a
 * call's KEYS are each request's keys in that order, request after request (numkeys = n * k).
 */
export function renewCallsOf(reqs: readonly RenewRequest[], keysOf: readonly ((name: string) => string)[], cluster: boolean): RenewCall[] {
  const calls: RenewCall[] = [];
  for (const group of cluster ? bySlot(reqs) : [allIndexes(reqs.length)]) {
    for (let start = 0; start < group.length; start += RENEW_CHUNK) {
      calls.push(call(reqs, group.slice(start, start + RENEW_CHUNK), keysOf));
    }
  }
  return calls;
}

function call(reqs: readonly RenewRequest[], indexes: readonly number[], keysOf: readonly ((name: string) => string)[]): RenewCall {
  const n = indexes.length;
  const k = keysOf.length;
  const args = new Array<string | number>(1 + (k + 2) * n);
  args[0] = n * k;
  for (let j = 0; j < n; j++) {
    const req = reqs[indexes[j]!]!;
    for (let m = 0; m < k; m++) args[1 + j * k + m] = keysOf[m]!(req.key);
    args[1 + n * k + 2 * j] = req.owner;
    args[2 + n * k + 2 * j] = req.ttlMs;
  }
  return { indexes, args };
}

function allIndexes(n: number): number[] {
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = i;
  return out;
}

/** Request indexes per cluster slot, each group in batch order (lock names are never empty: see slotOf). */
function bySlot(reqs: readonly RenewRequest[]): Iterable<number[]> {
  const groups = new Map<number, number[]>();
  for (let i = 0; i < reqs.length; i++) {
    const slot = slotOf(reqs[i]!.key);
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  }
  return groups.values();
}
