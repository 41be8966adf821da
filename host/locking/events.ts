// What happens to locks on one LockService, as events: for logs at debug and info, and for the
// admin dashboard's live feed. Emitting costs nothing while nobody listens (a size check), so
// the lock path pays only when an operator asked to see.

import type { LockKind } from "../../kit/kinds.js";

/** A lock event. Times are this host's clock (Date.now()); names are fully qualified. */
export type LockEvent = (
  | { readonly type: "acquired"; readonly name: string; readonly fence: number; readonly plugin: string; readonly ttlMs: number; readonly atMs: number }
  | { readonly type: "released"; readonly name: string; readonly fence: number; readonly plugin: string; readonly heldMs: number; readonly atMs: number }
  | {
      readonly type: "lost";
      readonly name: string;
      readonly fence: number;
      readonly plugin: string;
      readonly reason: string;
      readonly heldMs: number;
      readonly atMs: number;
    }
  | { readonly type: "force-released"; readonly name: string; readonly found: boolean; readonly atMs: number }
  | {
      readonly type: "waited";
      readonly name: string;
      readonly plugin: string;
      readonly waitedMs: number;
      readonly outcome: "acquired" | "timeout" | "failed";
      readonly atMs: number;
    }
  /** An attempt found the key held by someone else (each try of a waiting acquire is one): told only to a listener that names this type. */
  | { readonly type: "contended"; readonly name: string; readonly plugin: string; readonly atMs: number }
) & {
  /** The kind of lock, for a read/write lock or a semaphore; absent for a mutex (the default kind). */
  readonly kind?: LockKind;
};

/** Told of each lock event; must not throw (a listener that does is dropped from that event only). */
export type LockEventListener = (event: LockEvent) => void;

/** The kinds of event. */
export type LockEventType = LockEvent["type"];

/**
 * What a listener hears unless it names the types it wants: each lock's story. "contended" is
 * left out (one per attempt that found a key held: a count, not a story); name it to hear it.
 */
export const LOCK_EVENT_TYPES: readonly LockEventType[] = ["acquired", "released", "lost", "force-released", "waited"];

/** Every type a listener may name. */
export const ALL_LOCK_EVENT_TYPES: readonly LockEventType[] = [...LOCK_EVENT_TYPES, "contended"];

interface Subscription {
  readonly listener: LockEventListener;
  readonly types: ReadonlySet<LockEventType>;
}

/** The listeners of one service. */
export class LockEvents {
  readonly #subscriptions = new Set<Subscription>();
  /** Listeners per kind: the lock path asks wants(type) before it builds an event. */
  readonly #wanted = new Map<LockEventType, number>();

  /** Whether anyone listens to events of `type`. */
  wants(type: LockEventType): boolean {
    return (this.#wanted.get(type) ?? 0) > 0;
  }

  /** Adds `listener` for the events of `types`; returns the function that removes it. */
  on(listener: LockEventListener, types: readonly LockEventType[] = LOCK_EVENT_TYPES): () => void {
    const subscription: Subscription = { listener, types: new Set(types) };
    this.#subscriptions.add(subscription);
    for (const type of subscription.types) this.#wanted.set(type, (this.#wanted.get(type) ?? 0) + 1);
    return () => {
      if (!this.#subscriptions.delete(subscription)) return;
      for (const type of subscription.types) this.#wanted.set(type, this.#wanted.get(type)! - 1);
    };
  }

  emit(event: LockEvent): void {
    for (const { listener, types } of this.#subscriptions) {
      if (!types.has(event.type)) continue;
      try {
        listener(event);
      } catch {
        // A dashboard or logger bug must never break a lock operation.
      }
    }
  }
}
