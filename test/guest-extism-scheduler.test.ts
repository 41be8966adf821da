// The scheduler runs an Extism plugin's export under its schedule lock like any guest export,
// in every runtime this Node has: two nodes on one backend, one runs each tick, the plugin sees
// the schedule's lock as handle 0 (held, with its fence) and writes under that fence through a
// real HTTP server behind lockhost/fence, which sees the fences increase.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import type { Runtime } from "../abi/ops.js";
import type { ScheduledConfig } from "../host/config/types.js";
import type { HttpGrant } from "../host/runtime/capabilities/http/index.js";
import { LockService } from "../host/locking/service.js";
import { Scheduler, type TickEvent } from "../host/scheduler/scheduler.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { fenceGuard, fenceOf } from "../fence/index.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { GUEST_RUNTIMES, startGuest } from "./support/guest.js";
import { captureLogger, guestTraces } from "./support/log.js";
import { closeNodes, type SchedulerNode } from "./support/scheduler-nodes.js";
import { sleep, until } from "./support/until.js";
import { parseConfig } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { guestWasm } from "./support/guests.js";

const nodes: (SchedulerNode & { ticks: TickEvent[]; log: ReturnType<typeof captureLogger> })[] = [];
afterEach(() => closeNodes(nodes));

let server: Server | undefined;
afterAll(async () => {
  server?.closeAllConnections();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
});

/** A resource behind lockhost/fence: the fences it accepted, in order. */
async function ledger(): Promise<{ url: string; fences: number[]; refused: string[] }> {
  const fences: number[] = [];
  const refused: string[] = [];
  const guard = fenceGuard({ onRefused: (r) => refused.push(r.error) });
  server ??= createServer();
  server.removeAllListeners("request");
  server.on("request", (req, res) => {
    req.resume();
    req.on("end", () =>
      guard(req, res, () => {
        fences.push(Number(fenceOf(req)!.fence));
        res.end("ok");
      }),
    );
  });
  if (!server.listening) await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/ledger`, fences, refused };
}

const grant = {
  allowedHosts: ["127.0.0.1:*"],
  methods: ["POST"],
  timeoutMs: 2_000,
  maxRequestBytes: 1 << 16,
  maxResponseBytes: 1 << 16,
  headers: {},
  allowPrivateRanges: ["127.0.0.0/8"],
  maxRedirects: 0,
} as HttpGrant;

const schedule: ScheduledConfig = {
  id: "tick",
  plugin: "test",
  export: "tick",
  schedule: { kind: "interval", everyMs: 200, text: "200ms" },
  hint: "require_global",
  ttlMs: 5_000,
  keepalive: false,
  fair: false,
};

describe.each(GUEST_RUNTIMES)("the scheduler runs an Extism export under its lock (%s runtime)", (runtime: Runtime) => {
  async function node(name: string, backend: MemoryBackend, url: string): Promise<(typeof nodes)[number]> {
    const log = captureLogger();
    const locks = new LockService(backend, { node: name });
    const guest: GuestInstance = await startGuest("extism-locks", locks, log.logger, { runtime, http: grant, config: { ledger_url: url } });
    const scheduler = new Scheduler([schedule], { locks, guest: () => guest, log: log.logger });
    const ticks: TickEvent[] = [];
    scheduler.on("tick", (t) => ticks.push(t));
    const n = { scheduler, locks, guest, ticks, log };
    nodes.push(n);
    return n;
  }

  it("one node runs each tick; the plugin holds the lock (handle 0) and writes under its fence", async () => {
    const { url, fences, refused } = await ledger();
    const backend = new MemoryBackend();
    const a = await node("a", backend, url);
    const b = await node("b", backend, url);
    a.scheduler.start();
    b.scheduler.start();
    await sleep(1_300);
    a.scheduler.stop();
    b.scheduler.stop();
    await Promise.all([a.scheduler.idle(), b.scheduler.idle()]);
    const ran = [...a.ticks, ...b.ticks].filter((t) => t.outcome === "ran").sort((x, y) => x.tickAtMs - y.tickAtMs);
    expect(ran.length).toBeGreaterThanOrEqual(3);
    expect(new Set(ran.map((t) => t.tickAtMs)).size).toBe(ran.length);
    // What the plugin saw: its schedule's lock held, with the tick's fence, and its write accepted.
    const traces = [...guestTraces(a.log), ...guestTraces(b.log)];
    expect(traces.filter((l) => l === 'tick state {"result":1}')).toHaveLength(ran.length);
    expect(traces.filter((l) => l === "wrote 200 ok")).toHaveLength(ran.length);
    expect(fences).toEqual(ran.map((t) => t.fence));
    expect(refused).toEqual([]);
  });
});

describe.each(GUEST_RUNTIMES)("a host configured in TOML runs an Extism plugin (%s runtime)", (runtime: Runtime) => {
  it('loads it by abi = "extism", gives it its config and grant, and runs its schedule', async () => {
    const { url, fences } = await ledger();
    const toml = `
[[plugins]]
name = "billing"
wasm = ${JSON.stringify(guestWasm("extism-locks"))}
abi = "extism"
isolation = "${runtime}"
memory_limit_mib = 8
[plugins.config]
ledger_url = "${url}"
[plugins.http]
allowed_hosts = ["127.0.0.1:*"]
allow_private_ranges = ["127.0.0.0/8"]
methods = ["POST"]

[[scheduled]]
plugin = "billing"
export = "tick"
schedule = "200ms"
`;
    const log = captureLogger();
    const host = await Host.start(parseConfig(toml, { source: "extism.toml", baseDir: "/" }), { logger: log.logger, backend: new MemoryBackend() });
    host.scheduler.start();
    try {
      await until("two ticks written", 10_000, () => fences.length >= 2);
      expect(fences[1]).toBeGreaterThan(fences[0]!);
      expect(guestTraces(log)).toContain('tick state {"result":1}');
      // Called from the host API the Extism way: the input in, the output out.
      expect(await host.guest("billing").callString("call_try", [JSON.stringify({ key: "k", ttl_ms: 5_000 })])).toMatch(/^\{"result":\d+\}$/);
    } finally {
      await host.stop(2_000);
    }
  });
});
