// Whether the backend answers, as the host tells its operator: checked when the host starts (a
// server that refuses for good, such as a refused password, fails the start at once; one that
// cannot be reached yet, down or behind a host name that does not resolve yet, is a warning and
// the host starts and waits), then every few seconds, logging each change once: down at warn,
// back at info. An outage is said here and nowhere else: the parts of the host whose backend
// calls fail meanwhile (schedule ticks, campaigns) tell it (unavailable()) and log at debug, so
// an outage is one line down and one line back per host, however many schedules tick through it.
import type { Logger } from "pino";
import { isPermanent, LockhostError, toLockhostError } from "../kit/errors.js";
import type { LockService } from "./locking/service.js";

/** How often a running host checks a backend that answers. */
export const HEALTH_CHECK_EVERY_MS = 5_000;
/** How often it checks one that does not: the line saying it is back follows recovery closely. */
export const HEALTH_RECHECK_DOWN_MS = 1_000;

/**
 * What a part of the host that calls the backend needs of its health: to tell it of a call that
 * failed because the backend is unavailable, and whether it is known to be down.
 */
export interface OutageReporter {
  /** False while the backend is known not to answer. */
  readonly up: boolean;
  /** A backend call failed with BACKEND_UNAVAILABLE: checks the backend now, unless it is known down. */
  unavailable(err: LockhostError): void;
}

/** Whether `err` is the backend being unavailable (an outage), as opposed to a fault of the call. */
export function isOutage(err: LockhostError): boolean {
  return err.code === "BACKEND_UNAVAILABLE";
}

/** The backend's health as last checked. */
export class BackendHealth implements OutageReporter {
  #up: boolean | undefined;
  #timer: NodeJS.Timeout | undefined;
  #running = false;
  /** The check under way: reports that arrive meanwhile share it. */
  #checking: Promise<boolean> | undefined;
  readonly #onBack = new Set<() => void>();

  private constructor(
    private readonly locks: LockService,
    private readonly log: Logger,
  ) {}

  /**
   * Checks the backend once. Throws CONFIG_INVALID, naming `where` ("lockhost.toml: [locking.pg]"),
   * when the server refuses for good; logs a warning and returns when it cannot be reached.
   */
  static async atStart(locks: LockService, log: Logger, where: string): Promise<BackendHealth> {
    const health = new BackendHealth(locks, log);
    try {
      await locks.ping();
      health.#up = true;
    } catch (err) {
      const e = toLockhostError(err);
      if (isPermanent(e)) {
        throw new LockhostError(
          "CONFIG_INVALID",
          `${where}: the ${locks.backendName} backend refused this host for good, so retrying cannot help: ${e.message}`,
          { cause: e },
        );
      }
      health.#up = false;
      log.warn(
        { backend: locks.backendName, err: e.message },
        `the ${locks.backendName} backend does not answer at start; the host starts and waits (lock calls fail with BACKEND_UNAVAILABLE and /readyz ` +
          `answers 503 until it answers)`,
      );
    }
    return health;
  }

  /** Whether the backend answered the last check. */
  get up(): boolean {
    return this.#up === true;
  }

  /** Checks every HEALTH_CHECK_EVERY_MS (HEALTH_RECHECK_DOWN_MS while down) until stop(). */
  start(): void {
    this.#running = true;
    this.#arm();
  }

  stop(): void {
    this.#running = false;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Calls `listener` each time the backend answers again after not answering; returns the function that stops. */
  onBack(listener: () => void): () => void {
    this.#onBack.add(listener);
    return () => this.#onBack.delete(listener);
  }

  unavailable(_err: LockhostError): void {
    // Known down: the periodic check finds the recovery; nothing to say again.
    if (this.#up === false) return;
    void this.check();
  }

  /** Checks now (or joins the check under way); logs a change. Never rejects. */
  check(): Promise<boolean> {
    this.#checking ??= this.#check().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  async #check(): Promise<boolean> {
    let error: string | undefined;
    try {
      await this.locks.ping();
    } catch (err) {
      error = toLockhostError(err).message;
    }
    const up = error === undefined;
    const was = this.#up;
    this.#up = up;
    if (up !== was) {
      const kind = this.locks.backendName;
      if (up) this.log.info({ backend: kind }, `the ${kind} backend answers again`);
      else
        this.log.warn({ backend: kind, err: error }, `the ${kind} backend stopped answering; lock calls fail with BACKEND_UNAVAILABLE until it answers again`);
      // The pace changes with the state: sooner while down.
      if (this.#running) this.#arm();
      if (up) for (const listener of this.#onBack) this.#tell(listener);
    }
    return up;
  }

  /** A listener's fault is logged: it must not fail the check (nobody awaits the timer's). */
  #tell(listener: () => void): void {
    try {
      listener();
    } catch (err) {
      this.log.error({ err: toLockhostError(err).message }, "a backend-health listener threw");
    }
  }

  #arm(): void {
    clearTimeout(this.#timer);
    if (!this.#running) return;
    this.#timer = setTimeout(() => void this.check().then(() => this.#arm()), this.#up === false ? HEALTH_RECHECK_DOWN_MS : HEALTH_CHECK_EVERY_MS);
    this.#timer.unref();
  }
}
