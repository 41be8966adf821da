// The admin listener over a memory-backed LockService: stats, Prometheus metrics, lock status,
// force-release behind the token, and bad requests that get a code and never hurt the host.
import { execFile, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { request as httpRequest } from "node:http";
import { runInNewContext } from "node:vm";
import { setFlagsFromString } from "node:v8";
import { request as httpsRequest } from "node:https";
import { Agent, fetch as undiciFetch } from "undici";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AdminSettings } from "../host/config/types.js";
import { startAdminServer, type AdminServer } from "../host/admin/server.js";
import { LockService, type LockListPage } from "../host/locking/service.js";
import { permitSpec, READ } from "../kit/kinds.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { unreachableBackend } from "./support/failing-backend.js";
import { captureLogger } from "./support/log.js";
import { until } from "./support/until.js";
import { makeTestCerts, type TestCerts } from "./support/certs.js";
import { findBinary } from "./support/servers.js";

// The heap is measured after a full collection.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const TOKEN = "admin-test-token-0123456789";
let locks: LockService;
let server: AdminServer;
let capture: ReturnType<typeof captureLogger>;

beforeEach(async () => {
  locks = new LockService(new MemoryBackend(), { node: "node-admin" });
  capture = captureLogger();
  server = await startAdminServer({
    service: locks,
    settings: { listen: { host: "127.0.0.1", port: 0 }, token: TOKEN },
    log: capture.logger,
    node: "node-admin",
  });
});
afterEach(async () => {
  await server.close();
  await locks.close();
});

const get = (path: string): Promise<Response> => fetch(`${server.url}${path}`);
const forceRelease = (name: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(`${server.url}/locks/${encodeURIComponent(name)}/force-release`, { method: "POST", headers });

describe("admin listener", () => {
  it("listens on loopback and answers /livez, /healthz and /readyz while the backend answers", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(await (await get("/livez")).json()).toEqual({ ok: true });
    expect(await (await get("/healthz")).json()).toEqual({ ok: true });
    expect(await (await get("/readyz")).json()).toEqual({ ok: true, backend: "memory" });
  });

  it("backend down: /livez, /healthz 200 (no restart), /readyz 503 with the backend's error; /readyz 503 'starting' until the host started", async () => {
    const down = new LockService(unreachableBackend(), { node: "n" });
    let started = false;
    const other = await startAdminServer({
      service: down,
      settings: { listen: { host: "127.0.0.1", port: 0 } },
      log: capture.logger,
      node: "n",
      started: () => started,
    });
    try {
      for (const path of ["/livez", "/healthz"]) {
        const res = await fetch(`${other.url}${path}`);
        expect([path, res.status, await res.json()]).toEqual([path, 200, { ok: true }]);
      }
      const starting = await fetch(`${other.url}/readyz`);
      expect(starting.status).toBe(503);
      expect(await starting.json()).toEqual({ ok: false, status: "starting", backend: "unreachable", message: "the host is loading its plugins" });
      started = true;
      const res = await fetch(`${other.url}/readyz`);
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ ok: false, backend: "unreachable", message: "backend unreachable (test)" });
    } finally {
      await other.close();
      await down.close();
    }
  });

  it("serves the service's stats as JSON", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000, keepalive: true }))!;
    expect(await locks.tryLock("a", { ttlMs: 5_000 })).toBeNull();
    const body = await (await get("/stats")).json();
    expect(body).toMatchObject({
      node: "node-admin",
      backend: "memory",
      distributed: false,
      stats: { held: 1, keepalive: 1, acquisitions: 1, contended: 1, lost: 0, waiters: 0 },
    });
    await locks.release(lease);
  });

  it("serves Prometheus metrics labelled with node and backend (and a lock's kind and plugin, never its name)", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 5_000 }))!;
    await locks.tryLock("a", { ttlMs: 5_000 });
    const res = await get("/metrics");
    expect(res.headers.get("content-type")).toMatch(/^text\/plain/);
    const text = await res.text();
    expect(text).toContain("# TYPE lockhost_locks_held gauge");
    expect(text).toContain('lockhost_locks_held{node="node-admin",backend="memory"} 1');
    expect(text).toContain('lockhost_acquisitions_total{kind="mutex",plugin="host",node="node-admin",backend="memory"} 1');
    expect(text).toContain('lockhost_contended_total{kind="mutex",plugin="host",node="node-admin",backend="memory"} 1');
    expect(text).toMatch(/lockhost_renewals_total\{result="ok",node="node-admin",backend="memory"\} 0/);
    expect(text).toContain("# TYPE lockhost_acquire_wait_seconds histogram");
    expect(text).not.toContain(lease.name);
    await locks.release(lease);
    // Counters never go down between scrapes; gauges follow the state.
    const again = await (await get("/metrics")).text();
    expect(again).toContain('lockhost_locks_held{node="node-admin",backend="memory"} 0');
    expect(again).toContain('lockhost_acquisitions_total{kind="mutex",plugin="host",node="node-admin",backend="memory"} 1');
    expect(again).toContain('lockhost_releases_total{kind="mutex",plugin="host",node="node-admin",backend="memory"} 1');
  });

  it("serves the status of one lock by its URL-encoded name, its owner token only to the admin token's holder", async () => {
    const lease = (await locks.tryLock("orders/42 ü", { ttlMs: 5_000 }))!;
    const path = `/locks/${encodeURIComponent(lease.name)}`;
    const held = await (await fetch(`${server.url}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(held).toMatchObject({ held: true, name: "global:orders/42 ü", kind: "mutex", holders: [{ owner: lease.owner, fence: lease.fence }] });
    for (const headers of [{}, { authorization: "Bearer wrong-token-0123456789" }] as Record<string, string>[]) {
      const shown = (await (await fetch(`${server.url}${path}`, { headers })).json()) as { holders: object[] };
      expect(shown).toMatchObject({ held: true, name: "global:orders/42 ü", kind: "mutex", holders: [{ fence: lease.fence }] });
      expect(shown.holders[0]).not.toHaveProperty("owner");
      expect(JSON.stringify(shown)).not.toContain(lease.owner);
    }
    expect(await (await get(`/locks/${encodeURIComponent("global:free")}`)).json()).toEqual({
      name: "global:free",
      kind: "mutex",
      held: false,
      holders: [],
      limit: 0,
      queued: 0,
    });
    await locks.release(lease);
  });

  it("lists held locks by prefix and plugin, a page at a time, without owner tokens", async () => {
    const a = (await locks.tryLock("list/a", { ttlMs: 5_000 }))!;
    const b = (await locks.tryLock("list/b", { ttlMs: 5_000, scope: { plugin: "billing" } }))!;
    const c = (await locks.tryLock("list/c", { ttlMs: 5_000 }))!;
    const all = (await (await get("/locks")).json()) as LockListPage;
    expect(all.locks.map((l) => l.name)).toEqual(["billing:list/b", "global:list/a", "global:list/c"]);
    expect(JSON.stringify(all)).not.toContain(a.owner);
    const first = (await (await get("/locks?prefix=global:&limit=1")).json()) as LockListPage;
    expect(first.locks).toMatchObject([
      { name: "global:list/a", kind: "mutex", mode: "exclusive", fence: a.fence, holder: { plugin: "host", node: "node-admin" }, waiters: 0 },
    ]);
    const second = await (await get(`/locks?prefix=global:&limit=1&cursor=${encodeURIComponent(first.cursor!)}`)).json();
    expect(second).toEqual({ locks: [expect.objectContaining({ name: "global:list/c" })] });
    expect(((await (await get("/locks?plugin=billing")).json()) as LockListPage).locks).toMatchObject([
      { name: "billing:list/b", holder: { plugin: "billing" } },
    ]);
    const bad = await get("/locks?limit=5000");
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ code: "INVALID_ARGUMENT", message: 'limit must be an integer from 1 to 1000, got "5000"' });
    for (const lease of [a, b, c]) await locks.release(lease);
  });

  it("streams the dashboard's feed: a snapshot, then each lock event as it happens", async () => {
    const res = await get("/events");
    expect(res.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const reader = res.body!.getReader();
    let text = "";
    const readUntil = async (needle: string): Promise<void> => {
      while (!text.includes(needle)) text += new TextDecoder().decode((await reader.read()).value);
    };
    await readUntil("event: snapshot");
    const lease = (await locks.tryLock("feed-k", { ttlMs: 5_000 }))!;
    await locks.release(lease);
    await readUntil('"type":"released"');
    expect(text).toContain('"type":"acquired","name":"global:feed-k"');
    expect(text).not.toContain(lease.owner);
    await reader.cancel();
    const page = await get("/dashboard");
    expect(page.headers.get("content-security-policy")).toContain("default-src 'self'");
    expect(await page.text()).toContain("<title>lockhost</title>");
  });

  it("force-releases only with the right bearer token", async () => {
    const lease = (await locks.tryLock("a", { ttlMs: 30_000 }))!;
    const none = await forceRelease(lease.name);
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await none.json()).toMatchObject({ code: "PERMISSION_DENIED" });
    expect((await forceRelease(lease.name, { authorization: "Bearer not-the-token-at-all" })).status).toBe(403);
    expect((await forceRelease(lease.name, { authorization: `Basic ${TOKEN}` })).status).toBe(401);
    expect((await locks.status({ name: lease.name })).held).toBe(true);
    const ok = await forceRelease(lease.name, { authorization: `Bearer ${TOKEN}` });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ name: lease.name, kind: "mutex", released: true, holders: 1 });
    expect((await locks.status({ name: lease.name })).held).toBe(false);
    expect(await (await forceRelease(lease.name, { authorization: `Bearer ${TOKEN}` })).json()).toEqual({
      name: lease.name,
      kind: "mutex",
      released: false,
      holders: 0,
    });
    // The log tells a release from a call that found the lock free.
    const said = capture.lines.filter((l) => l.msg.includes("through the admin listener")).map((l) => [l.level, l.msg, l.holders]);
    expect(said).toEqual([
      [40, "lock force-released through the admin listener", 1],
      [30, "force-release through the admin listener: the lock was not held", 0],
    ]);
    // Every attempt is an audit line: who (address, token shown or not), which lock, what came of it.
    const audited = capture.lines.filter((l) => l.audit === "force-release").map((l) => [l.lock, l.kind, l.outcome, l.from, l.token]);
    expect(audited).toEqual([
      [lease.name, "mutex", "refused", "127.0.0.1", "none"],
      [lease.name, "mutex", "refused", "127.0.0.1", "wrong"],
      [lease.name, "mutex", "refused", "127.0.0.1", "none"],
      [lease.name, "mutex", "released", "127.0.0.1", "valid"],
      [lease.name, "mutex", "not-held", "127.0.0.1", "valid"],
    ]);
    // The token never reaches the log.
    expect(JSON.stringify(capture.lines)).not.toContain(TOKEN);
  });

  it("serves and force-releases read/write locks and semaphores with ?kind=, their owner tokens only to the admin token's holder", async () => {
    const reader = (await locks.try("doc", { ttlMs: 30_000, ...READ }))!;
    const permit = (await locks.try("doc", { ttlMs: 30_000, ...permitSpec(2) }))!;
    const path = `/locks/${encodeURIComponent("global:doc")}`;
    const rw = await (await fetch(`${server.url}${path}?kind=rw`, { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    expect(rw).toMatchObject({
      name: "global:doc",
      kind: "rw",
      held: true,
      limit: 0,
      queued: 0,
      holders: [{ mode: "shared", fence: reader.fence, node: "node-admin", owner: reader.owner }],
    });
    const rwShown = await (await get(`${path}?kind=rw`)).json();
    expect(rwShown).toMatchObject({ name: "global:doc", kind: "rw", held: true, holders: [{ mode: "shared", fence: reader.fence }] });
    expect(JSON.stringify(rwShown)).not.toContain(reader.owner);
    expect(await (await get(`${path}?kind=semaphore`)).json()).toMatchObject({ kind: "semaphore", limit: 2, holders: [{ fence: permit.fence }] });
    // Its mutex is free: the status says which locks of the name are held.
    expect(await (await get(path)).json()).toEqual({
      name: "global:doc",
      kind: "mutex",
      held: false,
      holders: [],
      limit: 0,
      queued: 0,
      heldElsewhere: [
        { name: "global:doc", kind: "rw" },
        { name: "global:doc", kind: "semaphore" },
      ],
    });
    const listed = (await (await get(`/locks?kind=rw&prefix=${encodeURIComponent("global:doc")}`)).json()) as LockListPage;
    expect(listed.locks.map((l) => [l.name, l.kind, l.mode, l.fence])).toEqual([["global:doc", "rw", "shared", reader.fence]]);
    expect(JSON.stringify(listed)).not.toContain(reader.owner);
    expect((await get("/locks?kind=queue")).status).toBe(400);
    const bad = await get(`${path}?kind=lock`);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "INVALID_ARGUMENT", message: 'kind must be mutex, rw, semaphore, fair or leader, got "lock"' });
    // Every kind by default, in the kind table's order, a page at a time across the kinds.
    const mutex = (await locks.tryLock("doc", { ttlMs: 30_000 }))!;
    const every = (await (await get(`/locks?prefix=${encodeURIComponent("global:doc")}`)).json()) as LockListPage;
    const rows = [
      ["global:doc", "mutex", "exclusive", mutex.fence],
      ["global:doc", "rw", "shared", reader.fence],
      ["global:doc", "semaphore", "shared", permit.fence],
    ];
    expect(every.locks.map((l) => [l.name, l.kind, l.mode, l.fence])).toEqual(rows);
    expect(every.cursor).toBeUndefined();
    const paged: (string | number)[][] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 5; page++) {
      const q = `/locks?limit=1&prefix=${encodeURIComponent("global:doc")}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
      const body = (await (await get(q)).json()) as LockListPage;
      paged.push(...body.locks.map((l) => [l.name, l.kind, l.mode, l.fence]));
      cursor = body.cursor;
      if (cursor === undefined) break;
    }
    expect(paged).toEqual(rows);
    expect(cursor).toBeUndefined();
    expect(((await (await get(`/locks?kind=mutex&prefix=${encodeURIComponent("global:doc")}`)).json()) as LockListPage).locks.map((l) => l.kind)).toEqual([
      "mutex",
    ]);
    expect(await (await get(`${path}?kind=mutex`)).json()).toMatchObject({ name: "global:doc", kind: "mutex", held: true, holders: [{ fence: mutex.fence }] });
    expect((await get(`/locks?cursor=${encodeURIComponent("queue:x")}`)).status).toBe(400);
    await locks.release(mutex);
    expect((await fetch(`${server.url}${path}/force-release?kind=rw`, { method: "POST" })).status).toBe(401);
    const ok = await fetch(`${server.url}${path}/force-release?kind=rw`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await ok.json()).toEqual({ name: "global:doc", kind: "rw", released: true, holders: 1 });
    expect(reader.state).toBe("lost");
    expect(await (await get(`${path}?kind=rw`)).json()).toEqual({
      name: "global:doc",
      kind: "rw",
      held: false,
      holders: [],
      limit: 0,
      queued: 0,
      heldElsewhere: [{ name: "global:doc", kind: "semaphore" }],
    });
    await locks.release(permit);
  });

  it("refuses force-release when no token is configured", async () => {
    const open = await startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port: 0 } }, log: capture.logger, node: "n" });
    try {
      const lease = (await locks.tryLock("a", { ttlMs: 30_000 }))!;
      const res = await fetch(`${open.url}/locks/${encodeURIComponent(lease.name)}/force-release`, {
        method: "POST",
        headers: { authorization: "Bearer anything-at-all-here" },
      });
      expect(res.status).toBe(403);
      expect(((await res.json()) as { message: string }).message).toMatch(/set \[admin\] token/);
      expect((await locks.status({ name: lease.name })).held).toBe(true);
    } finally {
      await open.close();
    }
  });

  it("answers HEAD wherever it answers GET: the same status and headers, no body", async () => {
    await locks.tryLock("a", { ttlMs: 30_000 });
    const volatile = new Set(["date", "connection", "keep-alive"]);
    const headersOf = (res: Response, timed: boolean): Record<string, string> =>
      // A lock's age and TTL left change between the two requests, and with them the length;
      // so do the process's metrics (CPU time, memory).
      Object.fromEntries([...res.headers].filter(([name]) => !volatile.has(name) && !(timed && name === "content-length")));
    for (const path of [
      "/",
      "/dashboard",
      "/dashboard/main.js",
      "/favicon.ico",
      "/livez",
      "/healthz",
      "/readyz",
      "/metrics",
      "/stats",
      "/locks",
      "/locks/global%3Aa",
      "/nope",
    ]) {
      const timed = path.startsWith("/locks") || path === "/metrics";
      const got = await get(path);
      const head = await fetch(`${server.url}${path}`, { method: "HEAD" });
      expect([path, head.status], path).toEqual([path, got.status]);
      expect(headersOf(head, timed), path).toEqual(headersOf(got, timed));
      expect(head.headers.get("content-length"), path).toMatch(/^\d+$/);
      expect(await head.text(), path).toBe("");
      await got.arrayBuffer();
    }
    // The feed: its headers, and no stream left open.
    const events = await fetch(`${server.url}/events`, { method: "HEAD" });
    expect(events.status).toBe(200);
    expect(events.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    expect(await events.text()).toBe("");
    const post = await fetch(`${server.url}/locks/global%3Aa/force-release`, { method: "HEAD" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("POST");
  });

  it("answers bad requests with a status and a code, and keeps serving", async () => {
    expect((await get("/nope")).status).toBe(404);
    const wrongMethod = await fetch(`${server.url}/stats`, { method: "POST" });
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, HEAD");
    expect((await get("/locks/global%3Aa/force-release")).status).toBe(405);
    const badEncoding = await get("/locks/%E0%A4%A");
    expect(badEncoding.status).toBe(400);
    expect(await badEncoding.json()).toMatchObject({ code: "INVALID_ARGUMENT" });
    const tooLong = await get(`/locks/${"x".repeat(2_000)}`);
    expect(tooLong.status).toBe(400);
    expect(await tooLong.json()).toMatchObject({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/^name is \d+ bytes/) });
    expect((await get(`/locks/${"x".repeat(5_000)}`)).status).toBe(414);
    expect((await get("/dashboard/nope.js")).status).toBe(404);
    expect((await get("/livez")).status).toBe(200);
  });

  it("reports a listen address it cannot use as CONFIG_INVALID naming [admin] listen", async () => {
    const port = Number(new URL(server.url).port);
    await expect(startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port } }, log: capture.logger, node: "n" })).rejects.toMatchObject(
      { code: "CONFIG_INVALID", message: expect.stringMatching(/^\[admin\] listen: cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\)/) },
    );
  });
});

/** One request with node:http(s), so that the test sets any header (Host included). */
function request(
  url: string,
  options: { method?: string; headers?: Record<string, string>; ca?: string; cert?: string; key?: string } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequest;
    const req = send(
      url,
      {
        method: options.method ?? "GET",
        headers: options.headers ?? {},
        ...(options.ca && { ca: options.ca }),
        ...(options.cert && { cert: options.cert, key: options.key }),
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

describe("who may read: [admin] auth, metrics_open, the Host header", () => {
  const started: AdminServer[] = [];
  const open = async (settings: Partial<AdminSettings>): Promise<AdminServer> => {
    const s = await startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port: 0 }, ...settings }, log: capture.logger, node: "n" });
    started.push(s);
    return s;
  };
  afterEach(async () => {
    for (const s of started.splice(0)) await s.close();
  });
  const READS = ["/stats", "/metrics", "/locks", "/locks/global%3Aa", "/events"];
  const OPEN = ["/livez", "/healthz", "/readyz", "/", "/dashboard", "/dashboard/main.js", "/favicon.ico"];
  const statusOf = async (url: string, path: string, headers: Record<string, string> = {}): Promise<number> => {
    const res = await fetch(`${url}${path}`, { headers });
    await res.body?.cancel();
    return res.status;
  };

  it('auth = "all": every read needs the token (401 without, 403 wrong), the probes and the page\'s files do not', async () => {
    const s = await open({ token: TOKEN, auth: "all" });
    for (const path of READS) {
      expect([path, await statusOf(s.url, path)]).toEqual([path, 401]);
      expect([path, await statusOf(s.url, path, { authorization: "Bearer wrong-token-0123456789" })]).toEqual([path, 403]);
      expect([path, await statusOf(s.url, path, { authorization: `Bearer ${TOKEN}` })]).toEqual([path, 200]);
    }
    for (const path of OPEN) expect([path, await statusOf(s.url, path)]).toEqual([path, 200]);
    const refused = await fetch(`${s.url}/stats`);
    expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
    expect(await refused.json()).toEqual({ code: "PERMISSION_DENIED", message: "GET /stats needs an Authorization: Bearer <token> header ([admin] token)" });
  });

  it('auth = "all" with metrics_open: /metrics answers without the token, nothing else does', async () => {
    const s = await open({ token: TOKEN, auth: "all", metricsOpen: true });
    expect(await statusOf(s.url, "/metrics")).toBe(200);
    for (const path of READS.filter((p) => p !== "/metrics")) expect([path, await statusOf(s.url, path)]).toEqual([path, 401]);
  });

  it('auth = "all" without a token: only the probes and the page\'s files answer; the rest is 403 saying to set the token', async () => {
    const s = await open({ auth: "all" });
    for (const path of READS) expect([path, await statusOf(s.url, path)]).toEqual([path, 403]);
    for (const path of OPEN) expect([path, await statusOf(s.url, path)]).toEqual([path, 200]);
    expect(await (await fetch(`${s.url}/locks`)).json()).toEqual({
      code: "PERMISSION_DENIED",
      message: 'GET /locks needs the admin token ([admin] auth = "all"), and none is configured: set [admin] token in the config',
    });
  });

  it('defaults to auth = "all" on a listener beyond loopback, "writes" on loopback', async () => {
    const wide = await open({ listen: { host: "0.0.0.0", port: 0 }, token: TOKEN });
    const url = wide.url.replace("0.0.0.0", "127.0.0.1");
    expect(await statusOf(url, "/stats")).toBe(401);
    expect(await statusOf(url, "/stats", { authorization: `Bearer ${TOKEN}` })).toBe(200);
    expect(await statusOf(url, "/livez")).toBe(200);
    expect(capture.lines.find((l) => l.msg === "admin listener started" && l.auth === "all")).toMatchObject({
      open: ["/livez", "/healthz", "/readyz", "/", "/dashboard/<file>", "/favicon.ico"],
    });
    // This file's listener: loopback, reads open.
    expect(await statusOf(server.url, "/stats")).toBe(200);
  });

  it("on a loopback listener, answers only requests that name a loopback host (DNS rebinding): 421 HOST_NOT_ALLOWED otherwise", async () => {
    const port = new URL(server.url).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, "localhost", `[::1]:${port}`, `app.localhost:${port}`, `127.1.2.3:${port}`]) {
      expect([host, (await request(`${server.url}/stats`, { headers: { host } })).status]).toEqual([host, 200]);
    }
    for (const host of [`evil.example:${port}`, "evil.example", `127.0.0.1.evil.example:${port}`, `10.0.0.1:${port}`, `[::ffff:a00:1]:${port}`]) {
      const res = await request(`${server.url}/stats`, { headers: { host } });
      expect([host, res.status]).toEqual([host, 421]);
      expect(JSON.parse(res.body)).toMatchObject({ code: "HOST_NOT_ALLOWED" });
    }
    // Writes too, with the right token.
    const lease = (await locks.tryLock("rebind", { ttlMs: 30_000 }))!;
    const write = await request(`${server.url}/locks/${encodeURIComponent(lease.name)}/force-release`, {
      method: "POST",
      headers: { host: "evil.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(write.status).toBe(421);
    expect((await locks.status({ name: lease.name })).held).toBe(true);
    await locks.release(lease);
  });

  it("on a listener beyond loopback, takes any Host (the token guards it)", async () => {
    const wide = await open({ listen: { host: "0.0.0.0", port: 0 }, token: TOKEN });
    const res = await request(`${wide.url.replace("0.0.0.0", "127.0.0.1")}/stats`, { headers: { host: "lockhost.example", authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
  });
});

describe("event streams that are not read", () => {
  // Real sockets that ask for /events and never read, with a small receive buffer (python3:
  // Node cannot set SO_RCVBUF on a TCP socket), so the host's side of each backs up at once.
  const STALL = [
    "import socket, sys",
    "port, n = int(sys.argv[1]), int(sys.argv[2])",
    "socks = []",
    "for _ in range(n):",
    "    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)",
    "    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)",
    "    s.connect(('127.0.0.1', port))",
    "    s.sendall(b'GET /events HTTP/1.1\\r\\nHost: 127.0.0.1\\r\\n\\r\\n')",
    "    socks.append(s)",
    "print('ready', flush=True)",
    "sys.stdin.read()",
  ].join("\n");
  const heapMb = (): number => {
    gc();
    return process.memoryUsage().heapUsed / 2 ** 20;
  };

  it("drops a reader more than its buffer behind, and memory returns; the 33rd stream is 503 TOO_MANY_STREAMS; other clients are served meanwhile", {
    timeout: 120_000,
  }, async () => {
    const before = heapMb();
    const stalled = spawn("python3", ["-c", STALL, new URL(server.url).port, "32"], { stdio: ["pipe", "pipe", "inherit"] });
    try {
      await new Promise<void>((resolve, reject) => {
        stalled.stdout!.once("data", () => resolve());
        stalled.once("exit", (code) => reject(new Error(`python3 ended (${code}) before its sockets were ready`)));
      });
      // The 33rd: refused with a code that says why, and a Retry-After.
      await until("the 32 stalled streams open", 30_000, async () => {
        const res = await fetch(`${server.url}/events`);
        if (res.status === 200) await res.body?.cancel();
        return res.status === 503;
      });
      const extra = await fetch(`${server.url}/events`);
      expect(extra.headers.get("retry-after")).toBe("5");
      expect(await extra.json()).toMatchObject({ code: "TOO_MANY_STREAMS", message: expect.stringContaining("at most 32") });
      // A churning plugin: ~8 MB of events per stream (before the bound, 32 x 8 MB stayed on the heap).
      const name = `churn/${"x".repeat(400)}`;
      const dropped = (): number => capture.lines.filter((l) => l.msg.startsWith("dashboard event stream dropped")).length;
      let served = 0;
      for (let i = 0; i < 12_000; i++) {
        const lease = (await locks.tryLock(`${name}/${i % 50}`, { ttlMs: 10_000 }))!;
        await locks.release(lease);
        // A plugin's host yields to its event loop (the memory backend alone would not).
        if (i % 100 === 0) await new Promise((r) => setImmediate(r));
        // Other clients are served while the stalled ones back up.
        if (i % 2_000 === 0 && (await fetch(`${server.url}/stats`)).status === 200) served++;
      }
      expect(served).toBe(6);
      expect(dropped()).toBe(32);
      for (const line of capture.lines.filter((l) => l.msg.startsWith("dashboard event stream dropped"))) expect(line.bufferedBytes).toBeLessThan(2 * 2 ** 20);
      // Memory returns: what the dropped streams had buffered is gone (32 x 1 MiB at most, ever).
      expect(heapMb() - before).toBeLessThan(48);
      // The slots are free again: a dashboard that reads gets its snapshot and the events.
      const res = await fetch(`${server.url}/events`);
      expect(res.status).toBe(200);
      const reader = res.body!.getReader();
      let text = "";
      const lease = (await locks.tryLock("after-the-stall", { ttlMs: 5_000 }))!;
      while (!text.includes("after-the-stall")) text += new TextDecoder().decode((await reader.read()).value);
      expect(text).toContain("event: snapshot");
      await reader.cancel();
      await locks.release(lease);
    } finally {
      stalled.kill();
    }
  });
});

describe("HTTPS: [admin] cert_file, key_file, client_ca_file", () => {
  let certs: TestCerts;
  beforeAll(() => {
    certs = makeTestCerts();
  });
  afterAll(() => certs.remove());
  // Asynchronous: the listener runs in this process.
  const curl = (args: string[]): Promise<{ status: number; out: string; err: string }> =>
    new Promise((resolve) => {
      execFile(findBinary("curl", [], "install curl"), ["-sS", "--max-time", "20", ...args], { encoding: "utf8" }, (err, out, stderr) => {
        resolve({ status: err === null ? 0 : typeof err.code === "number" ? err.code : -1, out, err: stderr });
      });
    });

  it("serves HTTPS only, to curl and undici that trust its CA; a client that does not trust it is refused by its own check", async () => {
    const tls = await startAdminServer({
      service: locks,
      settings: { listen: { host: "127.0.0.1", port: 0 }, token: TOKEN, certFile: certs.serverCert, keyFile: certs.serverKey },
      log: capture.logger,
      node: "n",
    });
    try {
      expect(tls.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+$/);
      expect(JSON.parse((await curl(["--cacert", certs.ca, `${tls.url}/livez`])).out)).toEqual({ ok: true });
      expect(JSON.parse((await curl(["--cacert", certs.ca, "-H", `authorization: Bearer ${TOKEN}`, `${tls.url}/locks/global%3Ax`])).out)).toMatchObject({
        held: false,
      });
      // By name too (the certificate names localhost).
      expect(JSON.parse((await curl(["--cacert", certs.ca, `${tls.url.replace("127.0.0.1", "localhost")}/readyz`])).out)).toEqual({
        ok: true,
        backend: "memory",
      });
      const untrusted = await curl(["--cacert", certs.otherCa, `${tls.url}/livez`]);
      expect(untrusted.status).toBe(60);
      // Plain HTTP to the HTTPS port gets no answer of the admin listener.
      expect((await curl([`${tls.url.replace("https:", "http:")}/livez`])).out).not.toContain('"ok"');
      const agent = new Agent({ connect: { ca: readFileSync(certs.ca, "utf8") } });
      try {
        const res = await undiciFetch(`${tls.url}/stats`, { dispatcher: agent });
        expect(res.status).toBe(200);
        expect(await res.json()).toMatchObject({ node: "n", backend: "memory" });
      } finally {
        await agent.close();
      }
      await expect(undiciFetch(`${tls.url}/livez`)).rejects.toThrow();
    } finally {
      await tls.close();
    }
  });

  it("with client_ca_file, serves only clients that show a certificate the CA signed (mutual TLS)", async () => {
    const tls = await startAdminServer({
      service: locks,
      settings: { listen: { host: "127.0.0.1", port: 0 }, certFile: certs.serverCert, keyFile: certs.serverKey, clientCaFile: certs.ca },
      log: capture.logger,
      node: "n",
    });
    try {
      expect((await curl(["--cacert", certs.ca, `${tls.url}/livez`])).out).not.toContain('"ok"');
      expect(JSON.parse((await curl(["--cacert", certs.ca, "--cert", certs.clientCert, "--key", certs.clientKey, `${tls.url}/livez`])).out)).toEqual({
        ok: true,
      });
      const agent = new Agent({
        connect: { ca: readFileSync(certs.ca, "utf8"), cert: readFileSync(certs.clientCert, "utf8"), key: readFileSync(certs.clientKey, "utf8") },
      });
      try {
        expect((await undiciFetch(`${tls.url}/stats`, { dispatcher: agent })).status).toBe(200);
      } finally {
        await agent.close();
      }
      const without = new Agent({ connect: { ca: readFileSync(certs.ca, "utf8") } });
      try {
        await expect(undiciFetch(`${tls.url}/stats`, { dispatcher: without })).rejects.toThrow();
      } finally {
        await without.close();
      }
    } finally {
      await tls.close();
    }
  });

  it("refuses to start on a file it cannot use: CONFIG_INVALID naming the key, the file and why", async () => {
    const start = (s: Partial<AdminSettings>): Promise<AdminServer> =>
      startAdminServer({
        service: locks,
        settings: { listen: { host: "127.0.0.1", port: 0 }, certFile: certs.serverCert, keyFile: certs.serverKey, ...s },
        log: capture.logger,
        node: "n",
      });
    const missing = join(certs.dir, "nope.pem");
    await expect(start({ certFile: missing })).rejects.toMatchObject({ code: "CONFIG_INVALID", message: `[admin] cert_file: cannot read ${missing} (ENOENT)` });
    await expect(start({ keyFile: certs.serverCert })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: `[admin] key_file: ${certs.serverCert} holds no PEM private key (-----BEGIN ...PRIVATE KEY-----)`,
    });
    // A key of another certificate: OpenSSL's reason.
    await expect(start({ keyFile: certs.clientKey })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringMatching(
        new RegExp(`^\\[admin\\] cert_file ${certs.serverCert} and key_file ${certs.clientKey}: not usable \\(.*(mismatch|values)`),
      ),
    });
    await expect(start({ clientCaFile: certs.serverKey })).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining(`[admin] client_ca_file: ${certs.serverKey} holds no PEM certificate`),
    });
  });
});
