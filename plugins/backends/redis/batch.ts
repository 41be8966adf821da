// How the mutex's and the queue kinds' calls are batched into script calls: renewals
// (renewCalls), and acquires and releases made in one tick (TickBatcher, below).
//
// A batch of renewals (KindSteps.renewMany) is cut into script calls. One server takes
// any keys in one script; a cluster only keys of one slot per script, so there the batch is
// grouped by slot first. Either way a script takes at most RENEW_CHUNK locks: a script runs
// alone on the server, and every other client waits for it, so a 10,000-lock tick is cut into
// calls of a few ms each rather than one long stall. The calls are sent together, so they
// share the network's round trip; RedisBackend.renewRoundTrips counts each of them.
//
// TickBatcher: calls of one step made in the same tick go to the server as one script run. Concurrent
// callers (16 loops of try+release, a scheduler firing many jobs) each used to cost the server
// a script start and the host a command and a socket write; in one batch they share them.
//
// A batch is cut at MAX_BATCH calls, and the rest of the tick starts the next one, so several
// batches are on the wire at once: the host prepares one while the server runs another. Measured
// on the 2-core development VM, 16 concurrent try+release loops through the LockService:
// batches of up to 2, 51k pairs/s; up to 4, 54k; up to 8, 55k; up to 16 (one batch in flight,
// host and server taking turns), 33k; no batching, 42k (raw SET NX PX + compare-and-delete:
// ~56k). 4 and 8 measure alike; 4 keeps more batches in flight with fewer callers. A call made
// alone in its tick goes as it did before batching, through the single-call script, one tick
// later at most (process.nextTick, which runs before any I/O).
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
    for (let m = 0; m < k; m++) args[1 + j * k + m] = keysOf[m]!(req.name);
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
    const slot = slotOf(reqs[i]!.name);
    const group = groups.get(slot);
    if (group) group.push(i);
    else groups.set(slot, [i]);
  }
  return groups.values();
}

/** Most calls in one batch (see above). */
export const MAX_BATCH = 4;

interface Pending<Req, Res> {
  readonly req: Req;
  readonly resolve: (res: Res) => void;
  readonly reject: (err: unknown) => void;
}

/**
 * Collects the calls made in one tick and sends them as batches of at most MAX_BATCH: `one` for
 * a call alone, `many` for two or more, which resolves to one result per call in order, or to
 * an Error for a call that failed on its own. A rejection of `many` fails its whole batch.
 */
export class TickBatcher<Req, Res> {
  #queue: Pending<Req, Res>[] = [];
  readonly #one: (req: Req) => Promise<Res>;
  readonly #many: (reqs: readonly Req[]) => Promise<readonly (Res | Error)[]>;
  readonly #before: { flush(): void } | undefined;

  /**
   * `before`: a batcher whose waiting calls are sent ahead of each batch of this one. The
   * backend's acquires name its releases: a batch filled up goes at once, and without this an
   * acquire could overtake a release of the same key called before it and find it held.
   */
  constructor(one: (req: Req) => Promise<Res>, many: (reqs: readonly Req[]) => Promise<readonly (Res | Error)[]>, before?: { flush(): void }) {
    this.#one = one;
    this.#many = many;
    this.#before = before;
  }

  /** Sends `req` with the other calls of this tick; settles as `one(req)` would. */
  add(req: Req): Promise<Res> {
    return new Promise<Res>((resolve, reject) => {
      const n = this.#queue.push({ req, resolve, reject });
      if (n === 1) process.nextTick(this.#flush);
      else if (n >= MAX_BATCH) this.#flush();
    });
  }

  /** Sends the calls waiting now, if any. */
  flush(): void {
    this.#flush();
  }

  readonly #flush = (): void => {
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#before?.flush();
    this.#queue = [];
    if (batch.length === 1) {
      const only = batch[0]!;
      this.#one(only.req).then(only.resolve, only.reject);
      return;
    }
    this.#many(batch.map(requestOf)).then(
      (results) => {
        for (let i = 0; i < batch.length; i++) {
          const result = results[i];
          if (result instanceof Error) batch[i]!.reject(result);
          else if (result === undefined) batch[i]!.reject(new Error(`a batch of ${batch.length} calls got ${results.length} replies`));
          else batch[i]!.resolve(result);
        }
      },
      (err: unknown) => {
        for (const call of batch) call.reject(err);
      },
    );
  };
}

const requestOf = <Req>(pending: { readonly req: Req }): Req => pending.req;
