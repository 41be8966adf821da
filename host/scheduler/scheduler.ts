// Runs scheduled exports. A tick first reserves a free instance of its plugin, waiting for one
// up to a quarter of its period, or half its lock's TTL when that is less (none free by then: it
// is skipped as an overlap, and takes no lock). With a global hint it then runs only on the node
// that wins the schedule's lock, and only if the lock is still held, with time left, when the
// export is entered. The winner holds the lock until half a period after the tick, or until its
// TTL ends when that comes first; a node's wait for an instance ends while the winner's lock
// certainly still holds, so that wait cannot make it run the same tick again. A job never runs
// without its lock.
import { EventEmitter } from "node:events";
import { isDeepStrictEqual } from "node:util";
import type { Logger } from "pino";
import type { ScheduledConfig } from "../config/types.js";
import { toLockhostError } from "../../kit/errors.js";
import { isOutage, type OutageReporter } from "../backend-health.js";
import type { Lease } from "../locking/lease.js";
import { qualify } from "../locking/scope.js";
import type { LockService } from "../locking/service.js";
import type { GuestInstance, GuestReservation } from "../runtime/guest-instance.js";
import { tickClock, type TickClock } from "./next-tick.js";
import { Leaders } from "./leaders.js";
import { traceTick } from "../tracing/tracer.js";

/** What happened to one tick on this node. */
export type TickOutcome =
  /** The export ran and returned. */
  | "ran"
  /** The export ran and failed (trap, time limit, crash). */
  | "failed"
  /** Another node holds the schedule's lock (leader_only: another node leads). */
  | "skipped_contended"
  /**
   * The previous tick of this schedule is still running here, or every instance of its plugin is
   * busy (`instances`): the tick took no lock.
   */
  | "skipped_overlap"
  /**
   * The schedule lock (or leadership) was lost, or had no time left, when the export was about
   * to be entered: the export was not called.
   */
  | "skipped_lost"
  /** The backend failed; the tick was not run. */
  | "skipped_error";

/** Every TickOutcome, in a record so that a new outcome fails to compile here until listed. */
export const TICK_OUTCOMES = Object.keys({ ran: 1, failed: 1, skipped_contended: 1, skipped_overlap: 1, skipped_error: 1, skipped_lost: 1 } satisfies Record<
  TickOutcome,
  1
>) as readonly TickOutcome[];

/** How many ticks of one schedule had each outcome on this node since its scheduler was made. */
export type TickCounts = Readonly<Record<TickOutcome, number>>;

/**
 * Emitted as "tick" after every tick. A listener that throws is logged and ignored: it
 * cannot fail the tick, keep its lock held or reject idle().
 */
export interface TickEvent {
  /** The schedule's id ([[scheduled]] id). */
  readonly id: string;
  /** The scheduled fire time, epoch ms: the same on every node for the same tick. */
  readonly tickAtMs: number;
  /** What happened to the tick on this node. */
  readonly outcome: TickOutcome;
  /** The schedule lock's fence when this node ran the tick under it. */
  readonly fence?: number;
  /**
   * True when the schedule lock was lost while the export ran (a renewal refused or not
   * confirmed, or, without keepalive, its TTL ran out): another node may have run the tick too.
   */
  readonly lockLost?: boolean;
  /** How long the export ran, in ms, when it ran here (outcome ran or failed). */
  readonly runMs?: number;
}

/** What running a tick's export came to (skipped_lost: it was not entered). */
interface Invoked {
  readonly outcome: "ran" | "failed" | "skipped_lost";
  readonly runMs?: number;
}

/** What the scheduler needs from its host. */
export interface SchedulerDeps {
  /** Where schedule locks are taken (as plugin scope "lockhost"). */
  readonly locks: LockService;
  /** The running guest of a plugin (its pool of instances): a tick reserves a free one. */
  readonly guest: (plugin: string) => GuestInstance;
  /** Where skipped, failed and contended ticks are logged. */
  readonly log: Logger;
  /**
   * Who says it when the backend is down (the host's BackendHealth, one line per outage and
   * host): ticks and campaigns that fail for an outage are then only counted (ticks()) and
   * logged at debug. Without one, each such tick is logged at error.
   */
  readonly health?: OutageReporter;
}

interface State {
  /** Replaced by update() when a reload changes the schedule (a running tick keeps the one it started with). */
  config: ScheduledConfig;
  clock: TickClock;
  timer?: NodeJS.Timeout;
  /** The fire time the timer is armed for. */
  armedAt?: number;
  /** The running tick; never rejects. */
  running?: Promise<void>;
  /** The running tick is still waiting for the backend to answer for its lock. */
  locking?: boolean;
  /** Ticks skipped in a row for want of a free instance: the first is said at warn, the rest at debug. */
  busySkips: number;
}

/**
 * A free instance of `guest` reserved now, or as soon as one is free within `waitMs`; undefined
 * when none is by then, or when `signal` aborts first.
 */
function reserveWithin(guest: GuestInstance, waitMs: number, signal: AbortSignal): Promise<GuestReservation | undefined> {
  const now = guest.reserve();
  if (now || !(waitMs > 0) || signal.aborted) return Promise.resolve(now);
  return new Promise((resolve) => {
    const done = (r: GuestReservation | undefined): void => {
      clearTimeout(timer);
      stopListening();
      signal.removeEventListener("abort", abort);
      resolve(r);
    };
    const abort = (): void => done(undefined);
    const stopListening = guest.onFree(() => {
      const r = guest.reserve();
      if (r) done(r);
    });
    const timer = setTimeout(() => done(guest.reserve()), waitMs);
    signal.addEventListener("abort", abort, { once: true });
  });
}

/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** The election a leader_only schedule runs under: its `election`, else its id. */
export const electionOf = (config: ScheduledConfig): string => config.election ?? config.id;

/** The lock name a schedule's ticks are coordinated on. */
export const scheduleLockKey = (id: string): string => `schedule:${id}`;

/** The full name of schedule `id`'s lock, as status and the logs show it: "lockhost:schedule:<id>". */
export const scheduleLockName = (id: string): string => qualify(scheduleLockKey(id), { plugin: "lockhost" });

/** The schedule id whose lock `name` (a full lock name) is, or undefined when it is no schedule's lock. */
export function scheduleOfLock(name: string): string | undefined {
  const prefix = scheduleLockName("");
  return name.startsWith(prefix) && name.length > prefix.length ? name.slice(prefix.length) : undefined;
}

/** Fires every configured schedule; emits "tick" with a TickEvent. */
export class Scheduler extends EventEmitter<{ tick: [TickEvent] }> {
  readonly #deps: SchedulerDeps;
  readonly #states: State[];
  /** Leases held past their tick until half a period has passed, released by a timer. */
  readonly #parked = new Map<Lease, NodeJS.Timeout>();
  #started = false;
  #warnedLocal = false;
  /** The campaigns of leader_only schedules. */
  readonly #leaders: Leaders;
  /** Ends the waits of ticks for a free instance when the scheduler stops. */
  #stopping = new AbortController();
  /** Per plugin, ticks holding a reserved instance while they wait for the backend to give their lock. */
  readonly #locking = new Map<string, number>();
  /** Running ticks of schedules a reload removed (idle() waits for them too). */
  readonly #retired = new Set<Promise<void>>();
  /** Ticks by schedule and outcome: an outage's skips are counted here rather than logged one by one. */
  readonly #counts = new Map<string, Record<TickOutcome, number>>();

  constructor(schedules: readonly ScheduledConfig[], deps: SchedulerDeps) {
    super();
    this.#deps = deps;
    this.#states = schedules.map((config) => ({ config, clock: tickClock(config.schedule), busySkips: 0 }));
    for (const { id } of schedules) this.#counts.set(id, Object.fromEntries(TICK_OUTCOMES.map((o) => [o, 0])) as Record<TickOutcome, number>);
    this.#leaders = new Leaders(deps.locks, deps.log, deps.health);
  }

  /** How many ticks of each schedule (by id) had each outcome on this node so far: a snapshot. */
  ticks(): Readonly<Record<string, TickCounts>> {
    return Object.fromEntries([...this.#counts].map(([id, counts]) => [id, { ...counts }]));
  }

  /** Arms every schedule, and campaigns for the elections of leader_only ones. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    if (this.#stopping.signal.aborted) this.#stopping = new AbortController();
    this.#leaders.start(
      this.#states
        .filter((s) => s.config.hint === "leader_only")
        .map(({ config }) => ({ name: electionOf(config), ttlMs: config.ttlMs, plugin: config.plugin })),
    );
    for (const state of this.#states) this.#arm(state, Date.now());
  }

  /**
   * Runs `schedules` from now on (a reload): a schedule whose entry is unchanged keeps its timer;
   * a changed one fires next at its new clock's first time at or after the tick it was armed for
   * (so the tick it waited for is neither fired twice nor skipped when both clocks have it); an
   * added one fires at its first time after now; a removed one fires no more (a running tick of
   * it finishes, idle() waits for it) and its leader_only election is resigned. Counts are kept.
   */
  update(schedules: readonly ScheduledConfig[]): { added: string[]; changed: string[]; removed: string[] } {
    const next = new Map(schedules.map((c) => [c.id, c]));
    const out = { added: [] as string[], changed: [] as string[], removed: [] as string[] };
    for (const state of [...this.#states]) {
      const config = next.get(state.config.id);
      if (config === undefined) {
        clearTimeout(state.timer);
        this.#states.splice(this.#states.indexOf(state), 1);
        if (state.running) {
          const retired: Promise<void> = state.running.finally(() => this.#retired.delete(retired));
          this.#retired.add(retired);
        }
        out.removed.push(state.config.id);
      } else if (!isDeepStrictEqual(config, state.config)) {
        const clock = tickClock(config.schedule);
        state.config = config;
        state.clock = clock;
        out.changed.push(config.id);
        if (this.#started) {
          clearTimeout(state.timer);
          const from = state.armedAt === undefined ? Date.now() : state.armedAt - 1;
          this.#armAt(state, clock.next(from));
        }
      }
    }
    for (const config of schedules) {
      if (this.#states.some((s) => s.config.id === config.id)) continue;
      const state: State = { config, clock: tickClock(config.schedule), busySkips: 0 };
      this.#states.push(state);
      if (!this.#counts.has(config.id)) this.#counts.set(config.id, Object.fromEntries(TICK_OUTCOMES.map((o) => [o, 0])) as Record<TickOutcome, number>);
      out.added.push(config.id);
      this.#arm(state, Date.now());
    }
    if (this.#started) {
      const leaderOnly = this.#states.filter((s) => s.config.hint === "leader_only");
      void this.#leaders.keepOnly(new Set(leaderOnly.map((s) => electionOf(s.config))));
      this.#leaders.start(leaderOnly.map(({ config }) => ({ name: electionOf(config), ttlMs: config.ttlMs, plugin: config.plugin })));
    }
    return out;
  }

  /** Stops firing new ticks; running ticks go on (see idle()). Leaderships are kept until releaseParked(). */
  stop(): void {
    this.#started = false;
    this.#stopping.abort();
    for (const state of this.#states) clearTimeout(state.timer);
  }

  /** Stops campaigning and resigns this node's leaderships, so another node's leader_only ticks start at once. */
  resignLeaders(): Promise<void> {
    return this.#leaders.stop();
  }

  /** The term this node leads `election` with, or undefined when it does not lead it. */
  leaderTerm(election: string): number | undefined {
    return this.#leaders.leadership(election)?.term;
  }

  /** Resolves when no tick is running; never rejects. */
  async idle(): Promise<void> {
    await Promise.all([...this.#states.map((s) => s.running), ...this.#retired]);
  }

  /** Releases the schedule locks still held after their ticks, and resigns this node's leaderships. */
  async releaseParked(): Promise<void> {
    const leases = [...this.#parked.keys()];
    await Promise.all([...leases.map((lease) => this.#unpark(lease)), this.resignLeaders()]);
  }

  /** Runs one tick of schedule `id` now, as if it fired at `tickAtMs` (for tests and `lockhost` tooling). */
  async runTick(id: string, tickAtMs: number = Date.now()): Promise<TickOutcome> {
    const state = this.#states.find((s) => s.config.id === id);
    if (!state) throw new Error(`no schedule with id ${id}`);
    return traceTick(state.config, tickAtMs, () => this.#fire(state, tickAtMs));
  }

  #arm(state: State, fromMs: number): void {
    if (!this.#started) return;
    this.#armAt(state, state.clock.next(fromMs));
  }

  #armAt(state: State, at: number): void {
    state.armedAt = at;
    const delay = at - Date.now();
    if (delay > MAX_TIMER_MS) {
      // setTimeout fires at once past 2^31-1 ms; wait in steps instead.
      state.timer = setTimeout(() => this.#armAt(state, at), MAX_TIMER_MS);
      return;
    }
    state.timer = setTimeout(
      () => {
        // Nobody awaits a timer's tick: a failure is logged, never an unhandled rejection.
        traceTick(state.config, at, () => this.#fire(state, at), true).catch((err: unknown) => {
          const e = toLockhostError(err);
          this.#deps.log.error({ schedule: state.config.id, tickAtMs: at, code: e.code, err: e.message }, "tick failed unexpectedly");
        });
        const now = Date.now();
        if (now > at) this.#sayNotFired(state, at, now);
        this.#arm(state, Math.max(at, now));
      },
      Math.max(0, delay),
    );
  }

  /**
   * A timer that fires past the next fire time (the event loop was blocked, or the process
   * stopped) does not fire the ticks it slept through: they are said here, one line for the run.
   */
  #sayNotFired(state: State, at: number, now: number): void {
    let missed = 0;
    let first: number | undefined;
    let last: number | undefined;
    try {
      for (let t = state.clock.next(at); t <= now && missed < 10_000; t = state.clock.next(t)) {
        first ??= t;
        last = t;
        missed++;
      }
    } catch {
      return;
    }
    if (missed === 0) return;
    this.#deps.log.warn(
      { schedule: state.config.id, firstTickAtMs: first, lastTickAtMs: last, ticks: missed, lateMs: now - at },
      `ticks not fired on this node: its timer fired ${now - at} ms late (a blocked event loop), past ${missed} tick${missed === 1 ? "" : "s"} of the schedule`,
    );
  }

  async #fire(state: State, tickAtMs: number): Promise<TickOutcome> {
    const { id } = state.config;
    if (state.running) {
      // While the backend is down, or slow to answer for the previous tick's lock (a frozen
      // server, not known down yet), the previous tick waits on it: the outage is said once, by
      // the host's health.
      const quiet = this.#deps.health?.up === false || state.locking === true;
      this.#deps.log[quiet ? "debug" : "warn"]({ schedule: id, tickAtMs }, "tick skipped: the previous tick of this schedule is still running");
      return this.#emit(id, tickAtMs, "skipped_overlap");
    }
    const run = this.#tick(state, tickAtMs);
    // idle() awaits this: it must not reject (the caller of #fire sees the failure).
    state.running = run.then(
      () => undefined,
      () => undefined,
    );
    try {
      return await run;
    } finally {
      state.running = undefined;
    }
  }

  async #tick(state: State, tickAtMs: number): Promise<TickOutcome> {
    // The entry and clock the tick started with, whatever a reload changes meanwhile.
    const { config, clock } = state;
    const { locks, log } = this.#deps;
    if (config.hint === "leader_only") {
      // No lock per tick: the leadership, held in the background, is the schedule's lock (handle 0).
      const leadership = this.#leaders.leadership(electionOf(config));
      if (!leadership) return this.#emit(config.id, tickAtMs, "skipped_contended");
      const instance = await this.#reserve(state, tickAtMs);
      if (!instance) return this.#emit(config.id, tickAtMs, "skipped_overlap");
      return this.#emit(config.id, tickAtMs, await this.#invoke(config, tickAtMs, instance, leadership.lease), leadership.term);
    }
    // Before the lock: a tick that could not run now must not hold it (another node may run it).
    const instance = await this.#reserve(state, tickAtMs);
    if (!instance) return this.#emit(config.id, tickAtMs, "skipped_overlap");
    if (!this.#coordinated(config)) return this.#emit(config.id, tickAtMs, await this.#invoke(config, tickAtMs, instance));

    let lease: Lease | null;
    state.locking = true;
    this.#locking.set(config.plugin, (this.#locking.get(config.plugin) ?? 0) + 1);
    try {
      lease = await locks.tryLock(scheduleLockKey(config.id), {
        ttlMs: config.ttlMs,
        scope: { plugin: "lockhost" },
        plugin: config.plugin,
        keepalive: config.keepalive,
        // Still a try: fair only makes the tick yield to whoever waits for the key.
        fair: config.fair,
      });
    } catch (err) {
      instance.cancel();
      const e = toLockhostError(err);
      const { health } = this.#deps;
      if (health && isOutage(e)) {
        // One line per outage, said by the host's health; each tick it costs is counted.
        log.debug({ schedule: config.id, tickAtMs, code: e.code, err: e.message }, "tick skipped: the backend is unavailable");
        health.unavailable(e);
      } else {
        log.error({ schedule: config.id, tickAtMs, code: e.code, err: e.message }, "tick skipped: the schedule lock could not be taken");
      }
      return this.#emit(config.id, tickAtMs, "skipped_error");
    } finally {
      state.locking = false;
      this.#locking.set(config.plugin, this.#locking.get(config.plugin)! - 1);
    }
    if (!lease) {
      instance.cancel();
      log.info({ schedule: config.id, tickAtMs }, "tick skipped: another node holds the schedule lock");
      return this.#emit(config.id, tickAtMs, "skipped_contended");
    }
    let invoked: Invoked = { outcome: "failed", runMs: 0 };
    let lockLost = false;
    const running = lease;
    const stopWatching = running.onLost((reason) => {
      lockLost = true;
      log.error(
        { schedule: config.id, tickAtMs, lock: running.name, fence: running.fence, err: reason.message },
        "schedule lock lost while the job ran: another node may run this tick too (the job is told through lockhost_on_lost(0))",
      );
    });
    try {
      log.info({ schedule: config.id, tickAtMs, lock: lease.name, fence: lease.fence }, "schedule lock taken; running");
      invoked = await this.#invoke(config, tickAtMs, instance, lease);
    } finally {
      stopWatching();
      // Parked, the lock only has to outlive half a period: it needs no more renewals.
      if (lease.state === "held" && lease.keepalive) locks.setKeepalive(lease, false);
      // Whatever happened above, the lock is let go (after half a period).
      this.#park(lease, () => tickAtMs + (clock.next(tickAtMs) - tickAtMs) / 2);
    }
    // Lost before the export was entered: said once, as a tick not run.
    return this.#emit(config.id, tickAtMs, invoked, lease.fence, lockLost && invoked.outcome !== "skipped_lost");
  }

  /**
   * How long after its fire time the winner of a tick certainly holds its lock: until half a
   * period (then it is parked and let go), or its TTL when that is less (a lock without keepalive
   * ends then). Anything that cannot be computed: 0 (no late start at all).
   */
  #heldFor(state: State, tickAtMs: number): number {
    try {
      const periodMs = state.clock.next(tickAtMs) - tickAtMs;
      const heldMs = Math.min(periodMs / 2, state.config.ttlMs);
      return heldMs > 0 ? heldMs : 0;
    } catch {
      return 0;
    }
  }

  /**
   * A free instance of the tick's plugin, reserved for it. Ticks that fire together on one plugin
   * take turns: a tick waits for an instance up to half of what #heldFor says after its fire time
   * (never holding its lock meanwhile; a late start then still finds the winner's lock, so it
   * cannot run a tick twice). None by then, or the scheduler stopped: undefined, said.
   */
  async #reserve(state: State, tickAtMs: number): Promise<GuestReservation | undefined> {
    const { config } = state;
    const guest = this.#deps.guest(config.plugin);
    const waitMs = tickAtMs + this.#heldFor(state, tickAtMs) / 2 - Date.now();
    const reserved = await reserveWithin(guest, waitMs, this.#stopping.signal);
    if (reserved) {
      state.busySkips = 0;
      return reserved;
    }
    // Said once per run of skips; quiet when the backend is down, or when the busy instance is
    // held by a tick waiting for its lock from the backend (a slow backend, said by the health).
    const quiet = state.busySkips++ > 0 || this.#deps.health?.up === false || (this.#locking.get(config.plugin) ?? 0) > 0;
    this.#deps.log[quiet ? "debug" : "warn"](
      { schedule: config.id, tickAtMs, plugin: config.plugin, instances: guest.size },
      `tick skipped: every instance of plugin ${config.plugin} is busy (instances = ${guest.size}); it took no lock. More instances let its ` +
        `schedules run beside each other`,
    );
    return undefined;
  }

  /** Whether a schedule's ticks go through its lock (prefer_global falls back once, loudly). */
  #coordinated(config: ScheduledConfig): boolean {
    if (config.hint === "node_local") return false;
    if (config.hint === "require_global" || this.#deps.locks.distributed) return true;
    if (!this.#warnedLocal) {
      this.#warnedLocal = true;
      this.#deps.log.warn(
        { schedule: config.id, backend: this.#deps.locks.backendName },
        "prefer_global: the backend is not distributed, so prefer_global schedules run node_local on every node",
      );
    }
    return false;
  }

  /** Calls the tick's export on its reserved instance (under `scheduleLease`, checked at entry). */
  async #invoke(config: ScheduledConfig, tickAtMs: number, instance: GuestReservation, scheduleLease?: Lease): Promise<Invoked> {
    const started = performance.now();
    try {
      await instance.call(config.export, [], scheduleLease && { scheduleLease });
      return { outcome: "ran", runMs: performance.now() - started };
    } catch (err) {
      const e = toLockhostError(err);
      if (e.code === "LOST" && e.details?.entered === 0) {
        this.#deps.log.error(
          { schedule: config.id, tickAtMs, lock: scheduleLease?.name, fence: scheduleLease?.fence, err: e.message },
          "tick not run: its schedule lock was gone when the job was to start",
        );
        return { outcome: "skipped_lost" };
      }
      this.#deps.log.error({ schedule: config.id, code: e.code, err: e.message }, "scheduled call failed");
      return { outcome: "failed", runMs: performance.now() - started };
    }
  }

  /** Holds `lease` until `untilMs()` (released at once if that cannot be computed or has passed). */
  #park(lease: Lease, untilMs: () => number): void {
    let delay: number;
    try {
      delay = untilMs() - Date.now();
    } catch {
      delay = 0;
    }
    if (!(delay > 0)) {
      void this.#unpark(lease);
      return;
    }
    this.#parked.set(
      lease,
      setTimeout(() => void this.#unpark(lease), delay),
    );
  }

  async #unpark(lease: Lease): Promise<void> {
    clearTimeout(this.#parked.get(lease));
    this.#parked.delete(lease);
    const e = await this.#deps.locks.releaseIfHeld(lease);
    if (!e) return;
    const { health, log } = this.#deps;
    if (health && isOutage(e)) {
      // The lock service releases it once the backend answers (at the latest, it expires at its
      // TTL); the outage itself was said once.
      log.debug(
        { lock: lease.name, code: e.code, err: e.message },
        "schedule lock not released (the backend is unavailable); it is released once the backend answers",
      );
      health.unavailable(e);
    } else {
      log.warn(
        { lock: lease.name, code: e.code, err: e.message },
        "schedule lock release failed; it is released once the backend answers, or expires at its TTL",
      );
    }
  }

  /** Counts and tells a tick's outcome (with its run time when its export ran); returns the outcome. */
  #emit(id: string, tickAtMs: number, result: TickOutcome | Invoked, fence?: number, lockLost = false): TickOutcome {
    const { outcome, runMs } = typeof result === "string" ? { outcome: result, runMs: undefined } : result;
    const counts = this.#counts.get(id);
    if (counts) counts[outcome]++;
    try {
      this.emit("tick", {
        id,
        tickAtMs,
        outcome,
        ...(fence !== undefined && { fence }),
        ...(lockLost && { lockLost }),
        ...(runMs !== undefined && { runMs }),
      });
    } catch (err) {
      // A listener's bug must not fail the tick, nor (on the timer path) the process.
      this.#deps.log.error(
        { schedule: id, tickAtMs, outcome, err: err instanceof Error ? err.message : String(err) },
        "a tick listener threw; the tick itself is done",
      );
    }
    return outcome;
  }
}
