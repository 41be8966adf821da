// Bench part "tracing": what lockhost's spans (@opentelemetry/api only) cost on the hot paths.
// One LockService on memory and its bench guests, measured in three modes that take turns in
// interleaved rounds (the API's globals are switched between runs):
//   "baseline": lockhost's tracer hands out one constant non-recording span: the hooks as if
//               compiled out (a call returning a constant), no context manager, no propagator;
//   "off":      nothing registered, as in an application without an OpenTelemetry SDK: each
//               hook is the API's own no-op (the proxy tracer finds no delegate, makes a
//               NonRecordingSpan, checks isRecording);
//   "on":       the SDK's tracer (BasicTracerProvider, a BatchSpanProcessor, as production runs it,
//               into an exporter that drops every span, its queue large enough that none is lost
//               before export), the AsyncLocalStorage context manager and the W3C propagator.
// Paths: try+release pairs through the LockService (an acquisition span and a hold span each
// when on), host -> guest export calls (a guest call span), and a guest's own try+release loop
// inside one call (its lock spans are the call's children), in the worker and inline runtimes.
// Reported: medians of µs per operation from wall time, and off/baseline and on/off.
import { context, propagation, trace, type Span, type Tracer } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { Runtime } from "../abi/ops.js";
import { LockService } from "../host/locking/service.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { tracer } from "../host/tracing/tracer.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { fmt, guestLoop, INLINE, ROUNDS, startBenchGuests, TTL_MS } from "./harness.js";
import { median, table } from "./stats.js";

const OPS = Number(process.env.BENCH_TRACING_OPS ?? 20_000);
const CALLS = Number(process.env.BENCH_TRACING_CALLS ?? 4_000);

const MODES = ["baseline", "off", "on"] as const;
type Mode = (typeof MODES)[number];

/** An exporter that drops what it is given: the SDK's work, not an exporter's, is measured. */
const DROP: SpanExporter = {
  export: (_spans, done) => done({ code: 0 }),
  shutdown: () => Promise.resolve(),
};

const provider = new BasicTracerProvider({
  spanProcessors: [new BatchSpanProcessor(DROP, { maxQueueSize: 1 << 17, maxExportBatchSize: 8_192, scheduledDelayMillis: 100 })],
});
const sdkTracer = provider.getTracer("lockhost");
const manager = new AsyncLocalStorageContextManager();
/** The one span the baseline hands out: made once, never recording. */
const CONSTANT: Span = trace.wrapSpanContext({ traceId: "0".repeat(32), spanId: "0".repeat(16), traceFlags: 0 });

/** The proxy tracer's own startSpan: with no provider registered, the API's no-op path. */
const proxyStartSpan = (Object.getPrototypeOf(tracer) as Tracer).startSpan;
const constantStartSpan: Tracer["startSpan"] = () => CONSTANT;
const sdkStartSpan: Tracer["startSpan"] = sdkTracer.startSpan.bind(sdkTracer);

/**
 * Puts the API's globals (and lockhost's tracer) in `mode`. lockhost's tracer is the API's proxy,
 * which would keep an SDK tracer once it found one, so no provider is ever registered: its
 * startSpan is switched instead (an own property in every mode, so the object keeps one shape),
 * and "off" runs the proxy's own no-op path.
 */
function enter(mode: Mode): void {
  const t = tracer as { startSpan: Tracer["startSpan"] };
  context.disable();
  propagation.disable();
  t.startSpan = mode === "baseline" ? constantStartSpan : mode === "on" ? sdkStartSpan : proxyStartSpan;
  if (mode === "on") {
    context.setGlobalContextManager(manager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  }
}

/** ns per no-op hook (startSpan and isRecording, as the lock path makes them with nothing registered), over `n` in a row. */
function nsPerNoopHook(n: number): number {
  enter("off");
  let recording = 0;
  const started = performance.now();
  for (let i = 0; i < n; i++) if (tracer.startSpan("lockhost.lock.acquire").isRecording()) recording++;
  const ns = ((performance.now() - started) * 1e6) / n;
  if (recording > 0) throw new Error("a span recorded with no SDK registered");
  return ns;
}

/** µs per op of `n` ops in a row, from wall time. */
async function usPerOp(n: number, op: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < n; i++) await op();
  return ((performance.now() - started) * 1000) / n;
}

export async function tracingBench(): Promise<void> {
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const guests: Partial<Record<Runtime, GuestInstance>> = {};
  for (const runtime of INLINE ? (["worker", "inline"] as const) : (["worker"] as const)) [guests[runtime]] = await startBenchGuests(locks, 1, runtime);
  const paths: Record<string, () => Promise<number>> = {
    "memory try+release (service)": () =>
      usPerOp(OPS, async () => {
        await locks.release((await locks.tryLock("pair", { ttlMs: TTL_MS }))!);
      }),
  };
  for (const [runtime, guest] of Object.entries(guests)) {
    paths[`host -> guest call (${runtime})`] = () => usPerOp(CALLS, () => guest.call("loop", [0, 1]));
    paths[`guest try+release (${runtime})`] = async () => 1e6 / (await guestLoop(guest, OPS, 1)).opsPerSec;
  }
  const names = Object.keys(paths);
  const us = Object.fromEntries(MODES.map((m) => [m, Object.fromEntries(names.map((n) => [n, [] as number[]]))])) as Record<Mode, Record<string, number[]>>;
  try {
    // One warm-up round, then ROUNDS interleaved: on every path the modes take turns, in a rotating order.
    for (let r = 0; r <= ROUNDS; r++) {
      for (const name of names) {
        for (let k = 0; k < MODES.length; k++) {
          const mode = MODES[(r + k) % MODES.length]!;
          enter(mode);
          const v = await paths[name]!();
          if (r > 0) us[mode][name]!.push(v);
        }
      }
    }
  } finally {
    enter("off");
    await Promise.all(Object.values(guests).map((g) => g.close()));
    await locks.close();
    await provider.shutdown();
  }
  console.log(`\nlockhost bench: tracing through @opentelemetry/api (${ROUNDS} interleaved rounds, medians; µs per operation from wall time)\n`);
  const ratio = (a: number[], b: number[]): number => median(a.map((v, i) => v / b[i]!));
  const rows = names.map((name) => {
    const [base, off, on] = MODES.map((m) => us[m][name]!);
    return [
      name,
      fmt(median(base!), 3),
      fmt(median(off!), 3),
      fmt(median(on!), 3),
      fmt(ratio(off!, base!), 3),
      fmt(median(on!.map((v, i) => v - off![i]!)), 3),
      fmt(ratio(on!, off!), 3),
    ];
  });
  console.log(table(["path", "baseline µs", "off µs", "on µs", "off/baseline", "on cost µs", "on/off"], rows));
  const hooks = Array.from({ length: ROUNDS }, () => nsPerNoopHook(1_000_000));
  console.log(`\none no-op hook with no SDK registered (startSpan + isRecording): ${fmt(median(hooks), 1)} ns (median of ${ROUNDS} runs of 1,000,000)`);
}
