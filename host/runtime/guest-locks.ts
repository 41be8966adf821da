// The lock ABI as seen from one guest instance, independent of how the guest runs: the worker
// runtime calls it from the main thread after copying bytes out of guest memory, an inline
// runtime would call it directly. It owns the guest's handle table, enforces scopes and
// permissions, turns every failure into (-code, message), and does auto-release.
import type { Logger } from "pino";
import { FLAG_GLOBAL, FLAG_KEEP, TRY_CONTENDED } from "../../abi/status.js";
import { LockhostError, toLockhostError } from "../errors.js";
import type { Lease } from "../locking/lease.js";
import { qualify, type Scope } from "../locking/scope.js";
import type { LockService } from "../locking/service.js";
import { keyLengthError } from "../locking/validate.js";
import { HandleTable } from "./handle-table.js";

/** The answer to one ABI call: `result < 0` is -code and `text` its message; otherwise `text` is the output string, if any. */
export interface AbiReply {
  readonly result: number;
  readonly text?: string;
}

/** What a guest is allowed to do. */
export interface GuestPolicy {
  readonly plugin: string;
  /** Whether the plugin's config grants this global key. */
  readonly allowsGlobal: (key: string) => boolean;
}

interface Held {
  readonly lease: Lease;
  readonly keep: boolean;
}

const TRY_FLAGS = FLAG_GLOBAL | FLAG_KEEP;
const STATUS_FLAGS = FLAG_GLOBAL;
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** One guest instance's view of the lock service. */
export class GuestLocks {
  readonly #service: LockService;
  readonly #policy: GuestPolicy;
  readonly #log: Logger;
  readonly #handles = new HandleTable<Held>();
  /** Bumped by reset(): an acquisition that completes after a reset is released at once. */
  #epoch = 0;

  constructor(service: LockService, policy: GuestPolicy, log: Logger) {
    this.#service = service;
    this.#policy = policy;
    this.#log = log;
  }

  /** How many locks the guest holds. */
  get heldCount(): number {
    return this.#handles.size;
  }

  /** `lock.try`: a handle, TRY_CONTENDED, or -code. */
  async try(keyBytes: Uint8Array, ttlMs: number, flags: number): Promise<AbiReply> {
    const epoch = this.#epoch;
    try {
      checkFlags(flags, TRY_FLAGS, "try");
      const { key, scope } = this.#scoped(keyBytes, flags);
      const lease = await this.#service.tryLock(key, { ttlMs, scope, plugin: this.#policy.plugin });
      if (!lease) return { result: TRY_CONTENDED };
      if (epoch !== this.#epoch) {
        // The guest died while this call was in flight: nobody can use the lock.
        await this.#release(lease, "acquired after its guest was reset");
        throw new LockhostError("LOST", "the guest was reset while the lock was being acquired");
      }
      return { result: this.#handles.add({ lease, keep: (flags & FLAG_KEEP) !== 0 }) };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /** `lock.renew`: OK or -code; ttlMs 0 reuses the acquisition TTL. */
  async renew(handle: number, ttlMs: number): Promise<AbiReply> {
    try {
      const { lease } = this.#handles.get(handle);
      await this.#service.renew(lease, ttlMs === 0 ? lease.ttlMs : ttlMs);
      return { result: 0 };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /**
   * `lock.release`: OK or -code (LOST when the lease had ended: nothing is deleted). When the
   * backend fails, the handle stays valid so the guest can retry (and auto-release still runs).
   */
  async release(handle: number): Promise<AbiReply> {
    try {
      const { lease } = this.#handles.get(handle);
      try {
        await this.#service.release(lease);
      } finally {
        if (lease.state !== "held") this.#forget(handle);
      }
      return { result: 0 };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /** `lock.fence`: the fencing token, or -LOST once the lease has ended. */
  fence(handle: number): AbiReply {
    try {
      return { result: this.#current(handle).fence };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /** `lock.owner`: the owner token, or -LOST once the lease has ended. */
  owner(handle: number): AbiReply {
    try {
      const lease = this.#current(handle);
      return { result: lease.owner.length, text: lease.owner };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /** `lock.status`: the key's status JSON (without the owner token). */
  async status(keyBytes: Uint8Array, flags: number): Promise<AbiReply> {
    try {
      checkFlags(flags, STATUS_FLAGS, "status");
      const { key, scope } = this.#scoped(keyBytes, flags);
      const s = await this.#service.status(qualify(key, scope));
      const json = JSON.stringify(
        s.held
          ? {
              key: s.key, held: true, holder: { plugin: s.holder.plugin, node: s.holder.node },
              fence: s.fence, acquired_at_ms: s.acquiredAtMs, expires_at_ms: s.expiresAtMs,
              ttl_remaining_ms: s.ttlRemainingMs,
            }
          : { key: s.key, held: false },
      );
      return { result: Buffer.byteLength(json), text: json };
    } catch (err) {
      return this.#fail(err);
    }
  }

  /** Auto-release after an export call returned: every lock not taken with FLAG_KEEP. */
  async endCall(): Promise<void> {
    await this.#releaseWhere((held) => !held.keep, "its export call returned");
  }

  /** Releases every lock, kept ones included (trap, time limit, crash, close). */
  async reset(reason: string): Promise<void> {
    this.#epoch++;
    await this.#releaseWhere(() => true, reason);
  }

  async #releaseWhere(pick: (held: Held) => boolean, reason: string): Promise<void> {
    const picked: Lease[] = [];
    for (const [handle, held] of [...this.#handles.entries()]) {
      if (pick(held)) picked.push(this.#handles.remove(handle).lease);
    }
    await Promise.all(picked.map((lease) => this.#release(lease, reason)));
  }

  /** The lease of a handle whose lease has not ended by the host's own (conservative) deadline. */
  #current(handle: number): Lease {
    const { lease } = this.#handles.get(handle);
    if (lease.state === "lost" || performance.now() >= lease.deadline) {
      throw new LockhostError("LOST", `lock ${lease.name} (fence ${lease.fence}) is no longer held: its lease ended`);
    }
    return lease;
  }

  /** Drops a handle that a concurrent reset() may already have dropped. */
  #forget(handle: number): void {
    try {
      this.#handles.remove(handle);
    } catch {
      // Already gone: reset() released everything while this release was in flight.
    }
  }

  async #release(lease: Lease, reason: string): Promise<void> {
    const e = await this.#service.releaseIfHeld(lease);
    if (e) this.#log.warn({ lock: lease.name, code: e.code, err: e.message, reason }, "auto-release failed; the lock will expire at its TTL");
    else this.#log.debug({ lock: lease.name, fence: lease.fence, reason }, "auto-released lock");
  }

  #scoped(keyBytes: Uint8Array, flags: number): { key: string; scope: Scope } {
    const key = decodeKey(keyBytes);
    if ((flags & FLAG_GLOBAL) === 0) return { key, scope: { plugin: this.#policy.plugin } };
    if (!this.#policy.allowsGlobal(key)) {
      throw new LockhostError(
        "PERMISSION_DENIED",
        `plugin ${this.#policy.plugin} may not use global key "${key}": add a matching pattern to its global_keys`,
      );
    }
    return { key, scope: "global" };
  }

  #fail(err: unknown): AbiReply {
    const e = toLockhostError(err);
    if (e.code === "INTERNAL") this.#log.error({ err }, "lock call failed inside the host");
    return { result: -e.status, text: e.message };
  }
}

function checkFlags(flags: number, allowed: number, call: string): void {
  if ((flags & ~allowed) !== 0) {
    throw new LockhostError("INVALID_ARGUMENT", `flags 0x${(flags >>> 0).toString(16)} of ${call} has unknown bits (allowed: 0x${allowed.toString(16)})`);
  }
}

function decodeKey(bytes: Uint8Array): string {
  if (bytes.byteLength === 0) throw new LockhostError("INVALID_ARGUMENT", "key must not be empty");
  const tooLong = keyLengthError(bytes.byteLength);
  if (tooLong) throw tooLong;
  try {
    return strictUtf8.decode(bytes);
  } catch {
    throw new LockhostError("INVALID_ARGUMENT", "key is not valid UTF-8");
  }
}
