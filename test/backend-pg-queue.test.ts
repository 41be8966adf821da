// The queue kinds (read/write locks, semaphores, fair mutexes) on the PostgreSQL backend (LockBackend.steps, kit/steps.ts)
// against a real server: the rules of KindSteps, leases on the server's clock, fences, wake-ups
// and loss notices across hosts, and the objects' creation. Every table is made up for this run
// and dropped at the end.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { AcquireRequest, KindSteps } from "../kit/steps.js";
import type { QueueKind } from "../kit/kinds.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults, type PgConfig } from "../plugins/backends/pg/config.js";
import { queueObjectsOf } from "../plugins/backends/pg/queue-sql.js";
import { dropPgTable } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { databaseUrl } from "./support/servers.js";
import { sleep, until } from "./support/until.js";

const url = databaseUrl();
const run = randomUUID().slice(0, 8);
const table = `lockhost_test_${run}_sh`;
const tables = [table];
const capture = captureLogger();

let perTest: PgBackend[] = [];
function host(over: Partial<PgConfig> = {}): PgBackend {
  const backend = new PgBackend({ ...pgDefaults, url, table, ...over }, capture.logger);
  perTest.push(backend);
  return backend;
}

let n = 0;
const key = (label = "k"): string => `pgsh-${run}-${label}-${++n}`;
const holder = { plugin: "pgtest", node: "node-a" };
const reader = (k: string, over: Partial<AcquireRequest> = {}): AcquireRequest => ({
  name: k,
  owner: randomUUID(),
  ttlMs: 10_000,
  holder,
  mode: "shared",
  limit: 0,
  queueMs: 0,
  ...over,
});
const writer = (k: string, over: Partial<AcquireRequest> = {}): AcquireRequest => reader(k, { mode: "exclusive", ...over });
const permit = (k: string, limit: number, over: Partial<AcquireRequest> = {}): AcquireRequest => reader(k, { limit, ...over });

let admin: pg.Client;
beforeAll(async () => {
  admin = new pg.Client({ connectionString: url });
  admin.on("error", () => undefined);
  await admin.connect();
});
beforeEach(() => {
  perTest = [];
});
afterEach(async () => {
  await Promise.all(perTest.map((b) => b.close()));
});
afterAll(async () => {
  await admin.end().catch(() => undefined);
  for (const t of tables) await dropPgTable(url, t);
});

describe("pg read/write locks", () => {
  let rw: KindSteps;
  beforeEach(() => {
    rw = host().steps("rw");
  });

  it("lets readers share a key and keeps a writer apart from readers and from another writer", async () => {
    const k = key();
    const [a, b] = [reader(k), reader(k)];
    expect((await rw.acquire(a)).acquired).toBe(true);
    expect((await rw.acquire(b)).acquired).toBe(true);
    const w = await rw.acquire(writer(k));
    expect(w.acquired).toBe(false);
    if (!w.acquired) {
      expect(w.retryAfterMs).toBeGreaterThan(0);
      expect(w.retryAfterMs).toBeLessThanOrEqual(10_000);
      expect(w.limit).toBeUndefined();
    }
    expect(await rw.release(k, a.owner)).toBe("released");
    expect(await rw.release(k, b.owner)).toBe("released");
    const w1 = writer(k);
    expect((await rw.acquire(w1)).acquired).toBe(true);
    expect((await rw.acquire(writer(k))).acquired).toBe(false);
    expect((await rw.acquire(reader(k))).acquired).toBe(false);
    expect(await rw.release(k, w1.owner)).toBe("released");
    expect((await rw.acquire(reader(k))).acquired).toBe(true);
  });

  it("refuses an owner that already holds the key (not reentrant)", async () => {
    const k = key();
    const a = reader(k);
    expect((await rw.acquire(a)).acquired).toBe(true);
    expect((await rw.acquire({ ...a })).acquired).toBe(false);
    expect((await rw.acquire({ ...a, mode: "exclusive" })).acquired).toBe(false);
    expect((await rw.status(k))?.holders).toHaveLength(1);
  });

  it("stands new readers behind a waiting writer (writer preference), and lets the writer in once readers leave", async () => {
    const k = key();
    const r1 = reader(k);
    expect((await rw.acquire(r1)).acquired).toBe(true);
    const w = writer(k, { queueMs: 10_000 });
    expect((await rw.acquire(w)).acquired).toBe(false);
    expect((await rw.status(k))?.queued).toBe(1);
    // A reader arriving now waits behind the queued writer, though only readers hold the key.
    expect((await rw.acquire(reader(k))).acquired).toBe(false);
    // A writer's try (no queue place) does not overtake the queued writer either.
    await rw.release(k, r1.owner);
    expect((await rw.acquire(writer(k))).acquired).toBe(false);
    expect((await rw.acquire(w)).acquired).toBe(true);
    expect((await rw.status(k))?.queued).toBe(0);
  });

  it("serves queued writers first come, first served", async () => {
    const k = key();
    const holderW = writer(k);
    expect((await rw.acquire(holderW)).acquired).toBe(true);
    const [w1, w2, w3] = [writer(k, { queueMs: 10_000 }), writer(k, { queueMs: 10_000 }), writer(k, { queueMs: 10_000 })];
    for (const w of [w1, w2, w3]) expect((await rw.acquire(w)).acquired).toBe(false);
    // Refreshing a place keeps it where it was.
    expect((await rw.acquire(w1)).acquired).toBe(false);
    await rw.release(k, holderW.owner);
    expect((await rw.acquire(w3)).acquired).toBe(false);
    expect((await rw.acquire(w2)).acquired).toBe(false);
    expect((await rw.acquire(w1)).acquired).toBe(true);
    await rw.release(k, w1.owner);
    expect((await rw.acquire(w3)).acquired).toBe(false);
    expect((await rw.acquire(w2)).acquired).toBe(true);
    await rw.release(k, w2.owner);
    expect((await rw.acquire(w3)).acquired).toBe(true);
  });

  it("lets a writer that gave up leave the queue, which wakes the readers standing behind it", async () => {
    const k = key();
    const r1 = reader(k);
    expect((await rw.acquire(r1)).acquired).toBe(true);
    const w = writer(k, { queueMs: 10_000 });
    expect((await rw.acquire(w)).acquired).toBe(false);
    let woken = 0;
    const watch = rw.watch(k, () => woken++);
    await watch.ready;
    expect((await rw.acquire(reader(k))).acquired).toBe(false);
    await rw.leaveQueue(k, w.owner);
    await until("a wake-up after leaveQueue", 5_000, () => woken > 0);
    expect((await rw.acquire(reader(k))).acquired).toBe(true);
    watch.close();
  });

  it("ends a crashed holder's lease and an abandoned queue place on the server's clock", async () => {
    const k = key();
    expect((await rw.acquire(writer(k, { ttlMs: 200 }))).acquired).toBe(true);
    // Nobody renews or releases: the host that took it is gone.
    await until("the lease ends", 10_000, async () => (await rw.acquire(reader(k))).acquired);
    const k2 = key();
    const r = reader(k2);
    expect((await rw.acquire(r)).acquired).toBe(true);
    expect((await rw.acquire(writer(k2, { queueMs: 200 }))).acquired).toBe(false);
    expect((await rw.acquire(reader(k2))).acquired).toBe(false);
    // The waiting writer stopped asking (crashed): its place lapses and readers get in again.
    await until("the queue place lapses", 10_000, async () => (await rw.acquire(reader(k2))).acquired);
    expect((await rw.status(k2))?.queued).toBe(0);
    // With no holder left, a request behind a waiting writer is told when that place would lapse.
    const k3 = key();
    const w3 = writer(k3);
    await rw.acquire(w3);
    expect((await rw.acquire(writer(k3, { queueMs: 5_000 }))).acquired).toBe(false);
    await rw.release(k3, w3.owner);
    const behind = await rw.acquire(reader(k3));
    expect(behind.acquired).toBe(false);
    if (!behind.acquired) {
      expect(behind.retryAfterMs).toBeGreaterThan(0);
      expect(behind.retryAfterMs).toBeLessThanOrEqual(5_000);
    }
  });

  it("never grants beside a lease whose renewal was in flight when its old lease ran out", async () => {
    const k = key();
    const r = reader(k, { ttlMs: 300 });
    expect((await rw.acquire(r)).acquired).toBe(true);
    // A renewal that reached the row before the lease ended but has not committed yet.
    const renewer = new pg.Client({ connectionString: url });
    renewer.on("error", () => undefined);
    await renewer.connect();
    try {
      await renewer.query("begin");
      const holders = queueObjectsOf(table).holders;
      const renewed = await renewer.query(
        `update ${holders} set expires_at = clock_timestamp() + interval '30 seconds' where kind = 'rw' and name = $1 and owner = $2`,
        [k, r.owner],
      );
      expect(renewed.rowCount).toBe(1);
      await until("the old lease ends", 10_000, async () => (await rw.status(k)) === null);
      const w = rw.acquire(writer(k));
      await sleep(100);
      await renewer.query("commit");
      expect((await w).acquired).toBe(false);
      expect((await rw.status(k))?.holders.map((h) => h.owner)).toEqual([r.owner]);
    } finally {
      await renewer.end().catch(() => undefined);
    }
  });

  it("renews a live hold in one statement per batch, and reports not_found for ended or unknown ones", async () => {
    const k = key();
    const [a, b] = [reader(k), reader(k, { ttlMs: 150 })];
    await rw.acquire(a);
    await rw.acquire(b);
    await until("b's lease ends", 10_000, async () => (await rw.status(k))?.holders.length === 1);
    const results = await rw.renewMany([
      { name: k, owner: a.owner, ttlMs: 20_000 },
      { name: k, owner: b.owner, ttlMs: 20_000 },
      { name: k, owner: "nobody", ttlMs: 20_000 },
      { name: k, owner: a.owner, ttlMs: 20_000 },
    ]);
    expect(results[0]).toMatchObject({ ok: true });
    expect(results[1]).toEqual({ ok: false, reason: "not_found" });
    expect(results[2]).toEqual({ ok: false, reason: "not_found" });
    expect(results[3]).toEqual(results[0]);
    const status = await rw.status(k);
    expect(status?.holders[0]?.ttlMs).toBe(20_000);
    expect(status?.holders[0]?.expiresAtMs).toBe(results[0]!.ok ? results[0]!.expiresAtMs : NaN);
    expect(await rw.release(k, b.owner)).toBe("not_found");
    expect(await rw.release(k, a.owner)).toBe("released");
    expect(await rw.release(k, a.owner)).toBe("not_found");
    expect(await rw.renewMany([{ name: k, owner: a.owner, ttlMs: 1_000 }])).toEqual([{ ok: false, reason: "not_found" }]);
  });

  it("reports holders in fence order with their times, and null for a key with neither holders nor queue", async () => {
    const k = key();
    expect(await rw.status(k)).toBeNull();
    const a = reader(k, { ttlMs: 30_000 });
    const ra = await rw.acquire(a);
    const b = reader(k, { ttlMs: 20_000 });
    await rw.acquire(b);
    const s = await rw.status(k);
    expect(s).toMatchObject({ name: k, kind: "rw", limit: 0, queued: 0 });
    expect(s?.holders.map((h) => h.owner)).toEqual([a.owner, b.owner]);
    const h0 = s!.holders[0]!;
    expect(h0).toMatchObject({ mode: "shared", ttlMs: 30_000, holder: { plugin: "pgtest", node: "node-a" } });
    expect(typeof h0.holder.hostname).toBe("string");
    if (ra.acquired) expect(h0).toMatchObject({ fence: ra.fence, acquiredAtMs: ra.acquiredAtMs, expiresAtMs: ra.expiresAtMs });
    expect(h0.expiresAtMs - h0.acquiredAtMs).toBe(30_000);
    expect(h0.ttlRemainingMs).toBeGreaterThan(0);
    expect(h0.ttlRemainingMs).toBeLessThanOrEqual(30_000);
    await rw.release(k, a.owner);
    await rw.release(k, b.owner);
    expect(await rw.status(k)).toBeNull();
  });

  it("advances one fence counter per key across both modes, also after releases and expiry", async () => {
    const k = key();
    const fences: number[] = [];
    const take = async (req: AcquireRequest): Promise<void> => {
      const r = await rw.acquire(req);
      expect(r.acquired).toBe(true);
      if (r.acquired) fences.push(r.fence);
    };
    const r1 = reader(k);
    await take(r1);
    await take(reader(k, { ttlMs: 100 }));
    await rw.release(k, r1.owner);
    await until("the short reader ends", 10_000, async () => (await rw.status(k)) === null);
    const w = writer(k);
    await take(w);
    await rw.release(k, w.owner);
    await take(reader(k));
    for (let i = 1; i < fences.length; i++) expect(fences[i]).toBeGreaterThan(fences[i - 1]!);
  });

  it("force-releases every holder (the queue stays), wakes watchers, and tells each holder's host", async () => {
    const a = host();
    const b = host();
    const k = key();
    const lostA: string[] = [];
    a.onLost((owner) => lostA.push(owner));
    const [r1, r2] = [reader(k), reader(k)];
    expect((await a.steps("rw").acquire(r1)).acquired).toBe(true);
    expect((await b.steps("rw").acquire(r2)).acquired).toBe(true);
    const w = writer(k, { queueMs: 10_000 });
    expect((await b.steps("rw").acquire(w)).acquired).toBe(false);
    let woken = 0;
    const watch = b.steps("rw").watch(k, () => woken++);
    await watch.ready;
    const lostB: string[] = [];
    b.onLost((owner) => lostB.push(owner));
    expect(await b.steps("rw").forceRelease(k)).toBe(2);
    await until("host a told of its loss", 5_000, () => lostA.includes(r1.owner));
    await until("host b told of its loss", 5_000, () => lostB.includes(r2.owner));
    // Each host hears only of its own holders.
    expect(lostA).not.toContain(r2.owner);
    expect(lostB).not.toContain(r1.owner);
    await until("a wake-up", 5_000, () => woken > 0);
    expect((await a.steps("rw").status(k))?.queued).toBe(1);
    expect(await a.steps("rw").release(k, r1.owner)).toBe("not_found");
    expect(await a.steps("rw").renewMany([{ name: k, owner: r1.owner, ttlMs: 1_000 }])).toEqual([{ ok: false, reason: "not_found" }]);
    expect(await b.steps("rw").forceRelease(k)).toBe(0);
    expect((await b.steps("rw").acquire(w)).acquired).toBe(true);
    watch.close();
  });

  it("wakes a key's watchers on another host when a holder releases", async () => {
    const a = host();
    const b = host();
    const k = key();
    const w = writer(k);
    expect((await a.steps("rw").acquire(w)).acquired).toBe(true);
    let woken = 0;
    const watch = b.steps("rw").watch(k, () => woken++);
    await watch.ready;
    expect((await b.steps("rw").acquire(reader(k))).acquired).toBe(false);
    expect(await a.steps("rw").release(k, w.owner)).toBe("released");
    await until("b woken", 5_000, () => woken > 0);
    expect((await b.steps("rw").acquire(reader(k))).acquired).toBe(true);
    watch.close();
  });

  it("lists keys with live holders by prefix, in pages", async () => {
    const prefix = `pgsh-${run}-list-${++n}:`;
    const names = Array.from({ length: 5 }, (_, i) => `${prefix}${i}`);
    for (const name of names) await rw.acquire(reader(name));
    await rw.acquire(reader(names[0]!));
    // A key with only a queue place, and one whose holder left, are not listed.
    const queuedOnly = `${prefix}q`;
    const w = writer(queuedOnly);
    await rw.acquire(w);
    await rw.acquire(writer(queuedOnly, { queueMs: 10_000 }));
    await rw.release(queuedOnly, w.owner);
    const left = `${prefix}left`;
    const gone = reader(left);
    await rw.acquire(gone);
    await rw.release(left, gone.owner);
    // Another prefix, and the same name in the semaphore namespace, are not listed either.
    await rw.acquire(reader(`pgsh-${run}-other-${n}`));
    await host()
      .steps("semaphore")
      .acquire(permit(`${prefix}sem`, 2));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await rw.list({ prefix, limit: 2, ...(cursor === undefined ? {} : { cursor }) });
      pages++;
      expect(page.records.length).toBeLessThanOrEqual(2);
      for (const r of page.records) {
        expect(r.kind).toBe("rw");
        expect(r.holders.length).toBeGreaterThan(0);
        seen.push(r.name);
      }
      cursor = page.cursor;
    } while (cursor !== undefined);
    expect(seen.sort()).toEqual(names);
    expect(pages).toBeGreaterThanOrEqual(3);
    const first = (await rw.list({ prefix: names[0]!, limit: 10 })).records.find((r) => r.name === names[0]);
    expect(first?.holders).toHaveLength(2);
    // Prefix characters LIKE would read as wildcards are taken literally.
    expect((await rw.list({ prefix: `pgsh-${run}-list_`, limit: 10 })).records).toEqual([]);
  });
});

describe("pg read/write locks under contention", () => {
  it("never lets a writer overlap another holder, with many callers on several hosts", async () => {
    const hosts = [host(), host(), host()];
    const k = key("hammer");
    let readers = 0;
    let writers = 0;
    let violations = 0;
    let granted = 0;
    let writesGranted = 0;
    const fences: number[] = [];
    const worker = async (i: number): Promise<void> => {
      const steps = hosts[i % hosts.length]!.steps("rw");
      for (let round = 0; round < 12; round++) {
        const exclusive = (i + round) % 4 === 0;
        const req = exclusive ? writer(k, { queueMs: 5_000 }) : reader(k);
        let r = await steps.acquire(req);
        // A caller waits a while; a writer keeps its place meanwhile (which stands readers behind it).
        for (let tries = 0; !r.acquired && tries < (exclusive ? 200 : 50); tries++) {
          await sleep(2);
          r = await steps.acquire(req);
        }
        if (!r.acquired) {
          if (exclusive) await steps.leaveQueue(k, req.owner);
          await sleep(1);
          continue;
        }
        granted++;
        fences.push(r.fence);
        if (exclusive) {
          writers++;
          writesGranted++;
        } else readers++;
        if (writers > 1 || (writers === 1 && readers > 0)) violations++;
        await sleep(Math.random() * 3);
        if (exclusive) writers--;
        else readers--;
        expect(await steps.release(k, req.owner)).toBe("released");
      }
    };
    await Promise.all(Array.from({ length: 24 }, (_, i) => worker(i)));
    expect(violations).toBe(0);
    expect(granted).toBeGreaterThan(0);
    expect(writesGranted).toBeGreaterThan(0);
    expect(new Set(fences).size).toBe(fences.length);
    expect(await hosts[0]!.steps("rw").status(k)).toBeNull();
  });
});

describe("pg semaphores", () => {
  it("grants at most N permits, and refuses another N while permits are held (with theirs)", async () => {
    const sem = host().steps("semaphore");
    const k = key();
    const permits = [permit(k, 2), permit(k, 2), permit(k, 2)];
    expect((await sem.acquire(permits[0]!)).acquired).toBe(true);
    expect((await sem.acquire(permits[1]!)).acquired).toBe(true);
    const third = await sem.acquire(permits[2]!);
    expect(third.acquired).toBe(false);
    if (!third.acquired) expect(third.limit).toBeUndefined();
    const other = await sem.acquire(permit(k, 3));
    expect(other).toMatchObject({ acquired: false, limit: 2 });
    expect((await sem.status(k))?.limit).toBe(2);
    await sem.release(k, permits[0]!.owner);
    expect((await sem.acquire(permits[2]!)).acquired).toBe(true);
    await sem.release(k, permits[1]!.owner);
    await sem.release(k, permits[2]!.owner);
    // No live holder: the next acquisition sets the limit.
    expect((await sem.acquire(permit(k, 3))).acquired).toBe(true);
    expect((await sem.status(k))?.limit).toBe(3);
  });

  it("grants exactly N of many concurrent requests from several hosts", async () => {
    const hosts = [host(), host(), host()];
    const k = key();
    const results = await Promise.all(Array.from({ length: 30 }, (_, i) => hosts[i % 3]!.steps("semaphore").acquire(permit(k, 4))));
    expect(results.filter((r) => r.acquired)).toHaveLength(4);
    const fences = results.flatMap((r) => (r.acquired ? [r.fence] : []));
    expect(new Set(fences).size).toBe(4);
    expect((await hosts[0]!.steps("semaphore").status(k))?.holders).toHaveLength(4);
  });

  it("keeps each kind's names apart, and apart from mutexes", async () => {
    const backend = host();
    const k = key();
    const kinds: QueueKind[] = ["rw", "semaphore"];
    expect((await backend.steps("rw").acquire(writer(k))).acquired).toBe(true);
    expect((await backend.steps("semaphore").acquire(permit(k, 1))).acquired).toBe(true);
    expect((await backend.acquire({ name: k, owner: randomUUID(), ttlMs: 10_000, holder })).acquired).toBe(true);
    for (const kind of kinds) expect((await backend.steps(kind).status(k))?.holders).toHaveLength(1);
    expect(backend.steps("rw")).toBe(backend.steps("rw"));
  });
});

describe("pg queue objects", () => {
  it("are created on first use, also when several hosts race to create them, and only then", async () => {
    const raced = `lockhost_test_${run}_shrace`;
    tables.push(raced);
    const hosts = Array.from({ length: 6 }, () => host({ table: raced }));
    // A mutex alone creates none of them.
    expect((await hosts[0]!.acquire({ name: key(), owner: randomUUID(), ttlMs: 10_000, holder })).acquired).toBe(true);
    const objects = queueObjectsOf(raced);
    const exists = async (): Promise<boolean> => (await admin.query("select to_regclass($1) is not null as e", [objects.holders])).rows[0].e;
    expect(await exists()).toBe(false);
    const k = key();
    const results = await Promise.all(hosts.map((h) => h.steps("semaphore").acquire(permit(k, 6))));
    expect(results.every((r) => r.acquired)).toBe(true);
    expect(await exists()).toBe(true);
  });

  it("are created in the configured table's schema", async () => {
    const schema = `lockhost_test_${run}_shs`;
    await admin.query(`create schema ${schema}`);
    try {
      const backend = host({ table: `${schema}.locks` });
      const k = key();
      const a = writer(k);
      expect((await backend.steps("rw").acquire(a)).acquired).toBe(true);
      expect((await backend.steps("rw").status(k))?.holders[0]?.owner).toBe(a.owner);
      const found = await admin.query("select to_regclass($1) is not null as e", [queueObjectsOf(`${schema}.locks`).holders]);
      expect(found.rows[0].e).toBe(true);
      await backend.close();
    } finally {
      await admin.query(`drop schema ${schema} cascade`);
    }
  });

  it("never repeats a fence when the unlogged tables are emptied (as a server crash does)", async () => {
    const own = `lockhost_test_${run}_shcrash`;
    tables.push(own);
    const sem = host({ table: own }).steps("semaphore");
    const k = key();
    const first = await sem.acquire(permit(k, 5));
    expect(first.acquired).toBe(true);
    const objects = queueObjectsOf(own);
    await admin.query(`truncate ${objects.keys}, ${objects.holders}, ${objects.queue}`);
    const next = await sem.acquire(permit(k, 5));
    expect(next.acquired).toBe(true);
    if (first.acquired && next.acquired) expect(next.fence).toBeGreaterThan(first.fence);
  });

  it("are created again when an operator dropped them, without dropping the mutex sessions", async () => {
    const own = `lockhost_test_${run}_shdrop`;
    tables.push(own);
    const backend = host({ table: own });
    const mutexKey = key();
    const m = { name: mutexKey, owner: randomUUID(), ttlMs: 30_000, holder };
    expect((await backend.acquire(m)).acquired).toBe(true);
    const rw = backend.steps("rw");
    expect((await rw.acquire(reader(key()))).acquired).toBe(true);
    const objects = queueObjectsOf(own);
    await admin.query(`drop table ${objects.holders}`);
    expect((await rw.acquire(reader(key()))).acquired).toBe(true);
    expect((await backend.renew(mutexKey, m.owner, 30_000)).ok).toBe(true);
  });
});
