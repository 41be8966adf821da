// The leaderships behind "leader_only" schedules: the host campaigns once per election in the
// background and keeps campaigning after each loss, so a tick only asks whether this node leads
// now (no lock traffic per tick); ticks move to another node when this one resigns or is lost.
import type { Logger } from "pino";
import { toLockhostError } from "../../kit/errors.js";
import { isOutage, type OutageReporter } from "../backend-health.js";
import type { Leadership, LockService } from "../locking/service.js";

/** What one election's campaign is given. */
export interface ElectionSpec {
  readonly name: string;
  /** The leadership's lease (kept alive while leading). */
  readonly ttlMs: number;
  /** Recorded as the leader's plugin. */
  readonly plugin: string;
}

/** Pause after a failed campaign (backend down) before the next one. */
const RETRY_AFTER_MS = 1_000;

/** This host's campaigns, one per election, in the scheduler's plugin scope "lockhost". */
export class Leaders {
  readonly #locks: LockService;
  readonly #log: Logger;
  /** Says an outage once (see SchedulerDeps.health); a campaign that fails for one only logs at debug then. */
  readonly #health: OutageReporter | undefined;
  readonly #leading = new Map<string, Leadership>();
  #stop = new AbortController();
  readonly #campaigns = new Set<Promise<void>>();
  /** The elections campaigned for now, each with what ends its campaign alone: a second start() adds none twice. */
  readonly #running = new Map<string, AbortController>();

  constructor(locks: LockService, log: Logger, health?: OutageReporter) {
    this.#locks = locks;
    this.#log = log;
    this.#health = health;
  }

  /** Starts a campaign for each election (once per name). */
  start(elections: readonly ElectionSpec[]): void {
    if (this.#stop.signal.aborted) this.#stop = new AbortController();
    for (const e of elections) {
      if (this.#running.has(e.name)) continue;
      const own = new AbortController();
      this.#running.set(e.name, own);
      const run = this.#campaign(e, AbortSignal.any([this.#stop.signal, own.signal]));
      this.#campaigns.add(run);
      void run.finally(() => {
        this.#campaigns.delete(run);
        if (this.#running.get(e.name) === own) this.#running.delete(e.name);
      });
    }
  }

  /** Stops the campaigns of elections not in `names` and resigns their leaderships (a reload dropped their schedules). */
  async keepOnly(names: ReadonlySet<string>): Promise<void> {
    const dropped = [...this.#running].filter(([name]) => !names.has(name));
    for (const [name, own] of dropped) {
      own.abort();
      this.#running.delete(name);
    }
    const held = dropped.flatMap(([name]) => {
      const l = this.#leading.get(name);
      this.#leading.delete(name);
      return l ? [l] : [];
    });
    await Promise.all(held.map((l) => l.resign().catch(() => undefined)));
  }

  /** The leadership of `election` while this node holds it. */
  leadership(election: string): Leadership | undefined {
    const l = this.#leading.get(election);
    return l?.leading ? l : undefined;
  }

  /** Stops campaigning and resigns every leadership (another node takes over at once). */
  async stop(): Promise<void> {
    this.#stop.abort();
    const held = [...this.#leading.values()];
    this.#leading.clear();
    await Promise.all(held.map((l) => l.resign().catch(() => undefined)));
    await Promise.all([...this.#campaigns]);
  }

  async #campaign(e: ElectionSpec, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        const l = await this.#locks.campaign(e.name, { ttlMs: e.ttlMs, value: this.#locks.node, scope: { plugin: "lockhost" }, plugin: e.plugin, signal });
        if (signal.aborted) {
          await l.resign().catch(() => undefined);
          return;
        }
        this.#leading.set(e.name, l);
        this.#log.info({ election: e.name, term: l.term }, "this node leads the election: its leader_only schedules run here");
        await new Promise<void>((resolve) => {
          if (l.signal.aborted) return resolve();
          l.signal.addEventListener("abort", () => resolve(), { once: true });
        });
        if (this.#leading.get(e.name) === l) this.#leading.delete(e.name);
        if (!signal.aborted)
          this.#log.warn(
            { election: e.name, term: l.term, err: String((l.signal.reason as Error | undefined)?.message) },
            "leadership lost: campaigning again",
          );
      } catch (err) {
        if (signal.aborted) return;
        const x = toLockhostError(err);
        if (x.code === "CLOSED") return;
        // Bad input (an election name too long once prefixed, a backend without elections) is
        // the same on every try: say it once, loudly, rather than every second.
        if (!x.retryable && x.code !== "LOST") {
          this.#log.error({ election: e.name, code: x.code, err: x.message }, "campaign refused; its leader_only schedules will not run on this node");
          return;
        }
        if (this.#health && isOutage(x)) {
          // Once a second while the backend is down: the outage is said once, by the health.
          this.#log.debug({ election: e.name, code: x.code, err: x.message }, "campaign failed (the backend is unavailable); trying again");
          this.#health.unavailable(x);
        } else {
          this.#log.error({ election: e.name, code: x.code, err: x.message }, "campaign failed; trying again");
        }
        await sleep(RETRY_AFTER_MS, signal);
      }
    }
  }
}

/** Waits `ms`, or less when `signal` aborts first (stop() must not sit out a retry pause). */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
