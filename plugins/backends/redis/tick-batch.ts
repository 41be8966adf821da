// Calls of one step made in the same tick go to the server as one script run. Concurrent
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
  constructor(
    one: (req: Req) => Promise<Res>,
    many: (reqs: readonly Req[]) => Promise<readonly (Res | Error)[]>,
    before?: { flush(): void },
  ) {
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
