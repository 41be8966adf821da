// The backend's health as the open dashboards see it: what /readyz would answer, asked once per
// HEALTH_EVERY_MS for all of them together, and only while one is open. Each change is pushed at
// once, so a banner appears within a check of an outage and goes within a check of recovery.
import type { LockService } from "../../locking/service.js";
import { readiness, type Readiness } from "../readiness.js";

/** How often the backend is asked while a dashboard is open. */
export const HEALTH_EVERY_MS = 2_000;

/** The health a dashboard is told: readiness, and since when it has been so (this host's clock). */
export type Health = Readiness & { readonly sinceMs: number };

/** One backend's health, checked while anyone watches. */
export class HealthWatch {
  #last: Health | undefined;
  readonly #watchers = new Set<(health: Health) => void>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(private readonly service: LockService) {}

  /** The last answer (undefined before the first). */
  get last(): Health | undefined {
    return this.#last;
  }

  /** Calls `watcher` with each change (and the first answer); returns the function that stops it. */
  watch(watcher: (health: Health) => void): () => void {
    this.#watchers.add(watcher);
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => void this.#check(), HEALTH_EVERY_MS);
      this.#timer.unref();
      void this.#check();
    }
    return () => {
      this.#watchers.delete(watcher);
      if (this.#watchers.size > 0) return;
      clearInterval(this.#timer);
      this.#timer = undefined;
      // Unwatched, it goes stale: the next dashboard waits for a fresh answer.
      this.#last = undefined;
    };
  }

  async #check(): Promise<void> {
    // A check that outlasts the interval (a backend that times out) is not joined by another.
    if (this.#checking) return;
    this.#checking = true;
    try {
      const now = await readiness(this.service);
      if (this.#watchers.size === 0) return;
      const last = this.#last;
      if (last !== undefined && last.ok === now.ok && (now.ok || (!last.ok && last.message === now.message))) return;
      const health: Health = { ...now, sinceMs: last !== undefined && last.ok === now.ok ? last.sinceMs : Date.now() };
      this.#last = health;
      for (const watcher of this.#watchers) watcher(health);
    } finally {
      this.#checking = false;
    }
  }
}
