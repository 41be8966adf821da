// Per-guest handle table. A handle is a positive i32: the low 16 bits are slot + 1, bits
// 16..30 the slot's generation. A forged handle, or one whose slot was reused, fails the
// generation check (INVALID_HANDLE), so a guest can never reach another holder's lock.
//
// Slots are reused only once all MAX_SLOTS (65,535) exist, oldest-freed first, and a reuse
// bumps the slot's 15-bit generation. So a handle value comes back only after its slot went
// round all 32,767 generations: about 65,535 x 32,767 (~2^31) acquisitions by the same guest
// instance, not the 64 x 32,767 (~2.1M) it took when reuse started after 64 slots.
import { LockhostError } from "../../kit/errors.js";

const SLOT_BITS = 16;
const SLOT_MASK = (1 << SLOT_BITS) - 1;
const MAX_SLOTS = SLOT_MASK; // slot + 1 must fit in 16 bits
const GEN_MASK = 0x7fff; // keeps bit 31 clear: handles stay positive
/**
 * Slots are reused only once this many exist (all of them; the table grows lazily up to
 * there), oldest-freed first. Until its slot is reused a released handle reads as
 * ALREADY_RELEASED rather than INVALID_HANDLE, and a handle value is not reissued before
 * about REUSE_AFTER_SLOTS x GEN_MASK (~2^31) acquisitions.
 */
const REUSE_AFTER_SLOTS = MAX_SLOTS;

interface Slot<T, E> {
  generation: number;
  value: T | undefined;
  released: boolean;
  /** What the owner recorded when the handle was released (e.g. how it ended). */
  tombstone: E | undefined;
}

/** What a handle designates: a live value, or the tombstone of a released handle. */
export type HandleEntry<T, E> = { readonly live: true; readonly value: T } | { readonly live: false; readonly tombstone: E | undefined };

/**
 * Maps guest-visible handles to host-side values. `E` is a small record kept for a released
 * handle until its slot is reused (the lock runtime keeps how the lock ended), so a released
 * handle can still be asked about without keeping its value alive.
 */
export class HandleTable<T, E = never> {
  readonly #slots: Slot<T, E>[] = [];
  readonly #free: number[] = [];
  #freeHead = 0;
  /** Indexes of the live slots, so entries() costs the live handles, not every slot ever made. */
  readonly #liveSlots = new Set<number>();

  /** How many handles are live. */
  get size(): number {
    return this.#liveSlots.size;
  }

  /** Stores `value` and returns its new handle. */
  add(value: T): number {
    let index: number;
    if (this.#slots.length < REUSE_AFTER_SLOTS || this.#freeHead === this.#free.length) {
      // Every slot exists and none is free: all MAX_SLOTS handles are live.
      if (this.#slots.length >= MAX_SLOTS) {
        throw new LockhostError("INVALID_ARGUMENT", `this guest already holds ${MAX_SLOTS} handles; release some first`);
      }
      index = this.#slots.length;
      this.#slots.push({ generation: 1, value, released: false, tombstone: undefined });
    } else {
      index = this.#free[this.#freeHead++]!;
      if (this.#freeHead > 1024 && this.#freeHead * 2 > this.#free.length) {
        this.#free.splice(0, this.#freeHead);
        this.#freeHead = 0;
      }
      const slot = this.#slots[index]!;
      slot.generation = (slot.generation % GEN_MASK) + 1;
      slot.value = value;
      slot.released = false;
      slot.tombstone = undefined;
    }
    this.#liveSlots.add(index);
    return (this.#slots[index]!.generation << SLOT_BITS) | (index + 1);
  }

  /** Whether every handle is taken: add() would throw. */
  get full(): boolean {
    return this.#slots.length >= MAX_SLOTS && this.#freeHead >= this.#free.length;
  }

  /** The value of a live handle; throws INVALID_HANDLE or ALREADY_RELEASED otherwise. */
  get(handle: number, argName = "handle"): T {
    const slot = this.#slot(handle, argName);
    if (slot.released || slot.value === undefined) {
      throw new LockhostError("ALREADY_RELEASED", `${argName} ${handle} was already released`);
    }
    return slot.value;
  }

  /**
   * A live handle's value, or a released handle's tombstone; throws INVALID_HANDLE for a
   * handle never issued or whose slot was reused.
   */
  lookup(handle: number, argName = "handle"): HandleEntry<T, E> {
    const slot = this.#slot(handle, argName);
    return slot.released || slot.value === undefined ? { live: false, tombstone: slot.tombstone } : { live: true, value: slot.value };
  }

  /**
   * Frees a live handle, keeping `tombstone` for lookup(); later uses of it are
   * ALREADY_RELEASED until the slot is reused (not before all MAX_SLOTS slots exist), then
   * INVALID_HANDLE.
   */
  remove(handle: number, argName = "handle", tombstone?: E): T {
    const value = this.get(handle, argName);
    const index = (handle & SLOT_MASK) - 1;
    const slot = this.#slots[index]!;
    slot.value = undefined;
    slot.released = true;
    slot.tombstone = tombstone;
    this.#free.push(index);
    this.#liveSlots.delete(index);
    return value;
  }

  /** Replaces the tombstone of a released handle whose slot was not reused since; else does nothing. */
  mark(handle: number, tombstone: E): void {
    const slot = this.#slots[(handle & SLOT_MASK) - 1];
    if (slot?.released && slot.generation === handle >>> SLOT_BITS) slot.tombstone = tombstone;
  }

  /** Every live [handle, value] pair, oldest first. */
  *entries(): IterableIterator<[number, T]> {
    for (const i of this.#liveSlots) {
      const slot = this.#slots[i]!;
      yield [(slot.generation << SLOT_BITS) | (i + 1), slot.value!];
    }
  }

  #slot(handle: number, argName: string): Slot<T, E> {
    if (!Number.isInteger(handle) || handle <= 0 || handle > 0x7fffffff) {
      throw new LockhostError("INVALID_HANDLE", `${argName} ${handle} is not a handle (handles are positive)`);
    }
    const slot = this.#slots[(handle & SLOT_MASK) - 1];
    if (!slot || slot.generation !== handle >>> SLOT_BITS) {
      throw new LockhostError("INVALID_HANDLE", `${argName} ${handle} was not issued to this guest, or is stale`);
    }
    return slot;
  }
}
