// The host: wires a validated config to one LockService (shared by every guest), one pool of
// guest instances per plugin (`instances`, default 1), and the scheduler. Embedders use it
// directly; the CLI's `run` is a thin wrapper around it.
import { performance } from "node:perf_hooks";
import { isDeepStrictEqual } from "node:util";
import { pino, type Logger } from "pino";
import type { Registry } from "prom-client";
import { ActivityFeed } from "./admin/feed.js";
import { BackendHealth } from "./backend-health.js";
import { startAdminServer, type AdminServer, type AdminServerOptions } from "./admin/server.js";
import { lockMetrics, type HostCounters, type LockMetrics } from "./admin/metrics.js";
import { AdminAccess } from "./admin/access.js";
import { ADMIN_ROUTES } from "./admin/routes.js";
import { createBackend } from "./registry/create.js";
import { formatListen, isLoopbackHost } from "./config/listen.js";
import type { AdminSettings, LockhostConfig, ScheduledConfig } from "./config/types.js";
import { LockhostError, toLockhostError, type ErrorCode } from "../kit/errors.js";
import type { LockKind } from "../kit/kinds.js";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "./locking/service.js";
import type { GuestInstance, GuestValue } from "./runtime/guest-instance.js";
import type { GuestPool } from "./runtime/guest-pool.js";
import type { HostFunctions } from "./runtime/capabilities/functions.js";
import { startPluginGuest } from "./runtime/start-plugin.js";
import { logLockEvents } from "./lock-log.js";
import { NodePresence } from "./node-presence.js";
import { Scheduler } from "./scheduler/scheduler.js";
import type { GuestArg } from "./runtime/guest-strings.js";
import { expandScheduled, type DeclaredSchedule } from "./scheduler/declared.js";
import { loadConfig } from "./config/load.js";
import { fileSha256, reloadRefusal, type ReloadReport } from "./reload.js";
import { allProblems } from "./config/reader.js";
import { didYouMean } from "./suggest.js";

/** Options of Host.start. */
export interface HostOptions {
  /** Where logs go; default: pino on stdout at the config's log level. */
  readonly logger?: Logger;
  /**
   * A backend to use instead of the one the config names, e.g. one MemoryBackend shared by
   * two hosts in one process. The host does not close a backend it was given.
   */
  readonly backend?: LockBackend;
  /**
   * Host functions guests may call, by namespace: `{ billing: { charge } }`. A plugin's guest
   * may import a namespace its `functions` grants; a granted namespace missing here fails the
   * start (CONFIG_INVALID).
   */
  readonly functions?: HostFunctions;
  /**
   * What the admin listener's POST /reload runs (default: this host's reload()): `lockhost run
   * --local-nodes N` reloads every node of the process with it.
   */
  readonly reload?: () => Promise<unknown>;
}

/** What Host.start puts together, handed to the constructor whole. */
interface HostParts {
  readonly config: LockhostConfig;
  readonly log: Logger;
  readonly locks: LockService;
  readonly guests: Map<string, GuestPool>;
  /** The host made its backend (none was given), so stop() closes it. */
  readonly ownsBackend: boolean;
  readonly admin: AdminServer | undefined;
  readonly health: BackendHealth;
  readonly scheduler: Scheduler;
  readonly schedules: readonly ScheduledConfig[];
  readonly metrics: LockMetrics;
}

export type { ReloadReport } from "./reload.js";

/** A running lockhost: guests loaded, lock service up, scheduler ready (not started). */
export class Host {
  /** The validated, frozen config this host runs (source names its file, if any); a reload replaces it. */
  get config(): LockhostConfig {
    return this.#config;
  }
  #config: LockhostConfig;
  /** The host's logger (options.logger, or pino on stdout); guests log through children of it. */
  readonly log: Logger;
  /** The lock service every guest shares; embedders take locks through it too. */
  readonly locks: LockService;
  /**
   * Runs the config's [[scheduled]] exports: not started by Host.start, call
   * `scheduler.start()`; listen to its "tick" events; stop() stops it.
   */
  readonly scheduler: Scheduler;
  /**
   * The schedules this host runs: config.scheduled with each short entry (no schedule in the
   * TOML) replaced by the schedules its plugin declares (`lockhost_schedules()`).
   */
  get schedules(): readonly ScheduledConfig[] {
    return this.#schedules;
  }
  #schedules: readonly ScheduledConfig[];
  /**
   * The admin listener (stats, metrics, lock status, force-release), when the config has an
   * [admin] table; `admin.url` is its base URL, with the real port when the config said 0.
   * Started by Host.start, closed first by stop().
   */
  readonly admin: AdminServer | undefined;
  readonly #guests: Map<string, GuestPool>;
  readonly #ownsBackend: boolean;
  /** The embedder's host functions (a reload starts guests with them too). */
  #functions: HostFunctions = {};
  /** What each plugin declares (lockhost_schedules), read once per module: a reload keeps those of the plugins it keeps. */
  #declared = new Map<string, DeclaredSchedule[]>();
  /** Pools a reload replaced or removed, finishing their calls before they close. */
  readonly #draining = new Set<GuestPool>();
  /** The last reload asked for: reloads run one at a time, in order. */
  #reloads: Promise<unknown> = Promise.resolve();
  /** host.call() calls not settled yet; they never reject. stop() waits for them. */
  readonly #calls = new Set<Promise<void>>();
  #stopping?: Promise<readonly UnreleasedLock[]>;
  /** Checks the backend every few seconds and logs when it goes down or comes back. */
  readonly #health: BackendHealth;
  /** Warns when another live host uses this node name (distributed backends only). */
  readonly #presence: NodePresence | undefined;
  /** What `metrics` and the admin listener's /metrics show. */
  readonly #metrics: LockMetrics;

  private constructor(parts: HostParts) {
    const { config, log, locks, health } = parts;
    this.#config = config;
    this.log = log;
    this.locks = locks;
    this.admin = parts.admin;
    this.scheduler = parts.scheduler;
    this.#schedules = parts.schedules;
    this.#guests = parts.guests;
    this.#ownsBackend = parts.ownsBackend;
    this.#health = health;
    this.#metrics = parts.metrics;
    if (locks.distributed) {
      const presence = (this.#presence = new NodePresence(locks, log));
      // Also when the backend did not answer at start, and after an outage that cost the hold.
      health.onBack(() => void presence.claim());
      if (health.up) void presence.claim();
    }
  }

  /**
   * Creates the backend, loads and checks every plugin, checks that every scheduled export
   * exists, and starts the admin listener when the config has one. Rejects with CONFIG_INVALID
   * or ABI_UNSUPPORTED naming the plugin (or the [admin] listen address) at fault, after
   * closing whatever it had started.
   */
  static async start(config: LockhostConfig, options: HostOptions = {}): Promise<Host> {
    const log = options.logger ?? pino({ level: config.host.logLevel, base: { node: config.host.node } });
    const backend = options.backend ?? (await createBackend(config.locking, log, config.source));
    const { keepalive, waiting, delegation } = config.locking;
    const locks = new LockService(backend, { node: config.host.node, keepalive, waiting, delegation });
    logLockEvents(locks, log);
    // Before any guest starts: its calls are counted from the first.
    const metrics = lockMetrics(locks, config.host.node);
    const guests = new Map<string, GuestPool>();
    const declared = new Map<string, DeclaredSchedule[]>();
    let admin: AdminServer | undefined;
    let self: Host | undefined;
    let feed: ActivityFeed | undefined;
    let health: BackendHealth | undefined;
    let schedules: ScheduledConfig[] = [];
    let scheduler: Scheduler | undefined;
    let started = false;
    const counters: HostCounters = {
      ticks: () => scheduler?.ticks() ?? {},
      get backendUp() {
        return health?.up ?? false;
      },
    };
    metrics.showHost(counters);
    try {
      // First, so /livez answers while the backend is asked and plugins load (/readyz: "starting").
      if (config.admin) {
        feed = new ActivityFeed(locks);
        const reload = options.reload ?? (() => (self ? self.reload() : Promise.reject(new LockhostError("CLOSED", "the host is still starting"))));
        admin = await startAdmin(config.admin, locks, log, config, { feed, metrics, host: counters, started: () => started, reload });
      }
      // Before any guest: a backend that refuses this host for good fails the start at once.
      health = await BackendHealth.atStart(locks, log, `${config.source ?? "config"}: [locking.${backend.name}]`);
      const functions = options.functions ?? {};
      checkFunctionGrants(config, functions);
      for (const plugin of config.plugins) {
        const guest = await startPluginGuest(plugin, locks, log, functions, metrics.guest(plugin.name)).catch((e: unknown) =>
          Promise.reject(inFile(e, config.source)),
        );
        guests.set(plugin.name, guest);
      }
      schedules = await expandScheduled(config, guests, declared);
      checkScheduledExports(config, guests, schedules);
      // Its ticks that an outage skips are said once, by the health, and counted.
      scheduler = new Scheduler(schedules, { locks, guest: (p) => guestOf(guests, p), log, health });
      started = true;
    } catch (err) {
      await admin?.close();
      feed?.close();
      metrics.close();
      await Promise.all([...guests.values()].map((g) => g.close()));
      await locks.close({ closeBackend: !options.backend });
      throw err;
    }
    log.info({ backend: backend.name, plugins: [...guests.keys()], schedules: schedules.length, ...(admin && { admin: admin.url }) }, "lockhost host started");
    if (config.plugins.length === 0) {
      log.warn(
        `${config.source ?? "the config"} declares no [[plugins]]: this host runs no guest and fires no schedule; it only serves lock calls made ` +
          `through its API${admin ? " and admin listener" : ""}`,
      );
    }
    const host = (self = new Host({ config, log, locks, guests, ownsBackend: !options.backend, admin, health, scheduler, schedules, metrics }));
    host.#functions = options.functions ?? {};
    host.#declared = declared;
    health.start();
    // The dashboard shows this node's schedule runs beside its lock events.
    if (feed) host.scheduler.on("tick", (tick) => feed.tick(tick));
    host.scheduler.on("tick", (tick) => metrics.tick(tick));
    return host;
  }

  /**
   * The host's Prometheus metrics, a prom-client Registry of its own: the lock, guest, schedule
   * and backend series and the process's (`process_*`, `nodejs_*`), each labelled `node` and
   * `backend`, as docs/operators.md lists them; what the admin listener's /metrics shows, there
   * with or without an [admin] table. Serve `await host.metrics.metrics()` yourself, or merge it
   * with your own: `Registry.merge([register, host.metrics])` (docs/embedding.md).
   */
  get metrics(): Registry {
    return this.#metrics.registry;
  }

  /** The running guest of `plugin`: its pool of `instances` (size 1 by default); a call takes a free instance. */
  guest(plugin: string): GuestInstance {
    return guestOf(this.#guests, plugin);
  }

  /**
   * Calls `exportName` of `plugin` (see GuestInstance.call: numbers, and strings for an
   * export's `string` parameters). stop() lets a call in flight finish (up to its timeout);
   * once stop() has started, new calls reject with CLOSED.
   */
  call(plugin: string, exportName: string, args: readonly GuestArg[] = []): Promise<GuestValue> {
    let result: Promise<GuestValue>;
    try {
      if (this.#stopping) throw new LockhostError("CLOSED", "the host is stopping");
      result = this.guest(plugin).call(exportName, args);
    } catch (err) {
      return Promise.reject(err);
    }
    const settled = result.then(
      () => undefined,
      () => undefined,
    );
    this.#calls.add(settled);
    void settled.then(() => this.#calls.delete(settled));
    return result;
  }

  /**
   * Re-reads the config file this host was started with (or takes `next`, a config built in
   * code) and applies it without a gap: a plugin whose module (SHA-256 of its bytes) or entry
   * changed gets new instances, started and checked (compiled, instantiated, its scheduled
   * exports there) before they take its calls; its old instances then finish their calls in
   * flight and close. A plugin whose module and entry are unchanged keeps its instances.
   * Plugins and schedules are added and removed; schedules change at their next tick.
   * Reloads run one at a time: one asked for while another runs waits for it, then reads the
   * file afresh. Resolves to what changed; rejects, changing nothing, with NOT_RELOADABLE naming
   * each key a running host cannot change ([locking], [host] node and log_level, [admin]),
   * CONFIG_INVALID or ABI_UNSUPPORTED (an invalid file, a plugin that does not load or whose
   * sha256 pin does not match), or CLOSED once stop() has begun. Every outcome is logged.
   */
  reload(next?: LockhostConfig): Promise<ReloadReport> {
    const run = this.#reloads.then(() => this.#reload(next));
    this.#reloads = run.catch(() => undefined);
    return run;
  }

  async #reload(given: LockhostConfig | undefined): Promise<ReloadReport> {
    const running = this.#config;
    try {
      if (this.#stopping) throw new LockhostError("CLOSED", "the host is stopping; nothing was reloaded");
      let next = given;
      if (next === undefined) {
        if (running.source === undefined)
          throw new LockhostError("INVALID_ARGUMENT", "this host's config was not read from a file: pass the new one, host.reload(config)");
        next = await loadConfig(running.source);
      }
      const refusal = reloadRefusal(running, next);
      if (refusal) throw refusal;
      checkFunctionGrants(next, this.#functions);
      const report = await this.#apply(running, next);
      this.log.info(
        { source: report.source, plugins: report.plugins, schedules: report.schedules },
        `reload: applied ${report.source ?? "the new config"}: ` +
          `plugins added ${list(report.plugins.added)}, replaced ${list(report.plugins.replaced)}, removed ${list(report.plugins.removed)}, ` +
          `kept ${list(report.plugins.kept)}; ` +
          `schedules added ${list(report.schedules.added)}, changed ${list(report.schedules.changed)}, removed ${list(report.schedules.removed)}`,
      );
      return report;
    } catch (err) {
      const e = toLockhostError(err);
      this.log.error(
        { code: e.code, err: e.message, source: given?.source ?? running.source },
        `reload refused; the running config is kept: ${e.code}: ${e.message}`,
      );
      throw e;
    }
  }

  /** Starts what `next` changes, checks it, then swaps it in at once; on any failure closes what it started and changes nothing. */
  async #apply(running: LockhostConfig, next: LockhostConfig): Promise<ReloadReport> {
    const started = new Map<string, GuestPool>();
    const guests = new Map<string, GuestPool>();
    const declared = new Map<string, DeclaredSchedule[]>();
    const added: string[] = [];
    const replaced: string[] = [];
    const kept: string[] = [];
    try {
      for (const plugin of next.plugins) {
        const pool = this.#guests.get(plugin.name);
        const before = running.plugins.find((p) => p.name === plugin.name);
        if (pool && before) {
          const sameEntry = isDeepStrictEqual(before, plugin);
          const sameModule = pool.sha256 !== undefined && (await fileSha256(plugin.wasm)) === pool.sha256;
          if (sameEntry && sameModule) {
            kept.push(plugin.name);
            guests.set(plugin.name, pool);
            const d = this.#declared.get(plugin.name);
            if (d) declared.set(plugin.name, d);
            continue;
          }
          this.log.info(
            { plugin: plugin.name, moduleChanged: !sameModule, entryChanged: !sameEntry },
            `reload: starting new instances of plugin ${plugin.name}`,
          );
        }
        const fresh = await startPluginGuest(plugin, this.locks, this.log, this.#functions, this.#metrics.guest(plugin.name)).catch((e: unknown) =>
          Promise.reject(inFile(e, next.source)),
        );
        started.set(plugin.name, fresh);
        guests.set(plugin.name, fresh);
        (pool ? replaced : added).push(plugin.name);
      }
      const schedules = await expandScheduled(next, guests, declared);
      checkScheduledExports(next, guests, schedules);
      if (this.#stopping) throw new LockhostError("CLOSED", "the host began stopping during the reload; nothing was reloaded");
      // From here on, synchronously: no tick or call sees half of it.
      const retired = [...this.#guests].filter(([name, pool]) => guests.get(name) !== pool);
      this.#guests.clear();
      for (const [name, pool] of guests) this.#guests.set(name, pool);
      this.#config = next;
      this.#schedules = schedules;
      this.#declared = declared;
      const changes = this.scheduler.update(schedules);
      for (const [name, pool] of retired) this.#drain(name, pool);
      return {
        ...(next.source !== undefined && { source: next.source }),
        plugins: { added, replaced, kept, removed: retired.map(([name]) => name).filter((name) => !guests.has(name)) },
        schedules: changes,
      };
    } catch (err) {
      await Promise.all([...started.values()].map((p) => p.close()));
      throw err;
    }
  }

  /** Lets a pool a reload took out finish its calls, then closes it (stop() closes it at once). */
  #drain(name: string, pool: GuestPool): void {
    this.#draining.add(pool);
    void pool
      .drain()
      .then(
        () => this.log.info({ plugin: name }, `reload: the old instances of plugin ${name} finished their calls and were closed`),
        (err: unknown) => this.log.warn({ plugin: name, err: toLockhostError(err).message }, `reload: closing the old instances of plugin ${name} failed`),
      )
      .finally(() => this.#draining.delete(pool));
  }

  /**
   * Stops ticking and refuses new host.call() calls, lets in-flight calls (scheduled ticks
   * and host.call() calls) finish, stops every guest, releases every lock and closes the
   * backend, all within `timeoutMs` (default: the config's shutdown_timeout_ms): a release the
   * backend fails is tried again until that budget is spent. Resolves to the locks it could
   * not release (logged as one ERROR line naming each; they end at their TTL): empty when
   * every lock was released.
   */
  stop(timeoutMs: number = this.config.host.shutdownTimeoutMs): Promise<readonly UnreleasedLock[]> {
    this.#stopping ??= this.#stop(timeoutMs);
    return this.#stopping;
  }

  async #stop(timeoutMs: number): Promise<readonly UnreleasedLock[]> {
    // One budget for the whole shutdown: calls finishing, then releases and their retries.
    const deadline = performance.now() + timeoutMs;
    this.#health.stop();
    this.#presence?.stop();
    // First, so no admin request (a force-release above all) reaches a host that is shutting down.
    await this.admin?.close();
    this.#metrics.close();
    this.scheduler.stop();
    // Guests parked in a wait return now (-CANCELLED) rather than sit out their wait_ms.
    for (const guest of [...this.#guests.values(), ...this.#draining]) guest.cancelWaits("the host is shutting down");
    let timer: NodeJS.Timeout | undefined;
    const callsEnd = new Promise<"timeout">((resolve) => (timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - performance.now()))));
    // Neither idle() nor the call trackers reject; no new calls start once #stopping is set.
    const inFlight = Promise.all([this.scheduler.idle(), ...this.#calls]).then(() => "idle" as const);
    const finished = await Promise.race([inFlight, callsEnd]);
    clearTimeout(timer);
    if (finished === "timeout") this.log.warn({ timeoutMs }, "shutdown: in-flight calls did not finish in time; stopping their guests");
    await Promise.all([...this.#guests.values(), ...this.#draining].map((g) => g.close()));
    await this.scheduler.releaseParked();
    const failed = await this.locks.close({ closeBackend: this.#ownsBackend, releaseTimeoutMs: Math.max(0, Math.round(deadline - performance.now())) });
    const unreleased: UnreleasedLock[] = [];
    for (const e of failed) {
      // LOST: the lock was gone already (it expired, or the server lost it in an outage): there
      // was nothing left to release, so nothing for an operator to do.
      if (e.code === "LOST") this.log.debug({ code: e.code, err: e.message }, "shutdown: a lock was gone already; nothing to release");
      else unreleased.push(unreleasedOf(e));
    }
    if (unreleased.length === 0) {
      this.log.info("lockhost host stopped; every lock released");
    } else {
      const names = unreleased.map((l) => `${l.name} (${l.kind}, fence ${l.fence})`).join(", ");
      this.log.error(
        { timeoutMs, unreleased },
        `lockhost host stopped; ${unreleased.length} lock${unreleased.length === 1 ? "" : "s"} not released within shutdown_timeout_ms (${timeoutMs} ` +
          `ms), each held until its TTL ends: ${names}`,
      );
    }
    return unreleased;
  }
}

/** Names for a log line: "a, b", or "none". */
function list(names: readonly string[]): string {
  return names.length === 0 ? "none" : names.join(", ");
}

/** A lock Host.stop() could not release: it stays held until its TTL ends. */
export interface UnreleasedLock {
  /** The full lock name, as the logs and `lockhost status` show it. */
  readonly name: string;
  readonly kind: LockKind;
  readonly fence: number;
  /** Why the last release attempt failed (BACKEND_UNAVAILABLE, TIMEOUT...). */
  readonly code: ErrorCode;
  /** The last attempt's error message. */
  readonly error: string;
}

/** The lock a failed release names in its details (see LockService.close's releaseTimeoutMs). */
function unreleasedOf(e: LockhostError): UnreleasedLock {
  const d = e.details ?? {};
  return { name: String(d.lock), kind: d.kind as LockKind, fence: Number(d.fence), code: e.code, error: e.message };
}

/** The running instance of `plugin` among `guests`; INVALID_ARGUMENT naming the configured ones when there is none. */
function guestOf(guests: ReadonlyMap<string, GuestInstance>, plugin: string): GuestInstance {
  const guest = guests.get(plugin);
  if (!guest)
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `no plugin named "${plugin}" (${didYouMean(plugin, guests.keys())}configured: ${[...guests.keys()].join(", ") || "none"})`,
    );
  return guest;
}

/** What the host shows through its admin listener: its activity feed, its metrics and its own counters. */
type AdminViews = Required<Pick<AdminServerOptions, "feed" | "metrics" | "host" | "started" | "reload">>;

async function startAdmin(settings: AdminSettings, locks: LockService, log: Logger, config: LockhostConfig, views: AdminViews): Promise<AdminServer> {
  const where = `${config.source ?? "config"}: [admin]`;
  if (!isLoopbackHost(settings.listen.host)) {
    // Allowed (a trusted network, a firewall, an orchestrator's probes), but worth saying
    // exactly what anyone who can reach it gets without the token.
    const access = new AdminAccess(settings);
    const open = ADMIN_ROUTES.filter((r) => !access.needsToken(r.access));
    const data = open.filter((r) => r.access !== "open").map((r) => r.path.split("?", 1)[0]!);
    const problems = [
      ...(data.length > 0 ? [`anyone who can reach it reads ${data.join(", ")} without a token`] : []),
      ...(settings.token === undefined ? [`no [admin] token is set, so every route but ${open.map((r) => r.path).join(", ")} is refused`] : []),
      ...(settings.token !== undefined && settings.certFile === undefined
        ? ["it speaks plain HTTP, so the token crosses the network in clear text (set cert_file and key_file)"]
        : []),
    ];
    if (problems.length > 0) {
      log.warn(
        { listen: formatListen(settings.listen), auth: access.auth, open: open.map((r) => r.path) },
        `${where}: the admin listener listens beyond this machine${settings.token === undefined ? " without a token" : ""}: ${problems.join("; ")}`,
      );
    }
  }
  try {
    return await startAdminServer({ service: locks, settings, log, node: config.host.node, ...views });
  } catch (err) {
    // The server names the table and key; the file is known only here.
    if (err instanceof LockhostError && err.code === "CONFIG_INVALID" && config.source !== undefined) {
      throw new LockhostError("CONFIG_INVALID", `${config.source}: ${err.message}`, { cause: err });
    }
    throw err;
  }
}

/**
 * Refuses the [[scheduled]] entries whose export their plugin lacks (with the export it most
 * likely meant) or that take arguments: the guests are running, so their real export
 * signatures are known. Every such entry is reported at once.
 * @throws LockhostError CONFIG_INVALID naming each entry.
 */
export function checkScheduledExports(
  config: LockhostConfig,
  guests: ReadonlyMap<string, GuestInstance>,
  schedules: readonly ScheduledConfig[] = config.scheduled,
): void {
  const problems: LockhostError[] = [];
  for (const s of schedules) {
    if (s.schedule.kind === "declared") continue; // checked once expandScheduled has read it
    const guest = guests.get(s.plugin);
    const sig = guest?.exportSignature(s.export);
    const where = `${config.source ?? "config"}: [[scheduled]] "${s.id}"`;
    if (!sig) {
      const names = guest?.exportNames() ?? [];
      problems.push(
        new LockhostError(
          "CONFIG_INVALID",
          `${where}: plugin ${s.plugin} has no export "${s.export}" (${didYouMean(s.export, names)}it exports: ${names.join(", ") || "nothing callable"})`,
        ),
      );
    } else if (sig.params.length > 0) {
      problems.push(
        new LockhostError(
          "CONFIG_INVALID",
          `${where}: export ${s.export} of plugin ${s.plugin} takes arguments (${sig.params.join(", ")}); a scheduled export must take none`,
        ),
      );
    }
  }
  if (problems.length > 0) throw allProblems(config.source ?? "config", problems);
}

/**
 * Refuses a plugin entry that grants a namespace the embedder registered no functions under:
 * the config and the code that starts the host disagree, and no guest could use it.
 * @throws LockhostError CONFIG_INVALID naming the file, the entry and the key.
 */
export function checkFunctionGrants(config: LockhostConfig, functions: HostFunctions): void {
  const registered = Object.keys(functions);
  for (const plugin of config.plugins) {
    for (const ns of plugin.functions) {
      if (Object.hasOwn(functions, ns)) continue;
      throw new LockhostError(
        "CONFIG_INVALID",
        `${config.source ?? "config"}: [[plugins]] "${plugin.name}": functions grants namespace "${ns}", which the embedder did not register ` +
          `(registered: ${registered.join(", ") || "none; Host.start(config, { functions }) registers them"})`,
      );
    }
  }
}

/** A CONFIG_INVALID raised without the file's name, with it in front. */
function inFile(err: unknown, source: string | undefined): unknown {
  if (source === undefined || !(err instanceof LockhostError) || err.code !== "CONFIG_INVALID" || err.message.startsWith(`${source}:`)) return err;
  return new LockhostError("CONFIG_INVALID", `${source}: ${err.message}`, { cause: err });
}
