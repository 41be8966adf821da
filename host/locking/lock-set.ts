// Several keys of one kind taken all or nothing: in one canonical order (the full lock names'
// UTF-8 bytes), so two callers naming the same keys in different orders never wait on each
// other in a cycle, and with the keys taken so far released again when one cannot be had.
// Composed of ordinary leases: each key keeps its own fence, keepalive and loss signal; the
// set's signal aborts when any of them is lost.
import { LockhostError } from "../../kit/errors.js";
import type { AcquireOptions } from "./acquire.js";
import type { Lease } from "./lease.js";
import type { TryLockOptions } from "./request.js";
import { qualify } from "./scope.js";

/** The most keys one set may name. */
export const MAX_SET_KEYS = 64;

/** Several locks held together (see LockService.tryMany / acquireMany). */
export class LockSet implements AsyncDisposable {
  /** The leases, in the canonical order they were taken in. */
  readonly leases: readonly Lease[];
  readonly #controller = new AbortController();
  readonly #unwatch: (() => void)[] = [];
  readonly #release: (lease: Lease) => Promise<void>;

  /** @internal Made by LockService.tryMany / acquireMany. */
  constructor(leases: readonly Lease[], release: (lease: Lease) => Promise<void>) {
    this.leases = leases;
    this.#release = release;
    for (const lease of leases) {
      this.#unwatch.push(lease.onLost((reason) => this.#controller.abort(reason)));
    }
  }

  /** The full lock names, in canonical order. */
  get names(): string[] {
    return this.leases.map((l) => l.name);
  }

  /** Each lock's fence by its full name: send them with the writes they protect. */
  get fences(): Record<string, number> {
    return Object.fromEntries(this.leases.map((l) => [l.name, l.fence]));
  }

  /** Aborts, with the lost lease's reason, as soon as any lock of the set is lost. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /**
   * Releases every lock of the set (in the reverse of the order they were taken in), each
   * whatever became of the others; rejects with the first failure once all were tried.
   */
  async release(): Promise<void> {
    for (const unwatch of this.#unwatch.splice(0)) unwatch();
    const outcomes = await Promise.allSettled([...this.leases].reverse().map(this.#release));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (failed) throw failed.reason;
  }

  /**
   * Releases the locks of the set still held when an `await using` block that holds it ends
   * (in the reverse of the order they were taken in; see Lease's [Symbol.asyncDispose]): a lock
   * released or lost already is skipped. Rejects with the first release the backend failed once
   * all were tried; when the block threw too, its exit throws a SuppressedError carrying both.
   */
  async [Symbol.asyncDispose](): Promise<void> {
    for (const unwatch of this.#unwatch.splice(0)) unwatch();
    const outcomes = await Promise.allSettled([...this.leases].reverse().map((lease) => lease[Symbol.asyncDispose]()));
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === "rejected");
    if (failed) throw failed.reason;
  }
}

/** The keys of a set in canonical order; INVALID_ARGUMENT for an empty, too long or repeated list, or an owner token. */
export function canonicalKeys(keys: readonly string[], options: TryLockOptions): string[] {
  if (!Array.isArray(keys) || keys.length === 0) throw new LockhostError("INVALID_ARGUMENT", "keys must be a non-empty array of keys");
  if (keys.length > MAX_SET_KEYS) throw new LockhostError("INVALID_ARGUMENT", `keys names ${keys.length} keys; a set takes at most ${MAX_SET_KEYS}`);
  if (options.owner !== undefined)
    throw new LockhostError("INVALID_ARGUMENT", "owner names one lock, and a set holds several: leave it out (each lock gets its own)");
  const scope = options.scope ?? "global";
  const named = keys.map((key) => {
    if (typeof key !== "string") throw new LockhostError("INVALID_ARGUMENT", `keys must be strings, got ${typeof key}`);
    return { key, name: Buffer.from(qualify(key, scope)) };
  });
  named.sort((a, b) => Buffer.compare(a.name, b.name));
  for (let i = 1; i < named.length; i++) {
    if (named[i]!.key === named[i - 1]!.key) throw new LockhostError("INVALID_ARGUMENT", `keys names "${named[i]!.key}" twice`);
  }
  return named.map((n) => n.key);
}

/** How a set takes and lets go of one of its keys. */
export interface SetSteps {
  readonly take: (key: string) => Promise<Lease | null>;
  readonly release: (lease: Lease) => Promise<void>;
}

/**
 * Takes every key in order; on a contended key (null) or a failure, lets go of the ones taken
 * and resolves to null or rethrows. A release that fails during that rollback leaves its lock
 * to its TTL (the caller's error is the one that matters).
 */
export async function takeAll(keys: readonly string[], steps: SetSteps): Promise<LockSet | null> {
  const taken: Lease[] = [];
  try {
    for (const key of keys) {
      const lease = await steps.take(key);
      if (!lease) {
        await rollback(taken, steps);
        return null;
      }
      taken.push(lease);
    }
  } catch (err) {
    await rollback(taken, steps);
    throw err;
  }
  // A key taken early may have lapsed while a later one was waited for (keepalive off): a set
  // with a lost lock is not "all", so none is kept.
  const lost = taken.find((lease) => lease.state !== "held" || performance.now() >= lease.deadline);
  if (lost) {
    await rollback(taken, steps);
    throw new LockhostError(
      "LOST",
      `lock ${lost.name} of the set ended while the set's later keys were being taken (its TTL of ${lost.ttlMs} ms ran out: take the set with ` +
        `keepalive, or a longer TTL); none is held`,
    );
  }
  return new LockSet(taken, steps.release);
}

/** The options of one key's wait within a set's: what is left of the set's `waitMs`. */
export function remainingWait(options: AcquireOptions, startedAt: number): AcquireOptions {
  if (options.waitMs === Infinity) return options;
  return { ...options, waitMs: Math.max(0, Math.floor(options.waitMs - (performance.now() - startedAt))) };
}

async function rollback(taken: readonly Lease[], steps: SetSteps): Promise<void> {
  await Promise.allSettled([...taken].reverse().map(steps.release));
}
