// The Prometheus metrics of one host, in a registry of its own (two hosts in one process never
// clash), every series a row of host/admin/metric-series.ts, labelled with the node and the
// backend kind. Three ways in: the lock service's state, read from one stats() snapshot per
// scrape; what happens (locks, guest calls, schedule runs), counted by meters as it happens;
// and the process's own metrics, made once per process.
import { Registry } from "prom-client";
import type { LockService } from "../locking/service.js";
import type { LockStats } from "../locking/stats.js";
import type { GuestRecorder } from "../runtime/guest-recorder.js";
import type { TickCounts, TickEvent } from "../scheduler/scheduler.js";
import { GuestMeter } from "./guest-meter.js";
import { LockMeter } from "./lock-meter.js";
import { SERIES, type SeriesRow } from "./metric-series.js";
import { registerProcessMetrics } from "./process-metrics.js";
import { counterOf, gaugeOf } from "./series-metric.js";
import { histogramTally } from "./tally.js";

/** A series read from the stats snapshot: one value per set of its labels. */
type Shown = readonly [row: SeriesRow, values: readonly (readonly [labels: Readonly<Record<string, string>>, value: (s: LockStats) => number])[]];

const one = (row: SeriesRow, value: (s: LockStats) => number): Shown => [row, [[{}, value]]];

const SHOWN: readonly Shown[] = [
  one(SERIES.locksHeld, (s) => s.held),
  one(SERIES.locksKeepalive, (s) => s.keepalive),
  one(SERIES.waiters, (s) => s.waiters),
  [
    SERIES.renewals,
    [
      [{ result: "ok" }, (s) => s.renewalsOk],
      [{ result: "failed" }, (s) => s.renewalsFailed],
    ],
  ],
  one(SERIES.renewalBatches, (s) => s.renewalBatches),
  one(SERIES.renewalTimers, (s) => s.renewalTimers),
  one(SERIES.cleanups, (s) => s.cleanups),
  one(SERIES.unsettled, (s) => s.unsettled),
];

/**
 * What a host shows beside its lock service's: its schedules' ticks by outcome (the skips of
 * an outage among them: it is logged once, counted here) and whether its backend answers.
 */
export interface HostCounters {
  /** Ticks by schedule id and outcome (Scheduler.ticks()). */
  ticks(): Readonly<Record<string, TickCounts>>;
  /** Whether the backend answered the host's last check. */
  readonly backendUp: boolean;
}

/** The metrics of one host (or of a bare LockService). */
export interface LockMetrics {
  readonly registry: Registry;
  /** The recorder `plugin`'s guest runtime tells its calls, traps, time limits and restarts. */
  guest(plugin: string): GuestRecorder;
  /** Shows the host's schedule ticks and backend health too (once: a second call is ignored). */
  showHost(host: HostCounters): void;
  /** Counts a schedule tick's run time (the Scheduler's "tick" event). */
  tick(event: TickEvent): void;
  /** The Prometheus text exposition, the service's series from one fresh stats() snapshot. */
  render(): Promise<string>;
  /** Stops counting the service's lock events. */
  close(): void;
}

/** The metrics of `service` on `node`: its state and lock events, guests' and schedules' as they are added. */
export function lockMetrics(service: LockService, node: string): LockMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ node, backend: service.backendName });
  // One scrape takes one snapshot, shared by every series it renders.
  let snapshot: LockStats | undefined;
  const current = (): LockStats => snapshot ?? service.stats();
  for (const [row, values] of SHOWN) {
    const read = (put: (labels: Readonly<Record<string, string>>, n: number) => void): void => {
      const stats = current();
      for (const [labels, value] of values) put(labels, value(stats));
    };
    if (row.type === "gauge") {
      gaugeOf(registry, row, function () {
        read((labels, n) => this.set(labels, n));
      });
    } else {
      counterOf(registry, row, function () {
        this.reset();
        read((labels, n) => this.inc(labels, n));
      });
    }
  }
  const locks = new LockMeter(registry, service);
  const guests = new GuestMeter(registry);
  const runs = histogramTally(registry, SERIES.scheduleRunTime);
  registerProcessMetrics(registry);
  let host: HostCounters | undefined;
  return {
    registry,
    guest: (plugin) => guests.recorder(plugin),
    showHost(counters) {
      if (host) return;
      host = counters;
      hostMetrics(registry, counters);
    },
    tick(event) {
      if (event.runMs !== undefined) runs({ schedule: event.id, outcome: event.outcome }).observe(event.runMs / 1000);
    },
    async render() {
      snapshot = service.stats();
      try {
        return await registry.metrics();
      } finally {
        snapshot = undefined;
      }
    },
    close: () => locks.stop(),
  };
}

/** The host's series: read at scrape time, like the service's. Schedule ids come from the config, so their number is bounded. */
function hostMetrics(registry: Registry, host: HostCounters): void {
  gaugeOf(registry, SERIES.backendUp, function () {
    this.set(host.backendUp ? 1 : 0);
  });
  counterOf(registry, SERIES.scheduleTicks, function () {
    this.reset();
    for (const [schedule, counts] of Object.entries(host.ticks())) {
      for (const [outcome, n] of Object.entries(counts)) this.inc({ schedule, outcome }, n);
    }
  });
}
