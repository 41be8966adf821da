// Where one LockService is in its life: open, closing (no new acquisitions; leases held can
// still renew and release) or closed (every call rejects with CLOSED), and the acquisitions in
// flight that close() waits for. One job, kept apart from the service's other state (core.ts).
import { LockhostError } from "../../kit/errors.js";

/** One service's open, closing and closed states and its attempts in flight. */
export class ServiceLife {
  /**
   * Acquisitions (and restores) waiting on the backend now; close() waits until none are. A
   * count, not a set of their promises: tracking a promise took a Set entry, a closure and a
   * `.then` per attempt.
   */
  #inFlight = 0;
  /** Resolves close()'s wait once #inFlight drops to 0 (set only while close() waits). */
  #drained: (() => void) | undefined = undefined;
  /** Set when close() starts: no new acquisitions; leases held can still renew and release. */
  closing = false;
  /** Set when close() is done: every call rejects with CLOSED. */
  closed = false;
  /** The first close() call's result, which later calls return. */
  closePromise: Promise<LockhostError[]> | undefined = undefined;

  /** Throws CLOSED once close() is done. */
  checkOpen(): void {
    if (this.closed) throw closedError();
  }

  /** An acquisition (or restore) starts asking the backend: close() waits for it (pair with attemptDone). */
  attemptStarted(): void {
    this.#inFlight++;
  }

  /** An acquisition that attemptStarted is over, lease handed out or given back. */
  attemptDone(): void {
    if (--this.#inFlight === 0 && this.#drained !== undefined) {
      const drained = this.#drained;
      this.#drained = undefined;
      drained();
    }
  }

  /** Resolves once no acquisition is in flight (close(): no new ones start once `closing` is set). */
  attemptsDrained(): Promise<void> {
    if (this.#inFlight === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const before = this.#drained;
      this.#drained = before === undefined ? resolve : () => (before(), resolve());
    });
  }
}

/** The error of every call made once the service is closing (acquisitions) or closed (the rest). */
export function closedError(): LockhostError {
  return new LockhostError("CLOSED", "the lock service is closed");
}
