// Whether the backend answers, as the host tells its operator: checked when the host starts (a
// server that refuses for good, such as a refused password, fails the start at once; one that
// cannot be reached yet, down or behind a host name that does not resolve yet, is a warning and
// the host starts and waits), then every few seconds, logging each change once: down at warn,
// back at info.
import type { Logger } from "pino";
import { isPermanent, LockhostError, toLockhostError } from "../kit/errors.js";
import type { LockService } from "./locking/service.js";

/** How often a running host checks its backend. */
export const HEALTH_CHECK_EVERY_MS = 5_000;

/** The backend's health as last checked. */
export class BackendHealth {
  #up: boolean | undefined;
  #timer: NodeJS.Timeout | undefined;

  private constructor(
    private readonly locks: LockService,
    private readonly log: Logger,
  ) {}

  /**
   * Checks the backend once. Throws CONFIG_INVALID, naming `where` ("lockhost.toml: [locking.pg]"),
   * when the fault is permanent; logs a warning and returns when the server does not answer.
   */
  static async atStart(locks: LockService, log: Logger, where: string): Promise<BackendHealth> {
    const health = new BackendHealth(locks, log);
    try {
      await locks.ping();
      health.#up = true;
    } catch (err) {
      const e = toLockhostError(err);
      if (isPermanent(e)) {
        throw new LockhostError("CONFIG_INVALID", `${where}: the ${locks.backendKind} backend refused this host for good, so retrying cannot help: ${e.message}`, { cause: e });
      }
      health.#up = false;
      log.warn({ backend: locks.backendKind, err: e.message }, `the ${locks.backendKind} backend does not answer at start; the host starts and waits (lock calls fail with BACKEND_UNAVAILABLE and /readyz answers 503 until it answers)`);
    }
    return health;
  }

  /** Whether the backend answered the last check. */
  get up(): boolean {
    return this.#up === true;
  }

  /** Checks every HEALTH_CHECK_EVERY_MS until stop(). */
  start(): void {
    this.#timer ??= setInterval(() => void this.check(), HEALTH_CHECK_EVERY_MS);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** Checks now; logs a change. Never rejects. */
  async check(): Promise<boolean> {
    let error: string | undefined;
    try {
      await this.locks.ping();
    } catch (err) {
      error = toLockhostError(err).message;
    }
    const up = error === undefined;
    if (up !== this.#up) {
      if (up) this.log.info({ backend: this.locks.backendKind }, `the ${this.locks.backendKind} backend answers again`);
      else this.log.warn({ backend: this.locks.backendKind, err: error }, `the ${this.locks.backendKind} backend stopped answering; lock calls fail with BACKEND_UNAVAILABLE until it answers again`);
    }
    this.#up = up;
    return up;
  }
}
