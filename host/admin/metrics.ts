// Prometheus metrics of one LockService, read from its stats() snapshot when scraped: nothing
// is counted twice, and the lock path pays nothing for metrics it does not know about.
import { Counter, Gauge, Registry } from "prom-client";
import type { LockService } from "../locking/service.js";
import type { LockStats } from "../locking/stats.js";

/** A metric, the stat it shows, and how to turn that stat into the metric's unit. */
interface Shown {
  readonly name: string;
  readonly help: string;
  readonly kind: "gauge" | "counter";
  readonly value: (s: LockStats) => number;
  readonly labels?: Readonly<Record<string, string>>;
}

const SHOWN: readonly Shown[] = [
  { name: "lockhost_locks_held", help: "Locks this host holds now.", kind: "gauge", value: (s) => s.held },
  { name: "lockhost_locks_keepalive", help: "Locks this host keeps alive now (renewal manager).", kind: "gauge", value: (s) => s.keepalive },
  { name: "lockhost_acquisitions_total", help: "Acquisitions that succeeded (tryLock, acquire, restore).", kind: "counter", value: (s) => s.acquisitions },
  { name: "lockhost_contended_total", help: "Attempts that found the key held by someone else.", kind: "counter", value: (s) => s.contended },
  { name: "lockhost_renewals_total", help: "Renewals, by result.", kind: "counter", value: (s) => s.renewalsOk, labels: { result: "ok" } },
  { name: "lockhost_renewals_total", help: "Renewals, by result.", kind: "counter", value: (s) => s.renewalsFailed, labels: { result: "failed" } },
  { name: "lockhost_locks_lost_total", help: "Leases lost: renewal refused or unconfirmed, or run out while watched.", kind: "counter", value: (s) => s.lost },
  { name: "lockhost_waiters", help: "Acquire calls waiting for a key now.", kind: "gauge", value: (s) => s.waiters },
  { name: "lockhost_waits_total", help: "Waits that ended (acquired, timed out or aborted).", kind: "counter", value: (s) => s.waits },
  { name: "lockhost_wait_timeouts_total", help: "Waits that ended with TIMEOUT.", kind: "counter", value: (s) => s.waitTimeouts },
  { name: "lockhost_wait_seconds_total", help: "Time spent waiting by the waits that ended.", kind: "counter", value: (s) => s.waitTimeMsTotal / 1000 },
  { name: "lockhost_renewal_batches_total", help: "Batched renewal round trips the renewal manager made.", kind: "counter", value: (s) => s.renewalBatches },
  { name: "lockhost_renewal_timers", help: "Timers the renewal manager has armed (0 or 1 per host).", kind: "gauge", value: (s) => s.renewalTimers },
];

/** The metrics of one LockService. */
export interface LockMetrics {
  readonly registry: Registry;
  /** The Prometheus text exposition of one fresh stats() snapshot. */
  render(): Promise<string>;
}

/**
 * Metrics that show `service.stats()` at scrape time, labelled with the node and the backend
 * kind.
 */
export function lockMetrics(service: LockService, node: string): LockMetrics {
  const registry = new Registry();
  registry.setDefaultLabels({ node, backend: service.backendKind });
  // One scrape takes one snapshot, shared by every metric it renders.
  let snapshot: LockStats | undefined;
  const current = (): LockStats => (snapshot ??= service.stats());
  const byName = new Map<string, Shown[]>();
  for (const shown of SHOWN) byName.set(shown.name, [...(byName.get(shown.name) ?? []), shown]);
  for (const [name, all] of byName) {
    const labelNames = Object.keys(all[0]!.labels ?? {});
    const config = {
      name,
      help: all[0]!.help,
      labelNames,
      registers: [registry],
      collect(this: Gauge | Counter): void {
        const stats = current();
        this.reset();
        for (const shown of all) {
          const v = shown.value(stats);
          if (this instanceof Gauge) {
            if (shown.labels) this.set(shown.labels, v);
            else this.set(v);
          } else if (shown.labels) this.inc(shown.labels, v);
          else this.inc(v);
        }
      },
    };
    if (all[0]!.kind === "gauge") new Gauge(config);
    else new Counter(config);
  }
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
