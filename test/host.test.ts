// The Host: config in, guests and scheduler up, everything released on stop.
import { createServer } from "node:net";
import { createServer as createHttpServer, request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { startLedgerService } from "../examples/ledger-service.js";
import { until } from "./support/until.js";
import { afterEach, describe, expect, it } from "vitest";
import * as S from "../abi/status.js";
import { resolveConfig, type ConfigInput } from "../host/config/load.js";
import { Host } from "../host/host.js";
import { jspiAvailable } from "../host/runtime/jspi.js";
import { GUEST_RUNTIMES } from "./support/guest.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { guestWasm } from "./support/guests.js";
import { dropRedisPrefix } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { databaseUrl, freePort, redisUrl } from "./support/servers.js";

const hosts: Host[] = [];
afterEach(async () => {
  await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
});

async function start(
  input: ConfigInput,
  backend = new MemoryBackend(),
): Promise<{ host: Host; log: ReturnType<typeof captureLogger>; backend: MemoryBackend }> {
  const log = captureLogger();
  const host = await Host.start(resolveConfig(input), { logger: log.logger, backend });
  hosts.push(host);
  return { host, log, backend };
}

const locker = { name: "locker", wasm: guestWasm("locker") };

describe("Host", () => {
  it("runs the example plugins: the ledger guest's fenced write is accepted by a real ledger service, and a stale one refused", async () => {
    const ledger = await startLedgerService();
    // A write delayed in flight: the proxy holds the first request it gets until let go.
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    let stalled = 0;
    const proxy = createHttpServer((req, res) => {
      stalled++;
      void held.then(() => {
        const out = httpRequest(`${ledger.url}${req.url}`, { method: req.method, headers: req.headers }, (reply) => {
          res.writeHead(reply.statusCode!, reply.headers);
          reply.pipe(res);
        });
        req.pipe(out);
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    try {
      const backend = new MemoryBackend();
      // Each plugin may reach its ledger URL's host and port, and nothing else on this machine.
      const ledgerPlugin = (url: string) => ({
        name: "ledger",
        wasm: guestWasm("ledger", "example"),
        globalKeys: ["ledger"],
        config: { ledger_url: url },
        http: { allowedHosts: [new URL(url).host], methods: ["POST"], allowPrivateRanges: ["127.0.0.0/8"] },
      });
      const a = await start({ host: { node: "node-a" }, plugins: [{ name: "report", wasm: guestWasm("report", "example") }, ledgerPlugin(proxyUrl)] }, backend);
      const b = await start({ host: { node: "node-b" }, plugins: [ledgerPlugin(ledger.url)] }, backend);
      await a.host.call("report", "run");
      expect(a.log.messages()).toContain("guest: report: generated with fence 1 (total 500500)");

      // node-a takes the lock (fence 1) and sends its write, which stalls on the way.
      const slow = a.host.call("ledger", "run");
      await until("node-a's write reaches the proxy", 5_000, () => stalled === 1);
      // Its lease ends meanwhile (here: force-released), and node-b writes with fence 2.
      expect(await b.host.locks.forceRelease({ name: "global:ledger" })).toBe(1);
      await b.host.call("ledger", "run");
      expect(b.log.messages().find((m) => m.startsWith("guest: ledger: write accepted with fence 2"))).toBeDefined();
      // The stale write arrives last: the service refuses it, and the guest hears why.
      letGo();
      await slow;
      expect(a.log.messages().find((m) => m.startsWith("guest: ledger: write refused, stale fence 1:"))).toContain('"error":"stale_fence"');
      expect(ledger.balance()).toBe(100);
      expect(ledger.entries().map((e) => e.fence)).toEqual([2n]);
      expect(a.host.locks.heldCount + b.host.locks.heldCount).toBe(0);
    } finally {
      proxy.closeAllConnections();
      await new Promise((resolve) => proxy.close(resolve));
      await ledger.close();
    }
  });

  it("refuses to start with a plugin granted a host function namespace the embedder did not register", async () => {
    const log = captureLogger();
    const config = resolveConfig({ source: "lockhost.toml", plugins: [{ ...locker, functions: ["billing"] }] });
    await expect(Host.start(config, { logger: log.logger, backend: new MemoryBackend(), functions: { crm: {} } })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: 'lockhost.toml: [[plugins]] "locker": functions grants namespace "billing", which the embedder did not register (registered: crm)',
    });
  });

  it("releases every lock on stop, kept ones included", async () => {
    const { host, backend } = await start({ plugins: [locker] });
    expect(await host.call("locker", "hold", [1, 60_000, S.FLAG_KEEP])).toBeGreaterThan(0);
    await host.locks.tryLock("embedder-key", { ttlMs: 60_000 });
    expect(backend.size).toBe(2);
    await host.stop();
    expect(backend.size).toBe(0);
    await expect(host.call("locker", "noop")).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("warns that a config without plugins runs idle", async () => {
    const { log } = await start({ source: "/etc/lockhost/empty.toml" });
    expect(log.lines.find((l) => l.level === 40)?.msg).toBe(
      "/etc/lockhost/empty.toml declares no [[plugins]]: this host runs no guest and fires no schedule; it only serves lock calls made through its API",
    );
  });

  it("logs a lost lock and a force-release at info, acquisitions and releases at debug", async () => {
    const { host, log } = await start({ plugins: [locker] });
    const lease = (await host.locks.tryLock("logged", { ttlMs: 60_000 }))!;
    await host.locks.forceRelease({ name: "global:logged" });
    const kept = (await host.locks.tryLock("logged-2", { ttlMs: 60_000 }))!;
    await host.locks.release(kept);
    const line = (msg: string) => log.lines.find((l) => l.msg.startsWith(msg));
    expect(line("lock force-released by an operator")).toMatchObject({ level: 30, lock: "global:logged" });
    expect(line("lock lost: ")).toMatchObject({ level: 30, lock: "global:logged", fence: lease.fence, plugin: "host" });
    expect(line("lock acquired")).toMatchObject({ level: 20, lock: "global:logged", fence: lease.fence });
    expect(line("lock released")).toMatchObject({ level: 20, lock: "global:logged-2" });
  });

  it("refuses a scheduled export the plugin does not have, naming it", async () => {
    await expect(start({ plugins: [locker], scheduled: [{ plugin: "locker", export: "nope", schedule: "1s" }] })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining('plugin locker has no export "nope"'),
    });
  });

  it("suggests the export a schedule most likely meant, and reports every bad schedule at once", async () => {
    const err = await start({
      source: "lockhost.toml",
      plugins: [locker],
      scheduled: [
        { id: "typo", plugin: "locker", export: "nop", schedule: "1s" },
        { id: "args", plugin: "locker", export: "add", schedule: "1s" },
        { id: "far", plugin: "locker", export: "zzzzzzzz", schedule: "1s" },
      ],
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "CONFIG_INVALID", details: { errors: 3 } });
    const lines = (err as Error).message.split("\n");
    expect(lines[0]).toBe("lockhost.toml: 3 errors:");
    expect(lines[1]).toMatch(/^ {2}lockhost\.toml: \[\[scheduled\]\] "typo": plugin locker has no export "nop" \(did you mean "noop"\? it exports: .*\bnoop\b/);
    expect(lines[2]).toBe('  lockhost.toml: [[scheduled]] "args": export add of plugin locker takes arguments (i32, i32); a scheduled export must take none');
    expect(lines[3]).toMatch(/^ {2}lockhost\.toml: \[\[scheduled\]\] "far": plugin locker has no export "zzzzzzzz" \(it exports: /);
  });

  it("says which export a call most likely meant when it names none the plugin has", async () => {
    const { host } = await start({ plugins: [locker] });
    await expect(host.call("locker", "holdspin", [1, 1_000])).rejects.toMatchObject({
      code: "UNKNOWN_EXPORT",
      message: expect.stringMatching(/^plugin locker has no export "holdspin" \(did you mean "holdSpin"\? it exports: /),
    });
  });

  it("refuses a scheduled export that takes arguments", async () => {
    await expect(start({ plugins: [locker], scheduled: [{ plugin: "locker", export: "add", schedule: "1s" }] })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining("export add of plugin locker takes arguments (i32, i32); a scheduled export must take none"),
    });
  });

  it("refuses a guest that does not meet the ABI, and leaves nothing running", async () => {
    const backend = new MemoryBackend();
    await expect(start({ plugins: [locker, { name: "old", wasm: guestWasm("noversion") }] }, backend)).rejects.toMatchObject({ code: "ABI_UNSUPPORTED" });
    expect(backend.size).toBe(0);
  });

  it('runs a plugin inline where this Node has JSPI, and elsewhere refuses isolation = "inline" naming the file, the key and the Node it needs', async () => {
    const source = "/etc/lockhost/lockhost.toml";
    if (jspiAvailable()) {
      const { host } = await start({ source, plugins: [{ ...locker, isolation: "inline" }] });
      expect(host.config.plugins[0]!.runtime).toBe("inline");
      expect(await host.call("locker", "hold", [2, 60_000, 0])).toBeGreaterThan(0);
      expect(host.locks.heldCount).toBe(0); // auto-released when the call returned
    } else {
      await expect(start({ source, plugins: [{ ...locker, isolation: "inline" }] })).rejects.toMatchObject({
        code: "CONFIG_INVALID",
        message:
          `/etc/lockhost/lockhost.toml: plugins[0] ("locker"): isolation "inline" is not available on this Node: it needs WebAssembly JSPI: ` +
          `Node 26 or later, or Node 24 started with --experimental-wasm-jspi (this is Node ${process.versions.node}); use "worker", or "auto" to ` +
          `fall back to it`,
      });
    }
  });

  it.each([
    ["redis", (port: number): ConfigInput["locking"] => ({ backend: "redis", redis: { url: `redis://:hunter2@127.0.0.1:${port}`, commandTimeoutMs: 300 } })],
    [
      "pg",
      (port: number): ConfigInput["locking"] => ({ backend: "pg", pg: { url: `postgres://postgres:hunter2@127.0.0.1:${port}/test`, commandTimeoutMs: 300 } }),
    ],
  ])("starts on %s while its server is down; guests get BACKEND_UNAVAILABLE, the host keeps running", async (_name, locking) => {
    const log = captureLogger();
    const host = await Host.start(resolveConfig({ locking: locking(await freePort()), plugins: [locker] }), { logger: log.logger });
    hosts.push(host);
    for (let i = 0; i < 3; i++) {
      const started = Date.now();
      // outcome(): 100 + the error's status code, after tracing its name and message.
      expect(await host.call("locker", "outcome", [1, 10_000, 0])).toBe(100 + S.BACKEND_UNAVAILABLE);
      expect(Date.now() - started).toBeLessThan(3_000);
    }
    expect(await host.call("locker", "add", [2, 3])).toBe(5);
    expect(log.messages().some((m) => m.includes("BACKEND_UNAVAILABLE"))).toBe(true);
    expect(JSON.stringify(log.lines)).not.toContain("hunter2");
  });

  it.each([
    [
      "redis",
      (): ConfigInput["locking"] => ({
        backend: "redis",
        redis: { url: `${redisUrl()}/15`.replace(/^redis:\/\//, "redis://lockhost-no-such-user:wrong-password@"), commandTimeoutMs: 1_000 },
      }),
      /WRONGPASS|invalid password|AUTH/,
    ],
    [
      "pg",
      (): ConfigInput["locking"] => ({ backend: "pg", pg: { url: databaseUrl().replace(/\/[^/]*$/, "/lockhost_no_such_database"), commandTimeoutMs: 2_000 } }),
      /lockhost_no_such_database/,
    ],
  ])("fails at start when %s refuses this host for good, naming the table, and leaves nothing running", async (_name, locking, why) => {
    const err = await Host.start(resolveConfig({ source: "/etc/lockhost.toml", locking: locking(), plugins: [locker] }), {
      logger: captureLogger().logger,
    }).catch((e: unknown) => e);
    if (err instanceof Host) hosts.push(err);
    expect(err).toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringMatching(/^\/etc\/lockhost.toml: \[locking\.(redis|pg)\]: the (redis|pg) backend refused this host for good/),
    });
    expect((err as Error).message).toMatch(why);
    // A refusal for good offers no hope of a retry in the background.
    expect((err as Error).message).not.toContain("reconnecting in the background");
  });

  it.each(GUEST_RUNTIMES)("ends a %s guest's wait at once on stop (-CANCELLED), instead of sitting out its wait_ms", async (runtime) => {
    const { host } = await start({ plugins: [{ name: "waiter", wasm: guestWasm("lifecycle"), isolation: runtime }] });
    const held = await host.locks.tryLock("k1", { ttlMs: 60_000, scope: { plugin: "waiter" } });
    expect(held).not.toBeNull();
    const waiting = host.call("waiter", "acquireKey", [1, 10_000, 30_000, 0]);
    await expect.poll(() => host.locks.stats().waiters, { timeout: 5_000 }).toBe(1);
    const started = performance.now();
    await host.stop(10_000);
    expect(performance.now() - started).toBeLessThan(2_000);
    expect(await waiting).toBe(-S.CANCELLED);
  });

  it("lets an in-flight host.call finish before stop resolves, and refuses new calls while stopping", async () => {
    const { host, backend } = await start({ plugins: [{ ...locker, callTimeoutMs: 300 }] });
    const events: string[] = [];
    const call = host.call("locker", "holdSpin", [1, 60_000]).then(
      () => "returned",
      (err: { code: string }) => err.code,
    );
    void call.then((code) => events.push(`call settled: ${code}`));
    await new Promise((r) => setTimeout(r, 50)); // the guest is spinning, holding test:k1
    expect(backend.size).toBe(1);
    const stopping = host.stop(2_000);
    await expect(host.call("locker", "noop")).rejects.toMatchObject({ code: "CLOSED" });
    await stopping;
    events.push("stopped");
    expect(await call).toBe("GUEST_TIMEOUT");
    expect(events).toEqual(["call settled: GUEST_TIMEOUT", "stopped"]);
    expect(backend.size).toBe(0);
  });

  it("warns that the memory backend is not distributed", async () => {
    const log = captureLogger();
    const host = await Host.start(resolveConfig({}), { logger: log.logger });
    hosts.push(host);
    expect(log.lines.some((l) => l.level === 40 && l.msg.includes("NOT shared with other hosts"))).toBe(true);
  });

  it("runs a require_global schedule on one of two hosts sharing a backend", async () => {
    const backend = new MemoryBackend();
    const input: ConfigInput = { plugins: [locker], scheduled: [{ id: "tick", plugin: "locker", export: "noop", schedule: "1s" }] };
    const a = await start({ ...input, host: { node: "a" } }, backend);
    const b = await start({ ...input, host: { node: "b" } }, backend);
    const tick = Date.now();
    const outcomes = await Promise.all([a.host.scheduler.runTick("tick", tick), b.host.scheduler.runTick("tick", tick)]);
    expect(outcomes.sort()).toEqual(["ran", "skipped_contended"]);
  });

  it("starts no admin listener without [admin]", async () => {
    const { host } = await start({});
    expect(host.admin).toBeUndefined();
  });

  it("starts the admin listener with the host, serves /stats from its lock service, and stops it with the host", async () => {
    const token = "host-test-token-0123456789";
    const { host, log } = await start({ host: { node: "admin-node" }, admin: { listen: "127.0.0.1:0", token } });
    const url = host.admin?.url;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:[1-9][0-9]*$/);
    expect(log.lines.find((l) => l.msg === "lockhost host started")).toMatchObject({ admin: url });

    const lease = await host.locks.tryLock("admin-k", { ttlMs: 60_000 });
    const res = await fetch(`${url}/stats`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { node: string; backend: string; stats: { held: number; acquisitions: number } };
    expect(body).toMatchObject({ node: "admin-node", backend: "memory", stats: { held: 1, acquisitions: 1 } });
    expect(await (await fetch(`${url}/locks/${encodeURIComponent(lease!.name)}`)).json()).toMatchObject({
      name: lease!.name,
      held: true,
      holders: [{ fence: lease!.fence }],
    });
    expect(await (await fetch(`${url}/metrics`)).text()).toContain("lockhost_locks_held");

    await host.stop();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    // The token is a secret: no log line carries it.
    expect(JSON.stringify(log.lines)).not.toContain(token);
  });

  it("starts its admin listener before the backend is asked and plugins load: /livez answers, /readyz is 503 'starting' until the host started", async () => {
    const log = captureLogger();
    const backend = new MemoryBackend();
    let answer!: () => void;
    const gate = new Promise<void>((resolve) => (answer = resolve));
    const ping = backend.ping.bind(backend);
    backend.ping = async () => {
      await gate;
      return ping();
    };
    const starting = Host.start(resolveConfig({ plugins: [locker], admin: { listen: "127.0.0.1:0" } }), { logger: log.logger, backend });
    try {
      await until("the admin listener starts", 20_000, () => log.lines.some((l) => l.msg === "admin listener started"));
      const url = log.lines.find((l) => l.msg === "admin listener started")!.url as string;
      expect(await (await fetch(`${url}/livez`)).json()).toEqual({ ok: true });
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ ok: false, status: "starting" });
    } finally {
      answer();
    }
    const host = await starting;
    hosts.push(host);
    expect(await (await fetch(`${host.admin!.url}/readyz`)).json()).toEqual({ ok: true, backend: "memory" });
  });

  it("a start that fails closes the admin listener it had started", async () => {
    const log = captureLogger();
    await expect(
      Host.start(resolveConfig({ plugins: [{ name: "bad", wasm: "/nonexistent/bad.wasm" }], admin: { listen: "127.0.0.1:0" } }), {
        logger: log.logger,
        backend: new MemoryBackend(),
      }),
    ).rejects.toThrow();
    const url = log.lines.find((l) => l.msg === "admin listener started")!.url as string;
    await expect(fetch(`${url}/livez`)).rejects.toThrow();
  });

  it("listens on IPv6 loopback", async () => {
    const { host } = await start({ admin: { listen: "[::1]:0" } });
    expect(host.admin?.url).toMatch(/^http:\/\/\[::1\]:[1-9][0-9]*$/);
    expect(await (await fetch(`${host.admin!.url}/readyz`)).json()).toEqual({ ok: true, backend: "memory" });
  });

  it("warns when the admin listener listens beyond loopback without a token, and not otherwise", async () => {
    const open = await start({ source: "/etc/lockhost.toml", admin: { listen: "0.0.0.0:0" } });
    const warning = open.log.lines.find((l) => l.level === 40 && l.msg.includes("without a token"));
    expect(warning?.msg).toContain("/etc/lockhost.toml: [admin]");
    expect(warning).toMatchObject({ listen: "0.0.0.0:0" });
    const local = await start({ admin: { listen: "127.0.0.1:0" } });
    const guarded = await start({ admin: { listen: "0.0.0.0:0", token: "guarded-token-0123456789" } });
    for (const { log } of [local, guarded]) expect(log.lines.some((l) => l.msg.includes("without a token"))).toBe(false);
    // It says exactly what is open: with auth = "all" (the default there) only the probes and the page's files.
    expect(warning?.msg).toContain("no [admin] token is set, so every route but /livez, /healthz, /readyz, /, /dashboard/<file>, /favicon.ico is refused");
    // A token over plain HTTP beyond loopback is said too; reads opened on purpose are named.
    expect(guarded.log.lines.find((l) => l.level === 40 && l.msg.includes("[admin]"))?.msg).toContain(
      "it speaks plain HTTP, so the token crosses the network in clear text (set cert_file and key_file)",
    );
    const reads = await start({ admin: { listen: "0.0.0.0:0", token: "guarded-token-0123456789", auth: "writes", metricsOpen: true } });
    expect(reads.log.lines.find((l) => l.level === 40 && l.msg.includes("[admin]"))?.msg).toContain(
      "anyone who can reach it reads /stats, /metrics, /locks, /locks/<name>, /events without a token",
    );
  });

  it("refuses to start when the admin address is taken, naming the file and [admin] listen, and leaves nothing running", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const backend = new MemoryBackend();
      await expect(start({ source: "/etc/lockhost.toml", plugins: [locker], admin: { listen: `127.0.0.1:${port}` } }, backend)).rejects.toMatchObject({
        code: "CONFIG_INVALID",
        message: expect.stringMatching(/^\/etc\/lockhost\.toml: \[admin\] listen: .*EADDRINUSE/),
      });
      expect(backend.size).toBe(0);
    } finally {
      await new Promise((r) => taken.close(r));
    }
  });

  it.each([
    ["the second host, which finds it held", false, 1],
    ["the first host, which loses it to the second's reclaim (reclaim_own_locks)", true, 0],
  ] as const)("warns when another live host uses its node name on Redis: %s; not a host whose name is its own", async (_case, reclaimOwnLocks, warner) => {
    const keyPrefix = `lockhost-presence-${process.pid}-${Date.now()}:`;
    const locking: ConfigInput["locking"] = { backend: "redis", redis: { url: redisUrl(), keyPrefix, reclaimOwnLocks } };
    try {
      const logs = [captureLogger(), captureLogger(), captureLogger()] as const;
      for (const [i, node] of ["same-name", "same-name", "own-name"].entries()) {
        hosts.push(await Host.start(resolveConfig({ host: { node }, locking }), { logger: logs[i]!.logger }));
      }
      // Looked at again once a hold left by an ended run would have lapsed (its TTL: 10 s).
      const warned = (i: number) => logs[i]!.lines.filter((l) => l.level === 40 && l.msg.startsWith("another live host uses the node name"));
      await until("a host named alike warns", 25_000, () => warned(warner).length > 0);
      expect(warned(warner)).toMatchObject([{ node: "same-name", msg: expect.stringContaining('"same-name" (it holds lockhost:node:same-name)') }]);
      expect([warned(1 - warner), warned(2)]).toEqual([[], []]);
      // One of them holds it; the other does not fight for it.
      const status = await hosts[0]!.locks.status({ name: "lockhost:node:same-name" });
      expect(status.holders.map((h) => h.node)).toEqual(["same-name"]);
    } finally {
      await Promise.all(hosts.splice(0).map((h) => h.stop(1_000)));
      await dropRedisPrefix(redisUrl(), keyPrefix);
    }
  });

  it("runs its lock service with the config's [locking.keepalive] settings", async () => {
    // Renewing at 10% of a 10 s TTL: the first renewal is due after ~1 s, where the default
    // (50%) would wait 5 s. 4 s leaves a loaded machine room without blurring the two.
    const { host } = await start({ locking: { keepalive: { renewAtRatio: 0.1, batchWindowMs: 0 } } });
    const lease = await host.locks.tryLock("keepalive-k", { ttlMs: 10_000, keepalive: true });
    expect(lease).not.toBeNull();
    const deadline = Date.now() + 4_000;
    while (host.locks.stats().renewalsOk === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(host.locks.stats().renewalsOk).toBeGreaterThan(0);
  });
});
