// lockhost's spans, through @opentelemetry/api only: with no SDK registered the API is a no-op,
// and each hook here costs one no-op startSpan (a NonRecordingSpan) and an isRecording() check;
// attributes are built only for a span that records, and a hold is looked up at its end only
// once some hold was traced. The names and attributes are the table of spans.ts.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { context, isSpanContextValid, propagation, SpanKind, SpanStatusCode, trace, type Context, type Span, type TextMapSetter } from "@opentelemetry/api";
import { LockhostError } from "../../kit/errors.js";
import type { Lease } from "../locking/lease.js";
import type { CheckedRequest } from "../locking/request.js";
import { ATTR, SPANS } from "./spans.js";

/** This package's version, for the tracer's scope (two folders up in the source tree, three in the build). */
function packageVersion(): string | undefined {
  try {
    const file = fileURLToPath(new URL(import.meta.url.includes("/dist/") ? "../../../package.json" : "../../package.json", import.meta.url));
    return (JSON.parse(readFileSync(file, "utf8")) as { version?: string }).version;
  } catch {
    return undefined;
  }
}

/**
 * lockhost's tracer: the API's proxy, which starts delegating to an SDK's tracer as soon as an
 * application registers a provider (before or after this module loads).
 */
export const tracer = trace.getTracer("lockhost", packageVersion());

function errorOf(err: unknown): { code: string; message: string } {
  return err instanceof LockhostError ? err : { code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
}

/** Marks `span` failed with `err`'s code and message. */
function failSpan(span: Span, err: unknown): void {
  const { code, message } = errorOf(err);
  span.setAttribute(ATTR.errorCode, code);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

// --- lock acquisition and hold (host/locking/acquire.ts, release-books.ts, core.ts) ---

/** The hold span of each traced lease, until it is released or lost. */
const holds = new WeakMap<Lease, Span>();
/** Set once a hold was traced: until then a lease's end looks nothing up. */
let holdsTraced = false;

/** Starts the span of one acquisition of `request` (a try when `waitMs` is 0), a child of the caller's active context. */
export function startAcquire(request: CheckedRequest, waitMs: number): Span {
  const span = tracer.startSpan(SPANS.acquire.name);
  if (span.isRecording()) {
    span.setAttributes({
      [ATTR.lockName]: request.name,
      [ATTR.lockKind]: request.spec.kind,
      [ATTR.lockMode]: request.mode,
      [ATTR.plugin]: request.plugin,
      [ATTR.waitMs]: waitMs === Infinity ? -1 : waitMs,
    });
  }
  return span;
}

/** Ends a recording acquisition span with what `pending` comes to, and starts the hold of a lease it grants. */
export function traceAcquire<T extends Lease | null>(span: Span, pending: Promise<T>): Promise<T> {
  return pending.then(
    (lease) => {
      if (lease === null) span.setAttribute(ATTR.acquireOutcome, "contended");
      else {
        span.setAttributes({ [ATTR.acquireOutcome]: "acquired", [ATTR.fence]: lease.fence });
        startHold(lease, span);
      }
      span.end();
      return lease;
    },
    (err: unknown) => {
      if (err instanceof LockhostError && err.code === "TIMEOUT") {
        span.setAttributes({ [ATTR.acquireOutcome]: "timeout", [ATTR.errorCode]: err.code });
      } else {
        span.setAttribute(ATTR.acquireOutcome, "error");
        failSpan(span, err);
      }
      span.end();
      throw err;
    },
  );
}

/** Starts the hold of `lease`, a child of its acquisition's span (ended at once if the lease already ended). */
function startHold(lease: Lease, acquisition: Span): void {
  const span = tracer.startSpan(SPANS.hold.name, undefined, trace.setSpan(context.active(), acquisition));
  span.setAttributes({
    [ATTR.lockName]: lease.name,
    [ATTR.lockKind]: lease.kind,
    [ATTR.lockMode]: lease.mode,
    [ATTR.plugin]: lease.holder.plugin,
    [ATTR.fence]: lease.fence,
  });
  if (lease.state !== "held") {
    endSpanOfHold(span, lease.state === "lost" ? lease.lostReason : undefined);
    return;
  }
  holds.set(lease, span);
  holdsTraced = true;
}

/** Ends the hold of `lease`, if it is traced: released, or lost for `lost`. */
export function endHold(lease: Lease, lost?: LockhostError): void {
  if (!holdsTraced) return;
  const span = holds.get(lease);
  if (span === undefined) return;
  holds.delete(lease);
  endSpanOfHold(span, lost);
}

function endSpanOfHold(span: Span, lost: LockhostError | undefined): void {
  if (lost === undefined) span.setAttribute(ATTR.holdEnd, "released");
  else {
    span.setAttributes({ [ATTR.holdEnd]: "lost", [ATTR.lostReason]: lost.message });
    span.setStatus({ code: SpanStatusCode.ERROR, message: lost.message });
  }
  span.end();
}

// --- guest calls (host/runtime/guest-shell.ts) and what a guest does during one (lock-ops.ts runOp) ---

/**
 * What a guest's operations run under while one of its calls runs: the call span's context, or
 * undefined when there is none worth passing on. One per guest instance (one call at a time).
 */
export class TraceSlot {
  context: Context | undefined = undefined;
}

/** Starts the span of an export call of `plugin`, a child of `parent` (the caller's active context when it called). */
export function startGuestCall(parent: Context, plugin: string, exportName: string): Span {
  const span = tracer.startSpan(SPANS.guestCall.name, undefined, parent);
  if (span.isRecording()) span.setAttributes({ [ATTR.plugin]: plugin, [ATTR.exportName]: exportName });
  return span;
}

/** The context a call's operations run under (its span's), or undefined when the span carries no trace. */
export function contextOf(parent: Context, span: Span): Context | undefined {
  return isSpanContextValid(span.spanContext()) ? trace.setSpan(parent, span) : undefined;
}

/** Ends an export call's span with its outcome (the metrics' call outcomes) and, when it failed, its error. */
export function endGuestCall(span: Span, outcome: string, err?: unknown): void {
  if (!span.isRecording()) return;
  span.setAttribute(ATTR.callOutcome, outcome);
  if (err !== undefined) failSpan(span, err);
  span.end();
}

// --- host functions and HTTP requests (host/runtime/capabilities/guest-capabilities.ts) ---

/** Runs a host function call of `plugin` (`namespace.name`) under its span. */
export function traceHostFunction<R>(plugin: string, namespace: string, name: string, run: () => R | Promise<R>): R | Promise<R> {
  const span = tracer.startSpan(SPANS.hostFunction.name);
  if (!span.isRecording()) return run();
  span.setAttributes({ [ATTR.plugin]: plugin, [ATTR.fnNamespace]: namespace, [ATTR.fnName]: name });
  const failed = (err: unknown): never => {
    failSpan(span, err);
    span.end();
    throw err;
  };
  let out: R | Promise<R>;
  try {
    out = context.with(trace.setSpan(context.active(), span), run);
  } catch (err) {
    return failed(err);
  }
  if (!(out instanceof Promise)) {
    span.end();
    return out;
  }
  return out.then((value) => {
    span.end();
    return value;
  }, failed);
}

/** What a fenced request carries, for its span. */
export interface FencedLock {
  readonly name: string;
  readonly fence: number;
}

/** Adds `[name, value]` pairs to an array carrier. */
const PAIRS: TextMapSetter<[string, string][]> = { set: (carrier, key, value) => void carrier.push([key, value]) };

/**
 * Runs a guest's HTTP request under a CLIENT span: `send` gets the headers the global propagator
 * writes for it (W3C `traceparent`, ...; none when no propagator is registered, or when the guest
 * set that header itself), to send with the fence headers.
 */
export async function traceHttp<R extends { readonly status: number }>(
  plugin: string,
  method: string,
  url: string,
  guestHeaders: readonly (readonly [string, string])[],
  fenced: FencedLock | undefined,
  send: (traceHeaders: [string, string][]) => Promise<R>,
): Promise<R> {
  const span = tracer.startSpan(method, { kind: SpanKind.CLIENT });
  const headers: [string, string][] = [];
  propagation.inject(trace.setSpan(context.active(), span), headers, PAIRS);
  const own = headers.length > 0 && guestHeaders.length > 0 ? new Set(guestHeaders.map(([n]) => n.toLowerCase())) : undefined;
  const traceHeaders = own ? headers.filter(([n]) => !own.has(n.toLowerCase())) : headers;
  if (!span.isRecording()) return send(traceHeaders);
  span.setAttributes({ [ATTR.plugin]: plugin, [ATTR.httpMethod]: method, ...urlAttributes(url) });
  if (fenced) span.setAttributes({ [ATTR.lockName]: fenced.name, [ATTR.fence]: fenced.fence });
  try {
    const res = await send(traceHeaders);
    span.setAttribute(ATTR.httpStatus, res.status);
    if (res.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
    return res;
  } catch (err) {
    failSpan(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** The URL's attributes, its query and fragment left out (they may carry secrets). */
function urlAttributes(url: string): Record<string, string | number> {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return {};
  }
  const port = u.port !== "" ? Number(u.port) : u.protocol === "https:" ? 443 : u.protocol === "http:" ? 80 : undefined;
  return { [ATTR.url]: `${u.origin}${u.pathname}`, [ATTR.serverAddress]: u.hostname, ...(port !== undefined && { [ATTR.serverPort]: port }) };
}

// --- schedule ticks (host/scheduler/scheduler.ts) ---

/** What a tick's span names. */
export interface TickInfo {
  readonly id: string;
  readonly plugin: string;
  readonly export: string;
}

/** Error outcomes of a tick. */
const FAILED_TICKS = new Set(["failed", "skipped_error"]);

/**
 * Runs one tick of `schedule` under its span; its outcome (the scheduler's) is the span's. `root`:
 * a tick its timer fired starts a trace of its own (else the context the host started in would be
 * the parent of every tick, forever); one run on request (runTick) is a child of the caller's context.
 */
export function traceTick<O extends string>(schedule: TickInfo, tickAtMs: number, run: () => Promise<O>, root = false): Promise<O> {
  const span = tracer.startSpan(SPANS.tick.name, root ? { root: true } : undefined);
  if (!span.isRecording()) return run();
  span.setAttributes({ [ATTR.schedule]: schedule.id, [ATTR.plugin]: schedule.plugin, [ATTR.exportName]: schedule.export, [ATTR.tickAtMs]: tickAtMs });
  return context.with(trace.setSpan(context.active(), span), run).then(
    (outcome) => {
      span.setAttribute(ATTR.tickOutcome, outcome);
      if (FAILED_TICKS.has(outcome)) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      return outcome;
    },
    (err: unknown) => {
      failSpan(span, err);
      span.end();
      throw err;
    },
  );
}
