// Prometheus metrics of one LockService, read from its stats() snapshot when scraped: nothing
// is counted twice, and the lock path pays nothing for metrics it does not know about.
import { Counter, Gauge, Registry } from "prom-client";
import type { LockService } from "../locking/service.js";
import type { LockStats } from "../locking/stats.js";
import type { TickCounts } from "../scheduler/scheduler.js";

type Stat = (s: LockStats) => number;

/** A metric, and the stats it shows: one value per set of labels, in the metric's unit. */
interface Shown {
  readonly name: string;
  readonly help: string;
  readonly kind: "gauge" | "counter";
  readonly values: readonly (readonly [labels: Readonly<Record<string, string>>, value: Stat])[];
}

const gauge = (name: string, help: string, value: Stat): Shown => ({ name, help, kind: "gauge", values: [[{}, value]] });
const counter = (name: string, help: string, value: Stat): Shown => ({ name, help, kind: "counter", values: [[{}, value]] });

const SHOWN: readonly Shown[] = [
  gauge("lockhost_locks_held", "Locks this host holds now.", (s) => s.held),
  gauge("lockhost_locks_keepalive", "Locks this host keeps alive now (renewal manager).", (s) => s.keepalive),
  counter("lockhost_acquisitions_total", "Acquisitions that succeeded (tryLock, acquire, restore).", (s) => s.acquisitions),
  counter("lockhost_contended_total", "Attempts that found the key held by someone else.", (s) => s.contended),
  {
    name: "lockhost_renewals_total",
    help: "Renewals, by result.",
    kind: "counter",
    values: [[{ result: "ok" }, (s) => s.renewalsOk], [{ result: "failed" }, (s) => s.renewalsFailed]],
  },
  counter("lockhost_locks_lost_total", "Leases lost: renewal refused or unconfirmed, or run out while watched.", (s) => s.lost),
  gauge("lockhost_waiters", "Acquire calls waiting for a key now.", (s) => s.waiters),
  counter("lockhost_waits_total", "Waits that ended (acquired, timed out or aborted).", (s) => s.waits),
  counter("lockhost_wait_timeouts_total", "Waits that ended with TIMEOUT.", (s) => s.waitTimeouts),
  counter("lockhost_wait_seconds_total", "Time spent waiting by the waits that ended.", (s) => s.waitTimeMsTotal / 1000),
  counter("lockhost_renewal_batches_total", "Batched renewal round trips the renewal manager made.", (s) => s.renewalBatches),
  gauge("lockhost_renewal_timers", "Timers the renewal manager has armed (0 or 1 per host).", (s) => s.renewalTimers),
];

/**
 * What a host shows beside its lock service's counters: its schedules' ticks by outcome (the
 * skips of an outage among them: it is logged once, counted here) and whether its backend
 * answers.
 */
export interface HostCounters {
  /** Ticks by schedule id and outcome (Scheduler.ticks()). */
  ticks(): Readonly<Record<string, TickCounts>>;
  /** Whether the backend answered the host's last check. */
  readonly backendUp: boolean;
}

/** The metrics of one LockService. */
export interface LockMetrics {
  readonly registry: Registry;
  /** The Prometheus text exposition of one fresh stats() snapshot. */
  render(): Promise<string>;
}

/**
 * Metrics that show `service.stats()` at scrape time, labelled with the node and the backend
 * kind; with `host`, also its schedules' ticks and its backend's health.
 */
export function lockMetrics(service: LockService, node: string, host?: HostCounters): LockMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ node, backend: service.backendKind });
  // One scrape takes one snapshot, shared by every metric it renders.
  let snapshot: LockStats | undefined;
  const current = (): LockStats => snapshot ?? service.stats();
  for (const { name, help, kind, values } of SHOWN) {
    const config = {
      name,
      help,
      labelNames: Object.keys(values[0]![0]),
      registers: [registry],
      collect(this: Gauge | Counter): void {
        const stats = current();
        this.reset();
        for (const [labels, value] of values) {
          if (this instanceof Gauge) this.set(labels, value(stats));
          else this.inc(labels, value(stats));
        }
      },
    };
    if (kind === "gauge") new Gauge(config);
    else new Counter(config);
  }
  if (host) hostMetrics(registry, host);
  return {
    registry,
    async render() {
      snapshot = service.stats();
      try {
        return await registry.metrics();
      } finally {
        snapshot = undefined;
      }
    },
  };
}

/** The host's series: read at scrape time, like the service's. Schedule ids come from the config, so their number is bounded. */
function hostMetrics(registry: Registry, host: HostCounters): void {
  new Gauge({
    name: "lockhost_backend_up",
    help: "1 while the backend answered the host's last check, 0 while it does not.",
    registers: [registry],
    collect(this: Gauge): void {
      this.set(host.backendUp ? 1 : 0);
    },
  });
  new Counter({
    name: "lockhost_schedule_ticks_total",
    help: "Schedule ticks on this node, by outcome: ran, failed, skipped_contended, skipped_overlap, skipped_error (the backend failed, as in an outage).",
    labelNames: ["schedule", "outcome"],
    registers: [registry],
    collect(this: Counter): void {
      this.reset();
      for (const [schedule, counts] of Object.entries(host.ticks())) {
        for (const [outcome, n] of Object.entries(counts)) this.inc({ schedule, outcome }, n);
      }
    },
  });
}
