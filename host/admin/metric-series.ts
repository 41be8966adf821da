// Every series a host's metrics show (Host.metrics, the admin listener's /metrics), in one
// table: its name, type, labels and meaning. The metrics are made from these rows
// (host/admin/metrics.ts and its meters) and the docs' list (docs/operators.md) is written
// from them (npm run docs), so what is scraped and what is documented
// cannot part. Every series also carries `node` and `backend` (the registry's default labels).
// Labels are of bounded cardinality only: plugin, schedule, kind, export, outcome, never a
// lock's name (its keys are the callers' and unbounded).

/** A Prometheus metric type. */
export type SeriesType = "counter" | "gauge" | "histogram";

/** Where a series' values come from (the README groups them by it). */
export type SeriesSource = "locks" | "guests" | "schedules" | "backend" | "process";

/**
 * One series: its name, type and help text, its own labels (besides node and backend, in the
 * order the text shows them), where its values come from, and a histogram's bucket bounds in
 * seconds.
 */
export type SeriesRow = Readonly<{
  name: string;
  type: SeriesType;
  labels: readonly string[];
  help: string;
  source: SeriesSource;
  buckets?: readonly number[];
}>;

const row = (source: SeriesSource, type: SeriesType, name: string, labels: readonly string[], help: string, buckets?: readonly number[]): SeriesRow =>
  Object.freeze({ name, type, labels: Object.freeze([...labels]), help, source, ...(buckets && { buckets: Object.freeze([...buckets]) }) });

/** The labels of the lock series: the lock's kind (mutex, rw, semaphore, fair, leader) and its holder's plugin ("host" for host-side callers). */
const LOCK = ["kind", "plugin"] as const;

/** How long a waiting acquire waits: a few ms on a quick hand-over to a minute and more. */
const WAIT_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** How long a lock is held: a quick critical section to an hour-long leadership. */
const HOLD_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600];
/** How long an export call takes: a lock call's microseconds to a worker's time limit. */
const CALL_BUCKETS = [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** How long a scheduled job runs. */
const RUN_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900];

/** The series lockhost makes, by the name its code uses. */
export const SERIES = Object.freeze({
  // The lock service's state and counters since it started, read from stats() at scrape time.
  locksHeld: row("locks", "gauge", "lockhost_locks_held", [], "Locks this host holds now."),
  locksKeepalive: row("locks", "gauge", "lockhost_locks_keepalive", [], "Locks this host keeps alive now (renewal manager)."),
  waiters: row("locks", "gauge", "lockhost_waiters", [], "Acquire calls waiting for a key now."),
  renewals: row("locks", "counter", "lockhost_renewals_total", ["result"], "Renewals, by result (ok, failed)."),
  renewalBatches: row("locks", "counter", "lockhost_renewal_batches_total", [], "Batched renewal round trips the renewal manager made."),
  renewalTimers: row("locks", "gauge", "lockhost_renewal_timers", [], "Timers the renewal manager has armed (0 or 1 per host)."),
  cleanups: row(
    "locks",
    "counter",
    "lockhost_cleanups_total",
    [],
    "Locks found held after an acquisition or release that failed with its outcome unknown (timed out), released by owner once the backend answered.",
  ),
  unsettled: row(
    "locks",
    "gauge",
    "lockhost_unsettled_locks",
    [],
    "Owner tokens of acquisitions and releases that failed with their outcome unknown, waiting for the backend to answer so they can be released.",
  ),
  // What happens to locks, counted from the service's events as it happens.
  acquisitions: row("locks", "counter", "lockhost_acquisitions_total", LOCK, "Acquisitions that succeeded (try, acquire, restore, campaign)."),
  contended: row(
    "locks",
    "counter",
    "lockhost_contended_total",
    LOCK,
    "Attempts that found the key held by someone else (each try of a waiting acquire counts).",
  ),
  waitTimeouts: row("locks", "counter", "lockhost_wait_timeouts_total", LOCK, "Waiting acquires that gave up with TIMEOUT."),
  releases: row("locks", "counter", "lockhost_releases_total", LOCK, "Locks this host released."),
  lost: row(
    "locks",
    "counter",
    "lockhost_locks_lost_total",
    LOCK,
    "Locks lost: renewal refused or unconfirmed, run out while watched, force-released, released elsewhere.",
  ),
  acquireWait: row(
    "locks",
    "histogram",
    "lockhost_acquire_wait_seconds",
    [...LOCK, "outcome"],
    "Time a waiting acquire waited, by how it ended (acquired, timeout, failed: aborted, closed or a backend failure).",
    WAIT_BUCKETS,
  ),
  holdTime: row(
    "locks",
    "histogram",
    "lockhost_lock_hold_seconds",
    [...LOCK, "outcome"],
    "Time from acquisition to release (outcome released) or loss (lost).",
    HOLD_BUCKETS,
  ),
  // The guests: one plugin's instance per label value.
  guestCalls: row(
    "guests",
    "counter",
    "lockhost_guest_calls_total",
    ["plugin", "export", "outcome"],
    "Export calls, by how they ended: ok, trap, timeout, crash, closed, error.",
  ),
  guestCallTime: row(
    "guests",
    "histogram",
    "lockhost_guest_call_seconds",
    ["plugin", "export"],
    "Time an export call took, waiting for a fresh instance included.",
    CALL_BUCKETS,
  ),
  guestTraps: row("guests", "counter", "lockhost_guest_traps_total", ["plugin"], "Export calls that trapped or aborted."),
  guestTimeouts: row("guests", "counter", "lockhost_guest_timeouts_total", ["plugin"], "Export calls stopped at their time limit (worker runtime)."),
  guestRestarts: row(
    "guests",
    "counter",
    "lockhost_guest_restarts_total",
    ["plugin", "reason"],
    "Guest instances replaced by a fresh one, by why: trap, timeout, crash.",
  ),
  // The host: its schedules and its backend's health.
  scheduleTicks: row(
    "schedules",
    "counter",
    "lockhost_schedule_ticks_total",
    ["schedule", "outcome"],
    "Schedule ticks on this node, by outcome: ran, failed, skipped_contended (another node holds the tick, or leads), skipped_overlap (the previous " +
      "tick still runs, or no instance of its plugin is free), skipped_error (the backend failed, as in an outage), skipped_lost (the schedule lock " +
      "was lost, or had no time left, when the export was to be entered: not called).",
  ),
  scheduleRunTime: row(
    "schedules",
    "histogram",
    "lockhost_schedule_run_seconds",
    ["schedule", "outcome"],
    "Time a tick's export ran on this node, by outcome (ran, failed).",
    RUN_BUCKETS,
  ),
  backendUp: row("backend", "gauge", "lockhost_backend_up", [], "1 while the backend answered the host's last check, 0 while it does not."),
} satisfies Record<string, SeriesRow>);

/**
 * prom-client's default process metrics (collectDefaultMetrics; some Linux only), under their
 * standard names, unprefixed: the ones ready-made Node.js dashboards and alerts read.
 * Listed here so the README can list them; test/metrics.test.ts holds the list to a scrape.
 */
export const PROCESS_SERIES: readonly SeriesRow[] = Object.freeze(
  (
    [
      ["counter", "process_cpu_user_seconds_total", [], "User CPU time spent."],
      ["counter", "process_cpu_system_seconds_total", [], "System CPU time spent."],
      ["counter", "process_cpu_seconds_total", [], "User and system CPU time spent."],
      ["gauge", "process_start_time_seconds", [], "Start time of the process since the Unix epoch."],
      ["gauge", "process_resident_memory_bytes", [], "Resident memory size."],
      ["gauge", "process_virtual_memory_bytes", [], "Virtual memory size."],
      ["gauge", "process_heap_bytes", [], "Process heap size."],
      ["gauge", "process_open_fds", [], "Open file descriptors."],
      ["gauge", "process_max_fds", [], "Maximum open file descriptors."],
      ["gauge", "nodejs_eventloop_lag_seconds", [], "Event loop lag."],
      ["gauge", "nodejs_eventloop_lag_min_seconds", [], "Event loop delay: minimum."],
      ["gauge", "nodejs_eventloop_lag_max_seconds", [], "Event loop delay: maximum."],
      ["gauge", "nodejs_eventloop_lag_mean_seconds", [], "Event loop delay: mean."],
      ["gauge", "nodejs_eventloop_lag_stddev_seconds", [], "Event loop delay: standard deviation."],
      ["gauge", "nodejs_eventloop_lag_p50_seconds", [], "Event loop delay: 50th percentile."],
      ["gauge", "nodejs_eventloop_lag_p90_seconds", [], "Event loop delay: 90th percentile."],
      ["gauge", "nodejs_eventloop_lag_p99_seconds", [], "Event loop delay: 99th percentile."],
      ["gauge", "nodejs_active_resources", ["type"], "Active resources keeping the event loop alive, by type."],
      ["gauge", "nodejs_active_resources_total", [], "Active resources."],
      ["gauge", "nodejs_active_handles", ["type"], "Active libuv handles, by type."],
      ["gauge", "nodejs_active_handles_total", [], "Active libuv handles."],
      ["gauge", "nodejs_active_requests", ["type"], "Active libuv requests, by type."],
      ["gauge", "nodejs_active_requests_total", [], "Active libuv requests."],
      ["gauge", "nodejs_heap_size_total_bytes", [], "V8 heap size."],
      ["gauge", "nodejs_heap_size_used_bytes", [], "V8 heap used."],
      ["gauge", "nodejs_external_memory_bytes", [], "Memory of C++ objects bound to JavaScript."],
      ["gauge", "nodejs_heap_space_size_total_bytes", ["space"], "V8 heap space size, by space."],
      ["gauge", "nodejs_heap_space_size_used_bytes", ["space"], "V8 heap space used, by space."],
      ["gauge", "nodejs_heap_space_size_available_bytes", ["space"], "V8 heap space available, by space."],
      ["gauge", "nodejs_version_info", ["version", "major", "minor", "patch"], "Node.js version (value 1)."],
      ["histogram", "nodejs_gc_duration_seconds", ["kind"], "Garbage collection time, by kind (major, minor, incremental, weakcb)."],
    ] as const
  ).map(([type, name, labels, help]) => row("process", type, name, labels, help)),
);

/** Every series, lockhost's then the process's. */
export function allSeries(): readonly SeriesRow[] {
  return [...Object.values(SERIES), ...PROCESS_SERIES];
}
