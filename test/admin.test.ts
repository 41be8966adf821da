// The admin listener over a memory-backed LockService: stats, Prometheus metrics, lock status,
// force-release behind the token, and bad requests that get a code and never hurt the host.
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startAdminServer, type AdminServer } from "../host/admin/server.js";
import { LockService, type LockListPage } from "../host/locking/service.js";
import { permitSpec, READ } from "../kit/kinds.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { unreachableBackend } from "./support/failing-backend.js";
import { captureLogger } from "./support/log.js";

const TOKEN = "admin-test-token-0123456789";
let locks: LockService;
let server: AdminServer;
let capture: ReturnType<typeof captureLogger>;

beforeEach(async () => {
  locks = new LockService(new MemoryBackend(), { node: "node-admin" });
  capture = captureLogger();
  server = await startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port: 0 }, token: TOKEN }, log: capture.logger, node: "node-admin" });
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

  it("while the backend does not answer: /livez and /healthz 200 (no restart), /readyz 503 with the backend's error; /readyz 503 'starting' until the host says it started", async () => {
    const down = new LockService(unreachableBackend(), { node: "n" });
    let started = false;
    const other = await startAdminServer({ service: down, settings: { listen: { host: "127.0.0.1", port: 0 } }, log: capture.logger, node: "n", started: () => started });
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
      node: "node-admin", backend: "memory", distributed: false,
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
    expect(await (await get(`/locks/${encodeURIComponent("global:free")}`)).json()).toEqual({ name: "global:free", kind: "mutex", held: false, holders: [], limit: 0, queued: 0 });
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
    expect(first.locks).toMatchObject([{ name: "global:list/a", kind: "mutex", mode: "exclusive", fence: a.fence, holder: { plugin: "host", node: "node-admin" }, waiters: 0 }]);
    const second = await (await get(`/locks?prefix=global:&limit=1&cursor=${encodeURIComponent(first.cursor!)}`)).json();
    expect(second).toEqual({ locks: [expect.objectContaining({ name: "global:list/c" })] });
    expect(((await (await get("/locks?plugin=billing")).json()) as LockListPage).locks).toMatchObject([{ name: "billing:list/b", holder: { plugin: "billing" } }]);
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
    expect(await (await forceRelease(lease.name, { authorization: `Bearer ${TOKEN}` })).json()).toEqual({ name: lease.name, kind: "mutex", released: false, holders: 0 });
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
    expect(rw).toMatchObject({ name: "global:doc", kind: "rw", held: true, limit: 0, queued: 0, holders: [{ mode: "shared", fence: reader.fence, node: "node-admin", owner: reader.owner }] });
    const rwShown = await (await get(`${path}?kind=rw`)).json();
    expect(rwShown).toMatchObject({ name: "global:doc", kind: "rw", held: true, holders: [{ mode: "shared", fence: reader.fence }] });
    expect(JSON.stringify(rwShown)).not.toContain(reader.owner);
    expect(await (await get(`${path}?kind=semaphore`)).json()).toMatchObject({ kind: "semaphore", limit: 2, holders: [{ fence: permit.fence }] });
    // Its mutex is free: the status says which locks of the name are held.
    expect(await (await get(path)).json()).toEqual({ name: "global:doc", kind: "mutex", held: false, holders: [], limit: 0, queued: 0, heldElsewhere: [{ name: "global:doc", kind: "rw" }, { name: "global:doc", kind: "semaphore" }] });
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
    const rows = [["global:doc", "mutex", "exclusive", mutex.fence], ["global:doc", "rw", "shared", reader.fence], ["global:doc", "semaphore", "shared", permit.fence]];
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
    expect(((await (await get(`/locks?kind=mutex&prefix=${encodeURIComponent("global:doc")}`)).json()) as LockListPage).locks.map((l) => l.kind)).toEqual(["mutex"]);
    expect(await (await get(`${path}?kind=mutex`)).json()).toMatchObject({ name: "global:doc", kind: "mutex", held: true, holders: [{ fence: mutex.fence }] });
    expect((await get(`/locks?cursor=${encodeURIComponent("queue:x")}`)).status).toBe(400);
    await locks.release(mutex);
    expect((await fetch(`${server.url}${path}/force-release?kind=rw`, { method: "POST" })).status).toBe(401);
    const ok = await fetch(`${server.url}${path}/force-release?kind=rw`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(await ok.json()).toEqual({ name: "global:doc", kind: "rw", released: true, holders: 1 });
    expect(reader.state).toBe("lost");
    expect(await (await get(`${path}?kind=rw`)).json()).toEqual({ name: "global:doc", kind: "rw", held: false, holders: [], limit: 0, queued: 0, heldElsewhere: [{ name: "global:doc", kind: "semaphore" }] });
    await locks.release(permit);
  });

  it("refuses force-release when no token is configured", async () => {
    const open = await startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port: 0 } }, log: capture.logger, node: "n" });
    try {
      const lease = (await locks.tryLock("a", { ttlMs: 30_000 }))!;
      const res = await fetch(`${open.url}/locks/${encodeURIComponent(lease.name)}/force-release`, { method: "POST", headers: { authorization: "Bearer anything-at-all-here" } });
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
    for (const path of ["/", "/dashboard", "/dashboard/main.js", "/favicon.ico", "/livez", "/healthz", "/readyz", "/metrics", "/stats", "/locks", "/locks/global%3Aa", "/nope"]) {
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
    await expect(
      startAdminServer({ service: locks, settings: { listen: { host: "127.0.0.1", port } }, log: capture.logger, node: "n" }),
    ).rejects.toMatchObject({ code: "CONFIG_INVALID", message: expect.stringMatching(/^\[admin\] listen: cannot listen on 127\.0\.0\.1:\d+ \(EADDRINUSE\)/) });
  });
});
