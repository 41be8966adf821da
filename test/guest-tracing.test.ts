// OpenTelemetry traces through @opentelemetry/api, recorded by the SDK's in-memory exporter (a
// dev dependency, registered here as an application would): lock acquisitions and holds, guest
// calls in every runtime this Node has, host function calls, a guest's HTTP request to a real
// local server (which receives the W3C traceparent beside the fence) and schedule ticks, on the
// memory backend and on Redis. First, with nothing registered: nothing recorded, no header sent.
import { createServer, type IncomingMessage, type Server } from "node:http";
import { context, propagation, trace, SpanKind, SpanStatusCode, type Span } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { ScheduledConfig } from "../host/config/types.js";
import type { LockBackend } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import type { HostFunctions } from "../host/runtime/capabilities/functions.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { Scheduler } from "../host/scheduler/scheduler.js";
import { tracer } from "../host/tracing/tracer.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { RedisBackend } from "../plugins/backends/redis/index.js";
import { FENCE_HEADER } from "../fence/headers.js";
import { dropRedisPrefix } from "./support/cleanup.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { captureLogger, silent } from "./support/log.js";
import { redisUrl } from "./support/servers.js";
import { closeServer, listenLocal } from "./support/http-server.js";

const REDIS_PREFIX = `lockhost-test-tracing:${Math.random().toString(36).slice(2, 10)}:`;

const BACKENDS: readonly { readonly name: string; readonly create: () => LockBackend }[] = [
  { name: "memory", create: () => new MemoryBackend() },
  { name: "redis", create: () => new RedisBackend({ url: redisUrl(), keyPrefix: REDIS_PREFIX, commandTimeoutMs: 2_000, reclaimOwnLocks: false }, silent) },
];

/** What the test server saw of each request: its path and headers. */
const seen: { url: string; headers: IncomingMessage["headers"] }[] = [];
let server: Server;
let base: string;

beforeAll(async () => {
  server = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push({ url: req.url!, headers: req.headers });
      res.writeHead(201, { "content-type": "text/plain" });
      res.end("ok");
    });
  });
  base = await listenLocal(server);
});
afterAll(async () => {
  await closeServer(server);
  await dropRedisPrefix(redisUrl(), REDIS_PREFIX);
});

/** The host functions the caps guest imports; charge makes a span of the embedder's own. */
const functions: HostFunctions = {
  billing: {
    echo: (input) => (input[0] === 0x21 ? Promise.reject(new Error("no bangs")) : input),
    wait: () => new Promise(() => undefined),
    charge: async (input) => {
      await new Promise((resolve) => setTimeout(resolve, 2));
      tracer.startSpan("embedder.charge").end();
      return `charged ${new TextDecoder().decode(input)}`;
    },
  },
};

const services: LockService[] = [];
const guests: GuestInstance[] = [];
afterEach(async () => {
  await Promise.all(guests.splice(0).map((g) => g.close()));
  for (const s of services.splice(0)) {
    expect(s.heldCount).toBe(0);
    await s.close();
  }
});

function service(create: () => LockBackend): LockService {
  const s = new LockService(create(), { node: "node-a" });
  services.push(s);
  return s;
}

async function capsGuest(locks: LockService, runtime: (typeof GUEST_RUNTIMES)[number]): Promise<GuestInstance> {
  const g = await startGuest("caps", locks, captureLogger().logger, {
    runtime,
    plugin: "billing",
    globalKeys: ["ledger"],
    functions: ["billing"],
    hostFunctions: functions,
    http: {
      allowedHosts: ["127.0.0.1:*"],
      methods: ["GET", "POST"],
      timeoutMs: 5_000,
      maxRequestBytes: 1 << 20,
      maxResponseBytes: 100_000,
      headers: {},
      allowPrivateRanges: ["127.0.0.0/8"],
      maxRedirects: 0,
    },
  });
  guests.push(g);
  return g;
}

describe("with no OpenTelemetry SDK registered", () => {
  beforeEach(() => {
    seen.length = 0;
  });

  it("records nothing and adds no header: the API's spans are no-ops", async () => {
    const locks = service(() => new MemoryBackend());
    // An application span started now is a no-op too: nothing is recording anywhere.
    const outer = tracer.startSpan("job");
    expect(outer.isRecording()).toBe(false);
    await context.with(trace.setSpan(context.active(), outer), async () => {
      const lease = await locks.acquire("k", { ttlMs: 5_000, waitMs: 100 });
      expect(trace.getActiveSpan()?.isRecording() ?? false).toBe(false);
      await locks.release(lease);
    });
    for (const runtime of GUEST_RUNTIMES) {
      const g = await capsGuest(locks, runtime);
      expect(await g.call("post", [`${base}/entries`, "x", "", "ledger"])).toBe(201);
    }
    expect(seen).toHaveLength(GUEST_RUNTIMES.length);
    for (const { headers } of seen) {
      expect(headers[FENCE_HEADER]).toMatch(/^\d+$/);
      expect(headers.traceparent).toBeUndefined();
      expect(headers.tracestate).toBeUndefined();
    }
  });
});

describe("with the SDK registered", () => {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const manager = new AsyncLocalStorageContextManager();

  beforeAll(() => {
    context.setGlobalContextManager(manager.enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    await provider.shutdown();
    trace.disable();
    propagation.disable();
    context.disable();
  });
  beforeEach(() => {
    exporter.reset();
    seen.length = 0;
  });

  const spans = (): ReadableSpan[] => exporter.getFinishedSpans();
  const named = (name: string): ReadableSpan[] => spans().filter((s) => s.name === name);
  const one = (name: string): ReadableSpan => {
    const all = named(name);
    expect(all, `spans named ${name}`).toHaveLength(1);
    return all[0]!;
  };
  const isChild = (child: ReadableSpan, parent: { spanContext(): { spanId: string; traceId: string } }): boolean =>
    child.parentSpanContext?.spanId === parent.spanContext().spanId && child.spanContext().traceId === parent.spanContext().traceId;

  /** Runs `fn` inside an application span "job" (ended after), as an embedder's code would. */
  async function inJob<T>(fn: () => Promise<T>): Promise<{ job: Span; value: T }> {
    return tracer.startActiveSpan("job", async (job) => {
      try {
        return { job, value: await fn() };
      } finally {
        job.end();
      }
    });
  }

  describe.each(BACKENDS)("$name backend", ({ name, create }) => {
    it("traces an embedder's acquisition (a child of its active span) and the hold until release", async () => {
      const locks = service(create);
      const { job, value: lease } = await inJob(async () => {
        const lease = await locks.acquire("orders", { ttlMs: 5_000, waitMs: 1_000 });
        await locks.release(lease);
        return lease;
      });
      const acquire = one("lockhost.lock.acquire");
      expect(isChild(acquire, job)).toBe(true);
      expect(acquire.attributes).toMatchObject({
        "lockhost.lock.name": "global:orders",
        "lockhost.lock.kind": "mutex",
        "lockhost.lock.mode": "exclusive",
        "lockhost.plugin": "host",
        "lockhost.lock.wait_ms": 1_000,
        "lockhost.lock.outcome": "acquired",
        "lockhost.lock.fence": lease.fence,
      });
      const hold = one("lockhost.lock.hold");
      expect(isChild(hold, acquire)).toBe(true);
      expect(hold.attributes).toMatchObject({ "lockhost.lock.name": "global:orders", "lockhost.lock.fence": lease.fence, "lockhost.lock.end": "released" });
      expect(hold.status.code).toBe(SpanStatusCode.UNSET);
    });

    it("says contended for a try that found the lock held, timeout for a wait that ran out, and lost with the reason", async () => {
      const [a, b] = [service(create), service(create)];
      // On memory two services do not share locks: a's service stands for the other caller there.
      const other = name === "redis" ? b : a;
      const held = await a.try("busy", { ttlMs: 10_000, kind: "rw", mode: "exclusive" });
      expect(held).not.toBeNull();
      exporter.reset();
      expect(await other.try("busy", { ttlMs: 1_000, kind: "rw", mode: "shared" })).toBeNull();
      const waiting = other.acquire("busy", { ttlMs: 1_000, waitMs: 50, kind: "rw", mode: "shared" });
      await expect(waiting).rejects.toMatchObject({ code: "TIMEOUT" });
      const [tried, waited] = named("lockhost.lock.acquire");
      expect(tried!.attributes).toMatchObject({
        "lockhost.lock.outcome": "contended",
        "lockhost.lock.kind": "rw",
        "lockhost.lock.mode": "shared",
        "lockhost.lock.wait_ms": 0,
      });
      expect(waited!.attributes).toMatchObject({ "lockhost.lock.outcome": "timeout", "lockhost.lock.wait_ms": 50, "lockhost.error.code": "TIMEOUT" });
      expect(named("lockhost.lock.hold")).toHaveLength(0);
      // The holder loses its lock to an operator's force-release: its hold ends lost, with why.
      expect(await a.forceRelease("busy", { kind: "rw" })).toBe(1);
      const hold = one("lockhost.lock.hold");
      expect(hold.attributes).toMatchObject({ "lockhost.lock.end": "lost", "lockhost.lock.kind": "rw", "lockhost.lock.fence": held!.fence });
      expect(String(hold.attributes["lockhost.lock.lost_reason"])).toMatch(/force-released/);
      expect(hold.status.code).toBe(SpanStatusCode.ERROR);
    });

    it("traces a schedule tick: its lock's acquisition and the guest call are its children", async () => {
      const locks = service(create);
      const guest = await startGuest("locker", locks, captureLogger().logger, {});
      guests.push(guest);
      const config: ScheduledConfig = {
        id: "tracing-tick",
        plugin: "test",
        export: "noop",
        schedule: { kind: "interval", everyMs: 60_000, text: "60s" },
        hint: "require_global",
        ttlMs: 5_000,
        keepalive: false,
        fair: false,
      };
      const scheduler = new Scheduler([config], { locks, guest: () => guest, log: silent });
      expect(await scheduler.runTick("tracing-tick")).toBe("ran");
      await scheduler.releaseParked();
      const tick = one("lockhost.schedule.tick");
      expect(tick.attributes).toMatchObject({
        "lockhost.schedule": "tracing-tick",
        "lockhost.plugin": "test",
        "lockhost.export": "noop",
        "lockhost.tick.outcome": "ran",
      });
      const acquire = one("lockhost.lock.acquire");
      expect(isChild(acquire, tick)).toBe(true);
      expect(acquire.attributes).toMatchObject({ "lockhost.lock.name": "lockhost:schedule:tracing-tick", "lockhost.lock.outcome": "acquired" });
      const call = one("lockhost.guest.call");
      expect(isChild(call, tick)).toBe(true);
      expect(call.attributes).toMatchObject({ "lockhost.plugin": "test", "lockhost.export": "noop", "lockhost.call.outcome": "ok" });
    });

    it("starts a trace of its own for each tick its timer fires, whatever context the scheduler was started in", async () => {
      const locks = service(create);
      const guest = await startGuest("locker", locks, captureLogger().logger, {});
      guests.push(guest);
      const config: ScheduledConfig = {
        id: "tracing-timer",
        plugin: "test",
        export: "noop",
        schedule: { kind: "interval", everyMs: 100, text: "100ms" },
        hint: "require_global",
        ttlMs: 5_000,
        keepalive: false,
        fair: false,
      };
      const scheduler = new Scheduler([config], { locks, guest: () => guest, log: silent });
      const ran = new Promise<void>((resolve) => scheduler.on("tick", (t: { outcome: string }) => t.outcome === "ran" && resolve()));
      const { job } = await inJob(async () => scheduler.start());
      try {
        await ran;
      } finally {
        scheduler.stop();
        await scheduler.idle();
        await scheduler.releaseParked();
      }
      const tick = named("lockhost.schedule.tick").find((s) => s.attributes["lockhost.tick.outcome"] === "ran")!;
      expect(tick.parentSpanContext).toBeUndefined();
      expect(tick.spanContext().traceId).not.toBe(job.spanContext().traceId);
      const call = named("lockhost.guest.call").find((s) => s.spanContext().traceId === tick.spanContext().traceId)!;
      expect(isChild(call, tick)).toBe(true);
    });

    describe.each(GUEST_RUNTIMES)("%s runtime", (runtime) => {
      it("traces a guest call, its lock, its host function and its HTTP request (traceparent and fence reach the resource)", async () => {
        const locks = service(create);
        const g = await capsGuest(locks, runtime);
        const { job } = await inJob(async () => {
          expect(await g.call("post", [`${base}/entries`, "x", "", "ledger"])).toBe(201);
          expect(await g.call("charge", ["ledger", 42])).toBeGreaterThan(0);
        });
        const [post, charge] = named("lockhost.guest.call");
        expect(named("lockhost.guest.call")).toHaveLength(2);
        for (const call of [post!, charge!]) expect(isChild(call, job)).toBe(true);
        expect(post!.attributes).toMatchObject({ "lockhost.plugin": "billing", "lockhost.export": "post", "lockhost.call.outcome": "ok" });

        // The guest's lock: a child of its call; its hold ends released (auto-release at the call's end).
        const [acquired] = named("lockhost.lock.acquire");
        expect(isChild(acquired!, post!)).toBe(true);
        expect(acquired!.attributes).toMatchObject({
          "lockhost.lock.name": "global:ledger",
          "lockhost.plugin": "billing",
          "lockhost.lock.outcome": "acquired",
        });
        const fence = acquired!.attributes["lockhost.lock.fence"];

        // The HTTP request: a CLIENT child of the call, whose context the server received as traceparent, beside the fence.
        const http = one("POST");
        expect(http.kind).toBe(SpanKind.CLIENT);
        expect(isChild(http, post!)).toBe(true);
        expect(http.attributes).toMatchObject({
          "http.request.method": "POST",
          "url.full": `${base}/entries`,
          "server.address": "127.0.0.1",
          "http.response.status_code": 201,
          "lockhost.lock.name": "global:ledger",
          "lockhost.lock.fence": fence,
        });
        expect(seen).toHaveLength(1);
        const { traceId, spanId } = http.spanContext();
        expect(seen[0]!.headers.traceparent).toBe(`00-${traceId}-${spanId}-01`);
        expect(seen[0]!.headers[FENCE_HEADER]).toBe(String(fence));

        // The host function: a child of the charge call; the embedder's own span inside it is its child.
        const fn = one("lockhost.host_function");
        expect(isChild(fn, charge!)).toBe(true);
        expect(fn.attributes).toMatchObject({ "lockhost.plugin": "billing", "lockhost.function.namespace": "billing", "lockhost.function.name": "charge" });
        expect(isChild(one("embedder.charge"), fn)).toBe(true);

        // Every span of the job is in the job's trace.
        for (const s of spans()) if (s !== undefined && s.name !== "lockhost.lock.hold") expect(s.spanContext().traceId).toBe(job.spanContext().traceId);
        for (const hold of named("lockhost.lock.hold")) expect(hold.attributes["lockhost.lock.end"]).toBe("released");
      });

      it("leaves a traceparent the guest sets itself as it is: the host adds none beside it", async () => {
        const locks = service(create);
        const g = await capsGuest(locks, runtime);
        const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
        await inJob(async () => {
          expect(await g.call("post", [`${base}/entries`, "x", `traceparent: ${own}`, "ledger"])).toBe(201);
        });
        expect(seen).toHaveLength(1);
        expect(seen[0]!.headers.traceparent).toBe(own);
        expect(one("POST").kind).toBe(SpanKind.CLIENT);
      });

      it("marks a failed guest call and a failed host function as errors", async () => {
        const locks = service(create);
        const g = await capsGuest(locks, runtime);
        await inJob(async () => {
          expect(await g.call("echo", ["!boom", 64])).toBeLessThan(0);
          expect(await g.call("get", ["http://127.0.0.1:1/refused"])).toBeLessThan(0);
        });
        const fn = one("lockhost.host_function");
        expect(fn.status.code).toBe(SpanStatusCode.ERROR);
        expect(fn.attributes).toMatchObject({ "lockhost.function.name": "echo", "lockhost.error.code": "CALL_FAILED" });
        const get = named("lockhost.guest.call").find((s) => s.attributes["lockhost.export"] === "get")!;
        // The guest handled the failure (a -code): the call is ok; its HTTP span failed.
        expect(get.attributes["lockhost.call.outcome"]).toBe("ok");
        const http = one("GET");
        expect(isChild(http, get)).toBe(true);
        expect(http.status.code).toBe(SpanStatusCode.ERROR);
        expect(http.attributes["lockhost.error.code"]).toEqual(expect.any(String));
      });
    });
  });
});
