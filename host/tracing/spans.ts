// The spans lockhost makes and the attributes they carry: one table, which the code names its
// attributes from (ATTR) and the docs are written from (host/docs/tracing-table.ts). A new span
// or attribute is a row here first.

/** Every attribute a lockhost span may carry: its name, value type, cardinality and meaning. */
export const ATTRIBUTES = {
  lockName: { name: "lockhost.lock.name", type: "string", high: true, doc: "the lock's full name (`{scope}:{key}`, e.g. `billing:nightly`)" },
  lockKind: { name: "lockhost.lock.kind", type: "string", doc: "`mutex`, `rw`, `semaphore` or `leader`" },
  lockMode: { name: "lockhost.lock.mode", type: "string", doc: "`exclusive` (a mutex, a writer, a leader) or `shared` (a reader, a permit)" },
  waitMs: { name: "lockhost.lock.wait_ms", type: "int", doc: "the wait budget in ms (0 for a try; -1 for no limit)" },
  acquireOutcome: {
    name: "lockhost.lock.outcome",
    type: "string",
    doc: "`acquired`, `contended` (a try found it held), `timeout` (a wait ran out) or `error`",
  },
  fence: { name: "lockhost.lock.fence", type: "int", high: true, doc: "the fencing token of the acquisition (of the lock a fenced HTTP request carries)" },
  holdEnd: { name: "lockhost.lock.end", type: "string", doc: "how a hold ended: `released` or `lost`" },
  lostReason: { name: "lockhost.lock.lost_reason", type: "string", doc: "why a lost hold was lost (the LOST error's message)" },
  plugin: { name: "lockhost.plugin", type: "string", doc: "the plugin (`host` for an embedder's own locks)" },
  exportName: { name: "lockhost.export", type: "string", doc: "the guest export called" },
  callOutcome: {
    name: "lockhost.call.outcome",
    type: "string",
    doc:
      "`ok`, `trap`, `timeout`, `crash`, `closed` or `error` (the metrics' call " +
      "outcomes), or `not_entered` (a scheduled call whose lock was gone at entry)",
  },
  schedule: { name: "lockhost.schedule", type: "string", doc: "the schedule's id" },
  tickAtMs: { name: "lockhost.tick.at_ms", type: "int", high: true, doc: "the tick's scheduled fire time, epoch ms (the same on every node)" },
  tickOutcome: {
    name: "lockhost.tick.outcome",
    type: "string",
    doc: "`ran`, `failed`, `skipped_contended`, `skipped_overlap`, `skipped_lost` or `skipped_error` (the scheduler's outcomes)",
  },
  fnNamespace: { name: "lockhost.function.namespace", type: "string", doc: "the host function's namespace (the module the guest imports)" },
  fnName: { name: "lockhost.function.name", type: "string", doc: "the host function's name within its namespace" },
  errorCode: { name: "lockhost.error.code", type: "string", doc: "the error code of a failed operation (`BACKEND_UNAVAILABLE`, `GUEST_TRAP`, ...)" },
  httpMethod: { name: "http.request.method", type: "string", doc: "the request's method (OpenTelemetry semantic conventions)" },
  url: { name: "url.full", type: "string", high: true, doc: "the request's URL, its query left out" },
  serverAddress: { name: "server.address", type: "string", doc: "the host the request went to" },
  serverPort: { name: "server.port", type: "int", doc: "the port the request went to" },
  httpStatus: { name: "http.response.status_code", type: "int", doc: "the response's status code" },
} as const satisfies Record<string, AttributeRow>;

/** One attribute: its name on the span, its value's type, whether it has many values (a lock name), and its meaning. */
export interface AttributeRow {
  readonly name: string;
  readonly type: "string" | "int";
  /** Many distinct values (one per lock, per tick): fine on a span, never a metric label. */
  readonly high?: boolean;
  readonly doc: string;
}

type AttributeKey = keyof typeof ATTRIBUTES;

/** The attribute names by key, for the code that sets them. */
export const ATTR = Object.fromEntries(Object.entries(ATTRIBUTES).map(([k, v]) => [k, v.name])) as {
  readonly [K in AttributeKey]: (typeof ATTRIBUTES)[K]["name"];
};

/** One span lockhost makes. */
export interface SpanRow {
  readonly name: string;
  readonly kind: "internal" | "client";
  /** What it covers: when it starts and ends, and what its parent is. */
  readonly doc: string;
  readonly attributes: readonly AttributeKey[];
}

/** Every span lockhost makes. */
export const SPANS = {
  acquire: {
    name: "lockhost.lock.acquire",
    kind: "internal",
    doc:
      "one acquisition (a try or a waiting acquire, of any kind, by an embedder or a guest; a lock set makes one per key): from the call until it " +
      "is acquired, contended, timed out or failed. Status error when it failed",
    attributes: ["lockName", "lockKind", "lockMode", "plugin", "waitMs", "acquireOutcome", "fence", "errorCode"],
  },
  hold: {
    name: "lockhost.lock.hold",
    kind: "internal",
    doc:
      "one hold, a child of its acquisition: from the grant until the release is confirmed or the lock is lost (a lease restored by owner token " +
      "has none). Status error when lost",
    attributes: ["lockName", "lockKind", "lockMode", "plugin", "fence", "holdEnd", "lostReason"],
  },
  guestCall: {
    name: "lockhost.guest.call",
    kind: "internal",
    doc:
      "one export call of a guest, in either runtime, made on the host's thread: from its turn in the instance's queue until it returns or fails. " +
      "What the guest does meanwhile (its locks, host functions, HTTP requests) is its children. Status error unless ok",
    attributes: ["plugin", "exportName", "callOutcome", "errorCode"],
  },
  tick: {
    name: "lockhost.schedule.tick",
    kind: "internal",
    doc:
      "one tick of a schedule on this node (a root span when its timer fired it): the schedule lock's acquisition and the guest call are its " +
      "children. Status error when failed or skipped_error",
    attributes: ["schedule", "plugin", "exportName", "tickAtMs", "tickOutcome"],
  },
  hostFunction: {
    name: "lockhost.host_function",
    kind: "internal",
    doc: "one call of an embedder's host function by a guest: the function runs in its context (its own spans are children). Status error when it failed",
    attributes: ["plugin", "fnNamespace", "fnName", "errorCode"],
  },
  http: {
    name: "<METHOD>",
    kind: "client",
    doc:
      "one HTTP request of a guest (`GET`, `POST`, ...; redirects included): its W3C `traceparent` goes out with the request (and its fence " +
      "headers, when fenced), so the resource's spans join the job's trace. Status error on a failure or a 5xx",
    attributes: ["plugin", "httpMethod", "url", "serverAddress", "serverPort", "httpStatus", "lockName", "fence", "errorCode"],
  },
} as const satisfies Record<string, SpanRow>;
