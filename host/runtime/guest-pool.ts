// A plugin's pool of guest instances (`instances = N`): each instance runs one call at a time, so
// a pool runs up to N at once and one long job does not hold up the plugin's other schedules and
// calls. A call takes a free instance, or waits (in order of arrival) for the first to be free;
// the scheduler reserves a free one before it takes a tick's lock. Every instance has its own
// memory, handles and held locks (auto-released per instance, as for a single instance).
import { LockhostError } from "../../kit/errors.js";
import type { CallOptions, GuestArg, GuestInstance, GuestReservation, GuestValue } from "./guest-instance.js";
import type { FuncSignature } from "./wasm-binary.js";

/** The most instances one plugin may run (`instances`' upper bound in the config). */
export const MAX_INSTANCES = 64;

/** Several instances of one plugin, as one GuestInstance. */
export class GuestPool implements GuestInstance {
  readonly plugin: string;
  /** The instances, in the order they were started. */
  readonly members: readonly GuestInstance[];
  /** Calls waiting for a free instance, oldest first. */
  #waiters: (() => void)[] = [];
  #closed = false;
  readonly #unlisten: (() => void)[];

  /** The SHA-256 of the module its instances run (hex), when known: a reload compares it with the file's. */
  readonly sha256: string | undefined;

  /** A pool of `members` (at least one, all of the same plugin and module, whose hash is `sha256`). */
  constructor(members: readonly GuestInstance[], sha256?: string) {
    if (members.length === 0) throw new LockhostError("INVALID_ARGUMENT", "a guest pool needs at least one instance");
    this.members = members;
    this.sha256 = sha256;
    this.plugin = members[0]!.plugin;
    this.#unlisten = members.map((m) => m.onFree(() => this.#wake()));
  }

  get size(): number {
    return this.members.length;
  }

  get heldLocks(): number {
    return this.members.reduce((n, m) => n + m.heldLocks, 0);
  }

  hasExport(name: string): boolean {
    return this.members[0]!.hasExport(name);
  }

  exportSignature(name: string): FuncSignature | undefined {
    return this.members[0]!.exportSignature(name);
  }

  exportNames(): string[] {
    return this.members[0]!.exportNames();
  }

  /** A free instance for one call, unless a queued call waits for one (it comes first). */
  reserve(): GuestReservation | undefined {
    if (this.#closed || this.#waiters.length > 0) return undefined;
    return this.#free();
  }

  onFree(listener: () => void): () => void {
    const stops = this.members.map((m) => m.onFree(listener));
    return () => stops.forEach((stop) => stop());
  }

  async call(exportName: string, args?: readonly GuestArg[], options?: CallOptions): Promise<GuestValue> {
    return (await this.#take()).call(exportName, args, options);
  }

  async callString(exportName: string, args?: readonly GuestArg[]): Promise<string> {
    return (await this.#take()).callString(exportName, args);
  }

  cancelWaits(reason: string): void {
    for (const m of this.members) m.cancelWaits(reason);
  }

  async close(): Promise<void> {
    this.#closed = true;
    for (const stop of this.#unlisten) stop();
    // Queued calls find the pool closed and reject with CLOSED.
    for (const wake of this.#waiters.splice(0)) wake();
    await Promise.all(this.members.map((m) => m.close()));
  }

  /**
   * Retires the pool once a reload has put another in its place (nothing new is sent here): waits
   * until no call runs or waits on any instance (calls in flight and queued ones finish here,
   * on these instances), then closes it, releasing what its instances still hold.
   */
  async drain(): Promise<void> {
    for (;;) {
      if (this.#closed) return;
      const busy = this.members.find((m) => !isFree(m));
      if (!busy && this.#waiters.length === 0) break;
      // Woken when the busy instance is free; a queued call (without one busy: about to take one) is looked at next turn.
      if (busy)
        await new Promise<void>((resolve) => {
          const stop = busy.onFree(() => {
            stop();
            resolve();
          });
        });
      // A tick that waited for this free instance reserves it in the same turn: look after it.
      await new Promise((resolve) => setImmediate(resolve));
    }
    await this.close();
  }

  #free(): GuestReservation | undefined {
    for (const m of this.members) {
      const r = m.reserve();
      if (r) return r;
    }
    return undefined;
  }

  /** A free instance, waiting in line for one when none is. */
  async #take(): Promise<GuestReservation> {
    let woken = false;
    for (;;) {
      if (this.#closed) throw new LockhostError("CLOSED", `plugin ${this.plugin} was closed`);
      if (woken || this.#waiters.length === 0) {
        const r = this.#free();
        if (r) return r;
      }
      // Last in line; once woken, first (a call that lost the race for the free instance).
      await new Promise<void>((resolve) => (woken ? this.#waiters.unshift(resolve) : this.#waiters.push(resolve)));
      woken = true;
    }
  }

  #wake(): void {
    this.#waiters.shift()?.();
  }
}

/** Whether `guest` runs or queues nothing now (asked by claiming it, and giving the claim back at once). */
function isFree(guest: GuestInstance): boolean {
  const claim = guest.reserve();
  claim?.cancel();
  return claim !== undefined;
}
