// The setup every guest suite shares: per test, a fresh LockService on the memory backend and
// a captured log; after it, the guests it started are closed and no lock may be left held.
import { afterEach, beforeEach, expect } from "vitest";
import type { GuestInstance } from "../../host/runtime/guest-instance.js";
import { LockService } from "../../host/locking/service.js";
import { MemoryBackend } from "../../plugins/backends/memory/index.js";
import { captureLogger } from "./log.js";

/** What a test of a guest suite works with (valid inside a test). */
export interface GuestFixture {
  readonly locks: LockService;
  readonly log: ReturnType<typeof captureLogger>;
  /** Closes `guest` after the test. */
  track<G extends GuestInstance>(guest: G): G;
}

/** Registers the hooks in the enclosing describe (or file) and returns the fixture. */
export function guestFixture(node = "node-a"): GuestFixture {
  let locks: LockService | undefined;
  let log: ReturnType<typeof captureLogger> | undefined;
  const guests: GuestInstance[] = [];
  beforeEach(() => {
    log = captureLogger();
    locks = new LockService(new MemoryBackend(), { node });
  });
  afterEach(async () => {
    await Promise.all(guests.splice(0).map((g) => g.close()));
    // No test may leak a lock: every guest's locks are released by close().
    expect(locks!.heldCount).toBe(0);
    await locks!.close();
  });
  return {
    get locks() {
      return locks!;
    },
    get log() {
      return log!;
    },
    track(guest) {
      guests.push(guest);
      return guest;
    },
  };
}
