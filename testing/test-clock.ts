// The memory backend's clock in a guest test: real time plus whatever the test has advanced it
// by, so a lease can be made to end on the backend without waiting for it.
import { LockhostError } from "../kit/errors.js";

/**
 * The clock a test guest's memory backend decides expiry by (MemoryBackendOptions.now): it runs
 * with real time, and advance() moves it forward at once. Only the backend's decisions move with
 * it (a lease past its TTL is free for the next taker, a renewal of it is refused); the host's own
 * timers (keepalive renewals, waits, call time limits) keep real time.
 */
export interface TestClock {
  /** The backend's time: whole ms since the epoch, never going back. */
  now(): number;
  /** How far advance() has moved the clock ahead of real time, in ms. */
  readonly advancedMs: number;
  /**
   * Moves the clock `ms` forward: every lease with less than that left ends now on the backend,
   * as if that much time had passed. INVALID_ARGUMENT for anything but a whole number of ms ≥ 0.
   */
  advance(ms: number): void;
}

/** The TestClock of one test guest. */
export class AdvancingClock implements TestClock {
  #advancedMs = 0;

  now(): number {
    return Math.floor(performance.timeOrigin + performance.now()) + this.#advancedMs;
  }

  get advancedMs(): number {
    return this.#advancedMs;
  }

  advance(ms: number): void {
    if (!Number.isSafeInteger(ms) || ms < 0) {
      throw new LockhostError("INVALID_ARGUMENT", `clock.advance(ms): ms must be a whole number of ms, 0 or more, got ${String(ms)}`);
    }
    this.#advancedMs += ms;
  }
}
