// The PostgreSQL backend against a real server (DATABASE_URL, or the machine's default): the
// backend contract, plus what only this backend has: advisory locks shared by many callers on
// a few sessions, host-enforced lease ends, sessions that end under their locks, and
// force-release across hosts. Every table is made up for this run and dropped at the end.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { LockhostError } from "../kit/errors.js";
import type { MutexAcquireRequest, MutexAcquireResult } from "../kit/backend.js";
import { LockService } from "../host/locking/service.js";
import { PgBackend, type PgBackendOptions } from "../plugins/backends/pg/index.js";
import { DeadlineQueue, type Timed } from "../kit/deadline-queue.js";
import { advisoryKeyFromId, advisoryKeyOf } from "../plugins/backends/pg/keys.js";
import { FENCE_BLOCK, holdersTableOf, statementsFor } from "../plugins/backends/pg/mutex-sql.js";
import { backendContract } from "./support/backend-contract.js";
import { dropPgTable } from "./support/cleanup.js";
import { captureLogger } from "./support/log.js";
import { databaseUrl, freePort } from "./support/servers.js";
import { type PgConfig, pgDefaults } from "../plugins/backends/pg/config.js";
import { until } from "./support/until.js";

const url = databaseUrl();
const run = randomUUID().slice(0, 8);
const table = `lockhost_test_${run}`;
const tables = [table];
const config = (over: Partial<PgConfig> = {}): PgConfig => ({ ...pgDefaults, url, table, ...over });
const capture = captureLogger();
const backends: PgBackend[] = [];
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Backends made by the running test: closed after it, so the server's connections last. */
let perTest: PgBackend[] | undefined;

/** A backend ("a host") on this run's table, closed after the test (or, made outside one, at the end of the file). */
function host(over: Partial<PgConfig> = {}, options: PgBackendOptions = {}): PgBackend {
  const backend = new PgBackend(config(over), capture.logger, options);
  (perTest ?? backends).push(backend);
  return backend;
}

let n = 0;
const key = (label = "k"): string => `pg-${run}-${label}-${++n}`;
const req = (k: string, over: Partial<MutexAcquireRequest> = {}): MutexAcquireRequest => ({
  name: k,
  owner: randomUUID(),
  ttlMs: 10_000,
  holder: { plugin: "pgtest", node: "node-a" },
  ...over,
});

/** Checks a contended result: not acquired, and a retry hint, when given, within the holder's `ttlMs`. */
function expectContended(result: MutexAcquireResult, ttlMs = 10_000): void {
  expect(result.acquired).toBe(false);
  if (!result.acquired && result.retryAfterMs !== undefined) {
    expect(result.retryAfterMs).toBeGreaterThan(0);
    expect(result.retryAfterMs).toBeLessThanOrEqual(ttlMs);
  }
  expect(Object.keys(result).every((f) => f === "acquired" || f === "retryAfterMs")).toBe(true);
}

/** Host a (one session) holding a fresh key as `first`, and another host b. */
async function heldOnA(): Promise<{ a: PgBackend; b: PgBackend; k: string; first: MutexAcquireRequest; got: Extract<MutexAcquireResult, { acquired: true }> }> {
  const a = host({ sessions: 1 });
  const b = host();
  const k = key();
  const first = req(k);
  const got = await a.acquire(first);
  if (!got.acquired) throw new Error("not acquired");
  return { a, b, k, first, got };
}

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
  const made = perTest ?? [];
  perTest = undefined;
  await Promise.all(made.map((b) => b.close()));
});
afterAll(async () => {
  await Promise.all(backends.map((b) => b.close()));
  await admin?.end();
  for (const t of tables) {
    await dropPgTable(url, t);
    await dropPgTable(url, holdersTableOf(t));
  }
});

/** Server pids holding the advisory lock of `name` in this database. */
async function holders(name: string): Promise<number[]> {
  const a = advisoryKeyOf(name);
  const r = await admin.query<{ pid: number }>(
    `select pid from pg_locks where locktype = 'advisory' and granted and objsubid = 1
       and classid = $1::oid and objid = $2::oid and database = (select oid from pg_database where datname = current_database())`,
    [a.classid, a.objid],
  );
  return r.rows.map((row) => row.pid);
}

backendContract("pg", { create: () => host() });

describe("pg backend", () => {
  it("maps names to advisory ids with the documented, stable hash (the same in SQL)", async () => {
    // Fixed vectors: changing the mapping would let two versions of lockhost both grant a lock.
    expect(advisoryKeyOf("billing:nightly")).toEqual({ id: "-7078239667779884089", classid: 2646936198, objid: 921086919 });
    expect(advisoryKeyOf("global:ключ/🔒").id).toBe("8571938049554905428");
    const names = ["billing:nightly", "global:ключ/🔒", key()];
    for (const name of names) {
      const { rows } = await admin.query<{ id: string }>(
        "select ('x' || encode(substr(sha256(convert_to($1, 'UTF8')), 1, 8), 'hex'))::bit(64)::bigint::text as id",
        [name],
      );
      expect(rows[0]!.id).toBe(advisoryKeyOf(name).id);
    }
    expect(advisoryKeyFromId(-1n)).toEqual({ id: "-1", classid: 0xffff_ffff, objid: 0xffff_ffff });
    expect(advisoryKeyFromId(0x1_0000_0002n)).toEqual({ id: "4294967298", classid: 1, objid: 2 });
  });

  it("names the holders table after the configured one, within PostgreSQL's 63-character limit", () => {
    expect(holdersTableOf("lockhost_locks")).toBe("lockhost_locks_holders");
    expect(holdersTableOf("ops.locks")).toBe("ops.locks_holders");
    const long1 = `s.${"a".repeat(60)}1`;
    const long2 = `s.${"a".repeat(60)}2`;
    const [h1, h2] = [holdersTableOf(long1), holdersTableOf(long2)];
    expect(h1).not.toBe(h2);
    for (const h of [h1, h2]) {
      expect(h.startsWith("s.")).toBe(true);
      expect(h.length - 2).toBeLessThanOrEqual(63);
      expect(h.endsWith("_holders")).toBe(true);
    }
  });

  it("says it is distributed", () => {
    expect(host().distributed).toBe(true);
    expect(host().name).toBe("pg");
  });

  it("reports times on the server's clock, expiresAt - acquiredAt being exactly the TTL", async () => {
    const backend = host();
    const { rows } = await admin.query<{ ms: string }>("select (extract(epoch from now()) * 1000)::int8 as ms");
    for (const ttlMs of [1_000, 999, 12_345, 86_400_000]) {
      const got = await backend.acquire(req(key(), { ttlMs }));
      if (!got.acquired) throw new Error("not acquired");
      expect(got.expiresAtMs - got.acquiredAtMs).toBe(ttlMs);
      expect(Math.abs(got.acquiredAtMs - Number(rows[0]!.ms))).toBeLessThan(5_000);
    }
  });

  it("answers a second acquire of a key this backend holds from its bookkeeping, never re-entering the lock", async () => {
    const a = host();
    const b = host();
    const k = key();
    const first = req(k);
    expect((await a.acquire(first)).acquired).toBe(true);
    expectContended(await a.acquire(req(k)));
    // Had the session locked twice, one unlock would leave it held and b could not take it.
    expect(await a.release(k, first.owner)).toBe("released");
    expect(await holders(k)).toEqual([]);
    expect((await b.acquire(req(k))).acquired).toBe(true);
  });

  it("lets one of 20 concurrent acquirers on one backend win, and one release frees the key", async () => {
    const a = host();
    const b = host();
    const k = key();
    const reqs = Array.from({ length: 20 }, () => req(k));
    const results = await Promise.all(reqs.map((r) => a.acquire(r)));
    const winners = reqs.filter((_, i) => results[i]!.acquired);
    expect(winners).toHaveLength(1);
    expect(await holders(k)).toHaveLength(1);
    expect(await a.release(k, winners[0]!.owner)).toBe("released");
    expect((await b.acquire(req(k))).acquired).toBe(true);
  });

  it("keeps names whose advisory ids collide apart: false contention, never a double grant or a wrong status", async () => {
    // Both names get one made-up id, on both hosts (the mapping must agree across hosts).
    const id = BigInt.asIntN(64, BigInt(`0x${randomUUID().replace(/-/g, "").slice(0, 16)}`));
    const options: PgBackendOptions = {
      advisoryKey: (name) => (name.includes("-collide-") ? advisoryKeyFromId(id) : advisoryKeyOf(name)),
    };
    const a = host({}, options);
    const b = host({}, options);
    const [k1, k2] = [key("collide"), key("collide")];
    const one = req(k1);
    expect((await a.acquire(one)).acquired).toBe(true);
    // Same host: the bookkeeping is keyed by id, so k2 is contended without asking the server.
    expectContended(await a.acquire(req(k2)));
    // Another host: the server's advisory lock says the same.
    expectContended(await b.acquire(req(k2)));
    // Nobody holds k2: status and force-release compare the stored name.
    expect(await a.status(k2)).toBeNull();
    expect(await b.forceRelease(k2)).toBe(false);
    expect(await a.renew(k2, one.owner, 1_000)).toEqual({ ok: false, reason: "not_found" });
    expect(await a.release(k2, one.owner)).toBe("not_found");
    expect((await a.status(k1))?.owner).toBe(one.owner);

    expect(await a.release(k1, one.owner)).toBe("released");
    const two = req(k2);
    expect((await b.acquire(two)).acquired).toBe(true);
    expect((await b.status(k2))?.owner).toBe(two.owner);
    expect(await b.status(k1)).toBeNull();
    expectContended(await a.acquire(req(k1)));
  });

  it("hands out dense fences within a reserved block and reserves the next block past it", async () => {
    const backend = host();
    const k = key();
    const a = req(k);
    const first = await backend.acquire(a);
    if (!first.acquired) throw new Error("not acquired");
    expect(first.fence).toBe(1);
    expect(await backend.release(k, a.owner)).toBe("released");
    const reserved = async (): Promise<number> =>
      Number((await admin.query(`select reserved from ${table} where id = $1`, [advisoryKeyOf(k).id])).rows[0].reserved);
    expect(await reserved()).toBe(FENCE_BLOCK);
    // Skip to the end of the block rather than take a thousand locks.
    await admin.query(`update ${holdersTableOf(table)} set fence = $2 where key = $1`, [k, FENCE_BLOCK - 2]);
    const fences: number[] = [];
    for (let i = 0; i < 4; i++) {
      const r = req(k);
      const got = await backend.acquire(r);
      if (!got.acquired) throw new Error("not acquired");
      fences.push(got.fence);
      await backend.release(k, r.owner);
    }
    expect(fences).toEqual([FENCE_BLOCK - 1, FENCE_BLOCK, FENCE_BLOCK + 1, FENCE_BLOCK + 2]);
    expect(await reserved()).toBe(2 * FENCE_BLOCK);
  });

  it("takes the fence from the latest holders row, also one committed after the acquiring statement began", async () => {
    // The statement's snapshot predates its pg_try_advisory_lock: a holder that commits in
    // between must still be seen. Here a transaction holds the row while the acquire runs.
    const backend = host();
    const k = key();
    const first = req(k);
    expect((await backend.acquire(first)).acquired).toBe(true);
    expect(await backend.release(k, first.owner)).toBe("released");
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    try {
      await writer.query("begin");
      await writer.query(`update ${holdersTableOf(table)} set fence = 500 where id = $1`, [advisoryKeyOf(k).id]);
      const pending = backend.acquire(req(k));
      await sleep(100);
      await writer.query("commit");
      const got = await pending;
      expect(got.acquired).toBe(true);
      if (got.acquired) expect(got.fence).toBe(501);
    } finally {
      await writer.end();
    }
  });

  it("never repeats a fence when the holders table is emptied (as a server crash does) or dropped", async () => {
    const own = `lockhost_test_${run}_crash`;
    const other = `lockhost_test_${run}_drop`;
    tables.push(own, other);
    const backend = host({ table: own });
    const b = host({ table: other });
    const k = key();
    const take = async (on: PgBackend): Promise<number> => {
      const r = req(k);
      const got = await on.acquire(r);
      if (!got.acquired) throw new Error("not acquired");
      expect(await on.release(k, r.owner)).toBe("released");
      return got.fence;
    };
    expect([await take(backend), await take(backend), await take(backend)]).toEqual([1, 2, 3]);
    // PostgreSQL empties unlogged tables in crash recovery: the next fence starts a new block.
    await admin.query(`truncate ${holdersTableOf(own)}`);
    expect(await take(backend)).toBe(FENCE_BLOCK + 1);
    expect(await take(backend)).toBe(FENCE_BLOCK + 2);

    // Dropped under a live backend: the session that finds it gone is dropped (its locks are
    // lost) and the next connection creates it again; fences go on above the reserved block.
    expect(await take(b)).toBe(1);
    const held = req(key());
    expect((await b.acquire(held)).acquired).toBe(true);
    await admin.query(`drop table ${holdersTableOf(other)}`);
    let fence = 0;
    await until("b works again", 3_000, async () => {
      fence = await take(b).catch(() => 0);
      return fence > 0;
    });
    expect(fence).toBe(FENCE_BLOCK + 1);
    expect(await b.renew(held.name, held.owner, 1_000)).toEqual({ ok: false, reason: "not_found" });
  });

  it("under contention from several hosts: never two holders, fences strictly increasing per key", async () => {
    const hosts = Array.from({ length: 4 }, () => host({ sessions: 2 }));
    const keys = [key("hot"), key("hot")];
    const inside = new Map<string, string>();
    const lastFence = new Map<string, number>();
    const problems: string[] = [];
    let acquisitions = 0;
    const until = performance.now() + 1_500;
    const worker = async (h: PgBackend, w: number): Promise<void> => {
      while (performance.now() < until) {
        const k = keys[w % keys.length]!;
        const r = req(k, { ttlMs: 5_000 });
        const got = await h.acquire(r);
        if (!got.acquired) {
          // Contention on this host is answered without I/O: yield, or the loop starves it.
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        acquisitions++;
        if (inside.has(k)) problems.push(`${k}: ${r.owner} entered while ${inside.get(k)} was inside`);
        if (got.fence <= (lastFence.get(k) ?? 0)) problems.push(`${k}: fence ${got.fence} after ${lastFence.get(k)}`);
        inside.set(k, r.owner);
        lastFence.set(k, got.fence);
        await sleep(1);
        inside.delete(k);
        expect(await h.release(k, r.owner)).toBe("released");
      }
    };
    await Promise.all(hosts.flatMap((h) => Array.from({ length: 4 }, (_, w) => worker(h, w))));
    expect(problems).toEqual([]);
    expect(acquisitions).toBeGreaterThan(20);
  });

  it("creates its table on first use, also when several hosts race to create it", async () => {
    const raced = `lockhost_test_${run}_race`;
    tables.push(raced);
    const hosts = Array.from({ length: 6 }, () => host({ table: raced }));
    const results = await Promise.all(hosts.map((h, i) => h.acquire(req(key(`race${i}`)))));
    expect(results.every((r) => r.acquired)).toBe(true);
    const r = await admin.query("select count(*)::int as n from " + holdersTableOf(raced));
    expect(r.rows[0]).toEqual({ n: 6 });
  });

  it("creates its table in a schema when the config names one", async () => {
    const schema = `lockhost_test_${run}_s`;
    await admin.query(`create schema ${schema}`);
    try {
      const backend = host({ table: `${schema}.locks` });
      const k = key();
      const a = req(k);
      expect((await backend.acquire(a)).acquired).toBe(true);
      expect((await backend.status(k))?.owner).toBe(a.owner);
      await backend.close();
    } finally {
      await admin.query(`drop schema ${schema} cascade`);
    }
  });

  it("uses tables an operator made for a role that may not create tables", async () => {
    const schema = `lockhost_test_${run}_ro`;
    const role = `lockhost_test_${run}_role`;
    const t = `${schema}.locks`;
    await admin.query(`create schema ${schema}; create role ${role} login`);
    try {
      for (const ddl of statementsFor(t).createTables) await admin.query(ddl);
      await admin.query(`grant usage on schema ${schema} to ${role}`);
      await admin.query(`grant select, insert, update on ${t}, ${holdersTableOf(t)} to ${role}`);
      const roleUrl = new URL(url);
      roleUrl.username = role;
      const backend = host({ url: roleUrl.toString(), table: t });
      const k = key();
      const a = req(k);
      expect((await backend.acquire(a)).acquired).toBe(true);
      expect((await backend.renew(k, a.owner, 5_000)).ok).toBe(true);
      expect((await backend.status(k))?.owner).toBe(a.owner);
      expect(await backend.release(k, a.owner)).toBe("released");
      await backend.close();
    } finally {
      await admin.query(`drop schema ${schema} cascade; drop role ${role}`);
    }
  });

  it("works with a logged holders table an operator made, and says how to make it unlogged", async () => {
    const t = `lockhost_test_${run}_logged`;
    tables.push(t);
    for (const ddl of statementsFor(t).createTables) await admin.query(ddl.replace("CREATE UNLOGGED TABLE", "CREATE TABLE"));
    const backend = host({ table: t });
    const k = key();
    const a = req(k);
    const first = await backend.acquire(a);
    expect(first.acquired).toBe(true);
    expect(await backend.release(k, a.owner)).toBe("released");
    const b = req(k);
    const second = await backend.acquire(b);
    expect(second.acquired && first.acquired && second.fence > first.fence).toBe(true);
    expect(await backend.release(k, b.owner)).toBe("released");
    expect(capture.messages().some((m) => m.includes("logged table") && m.includes(`ALTER TABLE "${holdersTableOf(t)}" SET UNLOGGED`))).toBe(true);
  });

  it("adds ttl_ms to a holders table an earlier version made, and reads rows it wrote without one", async () => {
    const schema = `lockhost_test_${run}_up`;
    const role = `lockhost_test_${run}_uprole`;
    const t = `${schema}.locks`;
    const h = holdersTableOf(t);
    // The tables as the previous version created them: no ttl_ms.
    const olderDdl = [
      `create table ${t} (id bigint primary key, reserved bigint not null)`,
      `create unlogged table ${h} (id bigint primary key, key text not null, fence bigint not null,
        reserved bigint not null, owner text, plugin text not null, node text not null, hostname text not null,
        pid integer not null, acquired_at timestamptz not null, expires_at timestamptz not null)`,
    ];
    await admin.query(`create schema ${schema}; create role ${role} login`);
    try {
      for (const ddl of olderDdl) await admin.query(ddl);
      await admin.query(`grant usage on schema ${schema} to ${role}`);
      await admin.query(`grant select, insert, update on ${t}, ${h} to ${role}`);
      // A role that does not own the table cannot add the column: told what to run.
      const roleUrl = new URL(url);
      roleUrl.username = role;
      const denied = await host({ url: roleUrl.toString(), table: t })
        .acquire(req(key()))
        .then(
          () => undefined,
          (err: unknown) => err,
        );
      expect(denied).toBeInstanceOf(LockhostError);
      expect(denied).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect((denied as Error).message).toContain(`ADD COLUMN IF NOT EXISTS ttl_ms`);

      // Its owner's backend adds it (two hosts racing to) and records the TTL from then on.
      const [b1, b2] = [host({ table: t }), host({ table: t })];
      const k = key();
      const a = req(k, { ttlMs: 12_000 });
      const [first, second] = await Promise.all([b1.acquire(a), b2.acquire(req(key()))]);
      expect(first.acquired && second.acquired).toBe(true);
      expect((await b2.status(k))?.ttlMs).toBe(12_000);
      expect((await b1.renew(k, a.owner, 4_000)).ok).toBe(true);
      expect((await b2.status(k))?.ttlMs).toBe(4_000);
      // A row as an older host writes it (no ttl_ms): the remaining lease, a lower bound.
      await admin.query(`update ${h} set ttl_ms = null`);
      const legacy = await b2.status(k);
      expect(legacy!.ttlMs).toBeGreaterThan(0);
      expect(legacy!.ttlMs).toBeLessThanOrEqual(4_000);
      expect(legacy!.ttlMs).toBeGreaterThanOrEqual(legacy!.ttlRemainingMs);
      // The role can use the upgraded table.
      const roleHost = host({ url: roleUrl.toString(), table: t });
      const k2 = key();
      expect((await roleHost.acquire(req(k2, { ttlMs: 6_000 }))).acquired).toBe(true);
      expect((await roleHost.status(k2))?.ttlMs).toBe(6_000);
      await Promise.all([b1.close(), b2.close(), roleHost.close()]);
    } finally {
      await admin.query(`drop schema ${schema} cascade; drop role ${role}`);
    }
  });

  it("holds 1,000 locks on its few session connections, and releases them all", async () => {
    const applicationName = `lockhost-test-${run}-many`;
    const backend = host({ sessions: 4 }, { applicationName });
    const reqs = Array.from({ length: 1_000 }, (_, i) => req(key(`many${i}`)));
    const results = await Promise.all(reqs.map((r) => backend.acquire(r)));
    expect(results.filter((r) => r.acquired)).toHaveLength(1_000);
    expect(backend.heldCount).toBe(1_000);

    const conns = await admin.query<{ pid: number }>("select pid from pg_stat_activity where application_name = $1", [applicationName]);
    expect(conns.rows.length).toBeLessThanOrEqual(8);
    expect(conns.rows.length).toBe(4);
    const pids = conns.rows.map((row) => row.pid);
    const held = await admin.query<{ n: number }>("select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and pid = any($1::int[])", [
      pids,
    ]);
    expect(held.rows[0]!.n).toBe(1_000);

    const released = await Promise.all(reqs.map((r) => backend.release(r.name, r.owner)));
    expect(released.every((r) => r === "released")).toBe(true);
    const after = await admin.query<{ n: number }>("select count(*)::int as n from pg_locks where locktype = 'advisory' and pid = any($1::int[])", [pids]);
    expect(after.rows[0]!.n).toBe(0);
    expect(backend.heldCount).toBe(0);
  });

  it("ends a lease that is not renewed at its deadline; another host then takes it with a higher fence", async () => {
    const a = host();
    const b = host();
    const k = key();
    const first = req(k, { ttlMs: 300 });
    const started = performance.now();
    const got = await a.acquire(first);
    if (!got.acquired) throw new Error("not acquired");
    expectContended(await b.acquire(req(k)));
    let fence = 0;
    await until("b takes the expired lock", 3_000, async () => {
      const second = await b.acquire(req(k));
      if (second.acquired) fence = second.fence;
      return second.acquired;
    });
    const elapsed = performance.now() - started;
    expect(elapsed).toBeGreaterThanOrEqual(290);
    expect(elapsed).toBeLessThan(1_500);
    expect(fence).toBeGreaterThan(got.fence);
    expect(await a.renew(k, first.owner, 10_000)).toEqual({ ok: false, reason: "not_found" });
    expect(await a.release(k, first.owner)).toBe("not_found");
    expect(a.heldCount).toBe(0);
  });

  it("keeps a renewed lease past its first deadline", async () => {
    const a = host();
    const b = host();
    const k = key();
    // Each renewal comes a quarter of the TTL after the last, until the first deadline is well
    // past. The TTL leaves the test's own timer room for load: a 300 ms TTL renewed every
    // 150 ms failed on a loaded machine, where a 150 ms sleep plus a round trip took > 300 ms.
    const ttlMs = 1_500;
    const first = req(k, { ttlMs });
    const firstDeadline = performance.now() + ttlMs;
    expect((await a.acquire(first)).acquired).toBe(true);
    let renewals = 0;
    while (performance.now() < firstDeadline + ttlMs / 2 || renewals < 4) {
      await sleep(ttlMs / 4);
      expect((await a.renew(k, first.owner, ttlMs)).ok).toBe(true);
      renewals++;
    }
    expectContended(await b.acquire(req(k)));
    expect((await b.status(k))?.owner).toBe(first.owner);
  });

  it("loses every lock of a session terminated under it, notices at once, and reconnects", async () => {
    const a = host({ sessions: 1 });
    const b = host();
    const [k1, k2] = [key(), key()];
    const one = req(k1);
    const two = req(k2);
    const got = await a.acquire(one);
    expect((await a.acquire(two)).acquired).toBe(true);
    if (!got.acquired) throw new Error("not acquired");
    const [pid] = await holders(k1);
    expect(a.sessionPids).toEqual([pid]);

    await admin.query("select pg_terminate_backend($1)", [pid]);
    // The session's end reaches the backend without any call of ours.
    await until("a notices its session ended", 2_000, () => a.heldCount === 0);
    expect(await a.renew(k1, one.owner, 10_000)).toEqual({ ok: false, reason: "not_found" });
    expect(await a.release(k2, two.owner)).toBe("not_found");

    const taken = await b.acquire(req(k1));
    expect(taken.acquired).toBe(true);
    if (taken.acquired) expect(taken.fence).toBeGreaterThan(got.fence);
    // a reconnects on its next call.
    expect((await a.acquire(req(key()))).acquired).toBe(true);
    expect(a.sessionPids).toHaveLength(1);
    expect(a.sessionPids[0]).not.toBe(pid);
    expect(capture.lines.some((l) => l.msg.includes("its locks are lost") && l.locks === 2)).toBe(true);
  });

  it("force-releases another host's lock by telling its session to unlock it; that host learns it lost the lock", async () => {
    const { a, b, k, first, got } = await heldOnA();
    expect((await b.status(k))?.owner).toBe(first.owner);

    expect(await b.forceRelease(k)).toBe(true);
    expect(await b.status(k)).toBeNull();
    // The holder's session has unlocked it by the time forceRelease resolves: the key is free now.
    const second = await b.acquire(req(k));
    expect(second.acquired).toBe(true);
    if (second.acquired) expect(second.fence).toBeGreaterThan(got.fence);
    expect(await a.renew(k, first.owner, 10_000)).toEqual({ ok: false, reason: "not_found" });
    expect(await a.release(k, first.owner)).toBe("not_found");
    expect(await b.forceRelease(key())).toBe(false);
    // a reconnects and goes on.
    expect((await a.acquire(req(key()))).acquired).toBe(true);
  });

  it("hands a lock to the next owner on its session in one statement: the advisory lock is never let go", async () => {
    const { a, b, k, first, got } = await heldOnA();
    const pid = a.sessionPids[0];
    const next = req(k, { holder: { plugin: "pgtest", node: "node-next" }, ttlMs: 7_000 });
    let woken = 0;
    const watch = b.watch(k, () => woken++);
    await watch.ready;
    const done = await a.handoff(k, first.owner, next);
    expect(done.released).toBe("released");
    if (done.released !== "released" || !done.next.acquired) throw new Error("not handed over");
    expect(done.next.fence).toBeGreaterThan(got.fence);
    expect(done.next.expiresAtMs - done.next.acquiredAtMs).toBe(7_000);
    // The same session holds it throughout; another host sees the next owner, and is contended.
    expect(await holders(k)).toEqual([pid]);
    expect(await b.status(k)).toMatchObject({ owner: next.owner, fence: done.next.fence, ttlMs: 7_000, holder: { plugin: "pgtest", node: "node-next" } });
    expect((await b.acquire(req(k))).acquired).toBe(false);
    // The first owner's lease is over (another owner holds the key); the next owner's renews and releases.
    expect(await a.renew(k, first.owner, 10_000)).toEqual({ ok: false, reason: "mismatch" });
    expect(await a.release(k, first.owner)).toBe("mismatch");
    expect(await a.renew(k, next.owner, 10_000)).toMatchObject({ ok: true });
    await sleep(100);
    // The key was never free: nobody was told it might be.
    expect(woken).toBe(0);
    expect(await a.release(k, next.owner)).toBe("released");
    await until("the release reaches the watcher", 3_000, () => woken > 0);
    watch.close();
  });

  it("a handoff that fails lets the lock go and says so, never leaving the old owner believing it holds a free lock", async () => {
    const slow = `lockhost_test_${run}_slowhand`;
    tables.push(slow);
    const a = host({ table: slow, sessions: 1, commandTimeoutMs: 400 });
    const b = host({ table: slow });
    const k = key();
    const first = req(k);
    expect((await a.acquire(first)).acquired).toBe(true);
    // The handoff's UPDATE blocks on the row until the server would cancel it: the call times out.
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    await locker.query("begin");
    await locker.query(`select * from ${holdersTableOf(slow)} where id = $1 for update`, [advisoryKeyOf(k).id]);
    const handing = a.handoff(k, first.owner, req(k)).catch((err: unknown) => err);
    await sleep(800);
    await locker.query("rollback");
    await locker.end();
    const done = await handing;
    // Not an error: the old holding is over either way, and the next owner was not granted.
    expect(done).not.toBeInstanceOf(Error);
    expect(["released", "not_found"]).toContain((done as { released: string }).released);
    if ((done as { released: string }).released === "released") expect(done).toMatchObject({ next: { acquired: false } });
    await until("the lock is let go", 10_000, async () => (await holders(k)).length === 0);
    expect((await b.acquire(req(k))).acquired).toBe(true);
  });

  it("hands nothing over once another host force-released the lock, and lets the lock go", async () => {
    const { a, b, k, first } = await heldOnA();
    // The force-release's first step: the row's owner is cleared (the holder is told next).
    await admin.query(`update ${holdersTableOf(table)} set owner = null where id = $1`, [advisoryKeyOf(k).id]);
    expect(await a.handoff(k, first.owner, req(k))).toEqual({ released: "not_found" });
    await until("a unlocks it", 2_000, async () => (await holders(k)).length === 0);
    expect((await b.acquire(req(k))).acquired).toBe(true);
  });

  it("hands off a lock another process holds by releasing it by owner, then attempting for the next owner", async () => {
    const { a, b, k, first } = await heldOnA();
    // The holder hears release-by-owner on its LISTEN connection, opened with its first lock.
    await until("a listens", 2_000, () => a.listenerPid !== undefined);
    const done = await b.handoff(k, first.owner, req(k));
    expect(done.released).toBe("released");
    // The holder unlocks when told; the key is free or the next owner's.
    await until("a unlocks it", 2_000, async () => !(await holders(k)).includes(a.sessionPids[0]!));
    expect(await b.handoff(k, randomUUID(), req(k))).toMatchObject({ released: expect.stringMatching(/not_found|mismatch/) });
  });

  it("force-releases a lock its holder's session takes again at once for someone else: only the asked holding ends", async () => {
    // The holder's session unlocks when told, and a caller on the same host takes the key on
    // the same session within a round trip: the force-release must see that the holding it
    // asked to end is gone (its fence), not end the session that now holds the next one.
    const a = host({ sessions: 1 });
    const b = host();
    for (let round = 0; round < 3; round++) {
      const k = key();
      const first = await a.acquire(req(k));
      if (!first.acquired) throw new Error("not acquired");
      const pid = a.sessionPids[0];
      const next = req(k);
      let stop = false;
      const retaking = (async (): Promise<MutexAcquireResult | undefined> => {
        while (!stop) {
          const got = await a.acquire(next);
          if (got.acquired) return got;
          // This host's book answers "held" without a round trip: let I/O in.
          await new Promise((r) => setImmediate(r));
        }
        return undefined;
      })().catch((err: unknown) => (err instanceof Error ? err : new Error(String(err))));
      const warnsBefore = capture.lines.filter((l) => l.msg.includes("did not unlock")).length;
      expect(await b.forceRelease(k)).toBe(true);
      stop = true;
      const second = await retaking;
      if (second instanceof Error) throw second;
      expect(second?.acquired).toBe(true);
      if (second?.acquired) expect(second.fence).toBeGreaterThan(first.fence);
      expect(capture.lines.filter((l) => l.msg.includes("did not unlock")).length).toBe(warnsBefore);
      expect(a.sessionPids).toEqual([pid]);
      expect(await a.renew(k, next.owner, 10_000)).toMatchObject({ ok: true });
      expect((await b.status(k))?.owner).toBe(next.owner);
      expect(await a.release(k, next.owner)).toBe("released");
    }
  });

  it("gives a lock up when its row no longer names the owner (force-released while the session lives on)", async () => {
    const a = host();
    const b = host();
    const k = key();
    const first = req(k);
    expect((await a.acquire(first)).acquired).toBe(true);
    await admin.query(`update ${holdersTableOf(table)} set owner = null where id = $1`, [advisoryKeyOf(k).id]);
    expect(await a.renew(k, first.owner, 10_000)).toEqual({ ok: false, reason: "not_found" });
    await until("a unlocks it", 2_000, async () => (await holders(k)).length === 0);
    expect((await b.acquire(req(k))).acquired).toBe(true);
    // Release says so too, and unlocks all the same.
    const k2 = key();
    const second = req(k2);
    expect((await a.acquire(second)).acquired).toBe(true);
    await admin.query(`update ${holdersTableOf(table)} set owner = null where id = $1`, [advisoryKeyOf(k2).id]);
    expect(await a.release(k2, second.owner)).toBe("not_found");
    expect(await holders(k2)).toEqual([]);
    expect(a.heldCount).toBe(0);
  });

  it("through LockService: a force-released lease is reported LOST on renew", async () => {
    const a = new LockService(host(), { node: "node-a" });
    const b = new LockService(host(), { node: "node-b" });
    const k = key();
    const lease = await a.tryLock(k, { ttlMs: 10_000 });
    expect(lease).not.toBeNull();
    expect(await b.forceRelease({ name: lease!.name })).toBe(1);
    await expect(a.renew(lease!)).rejects.toMatchObject({ code: "LOST" });
    expect(await b.tryLock(k, { ttlMs: 10_000 })).not.toBeNull();
    await a.close({ closeBackend: false });
    await b.close({ closeBackend: false });
  });

  it("unlocks when the acquire statement fails after taking the advisory lock", async () => {
    const a = host();
    const b = host();
    const k = key();
    // Fails the row write, after pg_try_advisory_lock in the same statement succeeded.
    await admin.query(`alter table ${holdersTableOf(table)} add constraint no_explode_${run} check (plugin <> 'explode')`);
    try {
      await expect(a.acquire(req(k, { holder: { plugin: "explode", node: "n" } }))).rejects.toMatchObject({
        code: "BACKEND_UNAVAILABLE",
        message: expect.stringContaining("23514"),
      });
      await until("the advisory lock is given back", 2_000, async () => (await holders(k)).length === 0);
      expect((await b.acquire(req(k))).acquired).toBe(true);
      expect((await a.acquire(req(key()))).acquired).toBe(true);
    } finally {
      await admin.query(`alter table ${holdersTableOf(table)} drop constraint no_explode_${run}`);
    }
  });

  it("keeps its session and locks on a slow server: calls fail at commandTimeoutMs, abandoned acquisitions are unlocked", async () => {
    const slow = `lockhost_test_${run}_slow`;
    tables.push(slow);
    const backend = host({ table: slow, sessions: 1, commandTimeoutMs: 400 });
    const kept = req(key());
    expect((await backend.acquire(kept)).acquired).toBe(true);
    const [pid] = backend.sessionPids;
    // Every acquire now blocks on the table (after taking its advisory lock) until the server
    // cancels it at statement_timeout: slow answers, but answers.
    const locker = new pg.Client({ connectionString: url });
    await locker.connect();
    await locker.query(`begin; lock table ${holdersTableOf(slow)} in access exclusive mode`);
    const reqs = Array.from({ length: 10 }, () => req(key()));
    try {
      const started = performance.now();
      const outcomes = await Promise.all(reqs.map((r) => backend.acquire(r).catch((e: unknown) => e)));
      expect(performance.now() - started).toBeLessThan(1_500);
      for (const outcome of outcomes) expect(outcome).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
    } finally {
      await locker.query("rollback");
      await locker.end();
    }
    // The abandoned acquisitions run once the table is free, and are unlocked right after.
    await until("no abandoned acquisition keeps its lock", 10_000, async () => {
      for (const r of reqs) if ((await holders(r.name)).length > 0) return false;
      return true;
    });
    expect(backend.sessionPids).toEqual([pid]);
    expect((await backend.renew(kept.name, kept.owner, 10_000)).ok).toBe(true);
    expect(backend.heldCount).toBe(1);
    expect((await backend.acquire(req(reqs[0]!.name))).acquired).toBe(true);
  });

  it("fails fast with BACKEND_UNAVAILABLE and never shows the password when the server cannot be reached", async () => {
    const port = await freePort();
    const secret = "s3cretpw";
    const local = captureLogger();
    const backend = new PgBackend({ ...config(), url: `postgres://postgres:${secret}@127.0.0.1:${port}/test`, commandTimeoutMs: 500 }, local.logger);
    try {
      for (const call of [
        () => backend.acquire(req(key())),
        () => backend.acquire(req(key())),
        () => backend.status(key()),
        () => backend.forceRelease(key()),
      ]) {
        const started = performance.now();
        const err = await call().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(performance.now() - started).toBeLessThan(1_500);
        expect(err).toBeInstanceOf(LockhostError);
        expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
        const message = (err as Error).message;
        expect(message).not.toContain(secret);
        expect(message).toContain(`postgres://postgres:***@127.0.0.1:${port}/test`);
      }
      // A lock this backend does not hold may be held by another host (renew by owner after
      // restore): only the server can answer, so this fails too, and just as carefully.
      const renewed = await backend.renew(key(), "o", 1_000).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(renewed).toMatchObject({ code: "BACKEND_UNAVAILABLE" });
      expect((renewed as Error).message).not.toContain(secret);
      expect(JSON.stringify(local.lines)).not.toContain(secret);
      expect(local.lines.length).toBeGreaterThan(0);
    } finally {
      await backend.close();
    }
  });

  it("frees its locks on close, rejects calls with CLOSED afterwards, and closes only once", async () => {
    const backend = new PgBackend(config(), capture.logger);
    const k = key();
    expect((await backend.acquire(req(k))).acquired).toBe(true);
    await Promise.all([backend.close(), backend.close()]);
    await until("the server frees the closed sessions' locks", 2_000, async () => (await holders(k)).length === 0);
    expect(await host().status(k)).toBeNull();
    await expect(backend.acquire(req(key()))).rejects.toMatchObject({ code: "CLOSED" });
    await expect(backend.status(key())).rejects.toMatchObject({ code: "CLOSED" });
  });
});

describe("pg backend: batched renewals, release notifications, owner tokens from anywhere", () => {
  /** Counts the calls of a watch on `k` of `backend`; resolves once it listens. */
  async function watchCount(backend: PgBackend, k: string): Promise<{ calls: () => number; close: () => void }> {
    let calls = 0;
    const w = backend.watch(k, () => void calls++);
    await w.ready;
    return { calls: () => calls, close: () => w.close() };
  }

  /** Three hosts, `a` holding a new key `k` (request `first`, ttl `ttlMs`) on its session `pid`. */
  async function heldByA(ttlMs: number) {
    const [a, b, c] = [host(), host(), host()];
    const k = key();
    // b and c connected first: on a loaded machine opening a session (connect, tables) took
    // longer than a short lease, which then ended before b's first call.
    await Promise.all([b.status(k), c.status(k)]);
    const first = req(k, { ttlMs });
    expect((await a.acquire(first)).acquired).toBe(true);
    const [pid] = await holders(k);
    return { a, b, c, k, first, pid };
  }

  it("renews a batch with one statement per session, mixed results in request order", async () => {
    const a = host({ sessions: 2 });
    const b = host();
    const mine = Array.from({ length: 6 }, () => req(key("batch")));
    for (const r of mine) expect((await a.acquire(r)).acquired).toBe(true);
    const [theirs, others] = [req(key("batch")), req(key("batch"))];
    expect((await b.acquire(theirs)).acquired).toBe(true);
    expect((await b.acquire(others)).acquired).toBe(true);
    const gone = mine[5]!;
    expect(await a.release(gone.name, gone.owner)).toBe("released");

    const before = a.renewRoundTrips;
    const results = await a.renewMany([
      { name: mine[0]!.name, owner: mine[0]!.owner, ttlMs: 20_000 },
      { name: mine[1]!.name, owner: randomUUID(), ttlMs: 20_000 }, // not the owner
      { name: key("nobody"), owner: randomUUID(), ttlMs: 20_000 }, // held by nobody
      { name: mine[2]!.name, owner: mine[2]!.owner, ttlMs: 30_000 },
      { name: others.name, owner: randomUUID(), ttlMs: 20_000 }, // another host's, not the owner
      { name: gone.name, owner: gone.owner, ttlMs: 20_000 }, // released already
      { name: theirs.name, owner: theirs.owner, ttlMs: 25_000 }, // another host's, by its owner token
      { name: mine[3]!.name, owner: mine[3]!.owner, ttlMs: 20_000 },
    ]);
    const sent = a.renewRoundTrips - before;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sent).toBeLessThanOrEqual(2);
    expect(results.map((r) => (r.ok ? "ok" : r.reason))).toEqual(["ok", "mismatch", "not_found", "ok", "mismatch", "not_found", "ok", "ok"]);
    for (const [i, r] of [
      [0, mine[0]!],
      [3, mine[2]!],
      [6, theirs],
      [7, mine[3]!],
    ] as const) {
      const status = await b.status(r.name);
      const result = results[i]!;
      expect(result.ok && status?.expiresAtMs).toBe(result.ok && result.expiresAtMs);
    }
    expect((await b.status(mine[2]!.name))!.ttlRemainingMs).toBeGreaterThan(20_000);

    // Many locks, still one statement per session; a name twice in one batch needs another.
    const many = Array.from({ length: 40 }, () => req(key("batch")));
    for (const r of many) expect((await a.acquire(r)).acquired).toBe(true);
    const start = a.renewRoundTrips;
    const all = await a.renewMany(many.map((r) => ({ name: r.name, owner: r.owner, ttlMs: 10_000 })));
    expect(all.every((r) => r.ok)).toBe(true);
    expect(a.renewRoundTrips - start).toBeLessThanOrEqual(2);
    const twice = await a.renewMany([
      { name: many[0]!.name, owner: many[0]!.owner, ttlMs: 10_000 },
      { name: many[0]!.name, owner: many[0]!.owner, ttlMs: 12_000 },
    ]);
    expect(twice.every((r) => r.ok)).toBe(true);
    const afterTwice = a.renewRoundTrips;
    expect(await a.renewMany([])).toEqual([]);
    expect(a.renewRoundTrips).toBe(afterTwice);
  });

  it("says when the holder's lease ends on contention, from another host and from its own bookkeeping", async () => {
    const a = host();
    const b = host();
    const k = key();
    expect((await a.acquire(req(k, { ttlMs: 5_000 }))).acquired).toBe(true);
    for (const backend of [b, a]) {
      const contended = await backend.acquire(req(k));
      expectContended(contended, 5_000);
      if (contended.acquired) throw new Error("acquired");
      expect(contended.retryAfterMs).toBeGreaterThan(3_000);
    }
  });

  it("notifies watchers on another host of a release and a force-release, never of a refused release", async () => {
    const a = host();
    const b = host();
    const w = host();
    const k = key();
    const watched = await watchCount(w, k);
    const other = await watchCount(w, key());
    const first = req(k);
    expect((await a.acquire(first)).acquired).toBe(true);
    expect(await a.release(k, randomUUID())).toBe("mismatch");
    expect(await b.release(k, randomUUID())).toBe("mismatch");
    await sleep(300);
    expect(watched.calls()).toBe(0);

    expect(await a.release(k, first.owner)).toBe("released");
    await until("the release reaches the watcher", 3_000, () => watched.calls() >= 1);
    expect((await a.acquire(req(k))).acquired).toBe(true);
    const seen = watched.calls();
    expect(await b.forceRelease(k)).toBe(true);
    await until("the force-release reaches the watcher", 3_000, () => watched.calls() > seen);
    expect(other.calls()).toBe(0);

    // A lease ending at its deadline is announced too.
    expect((await b.acquire(req(k, { ttlMs: 200 }))).acquired).toBe(true);
    const beforeExpiry = watched.calls();
    await until("the lease end reaches the watcher", 3_000, () => watched.calls() > beforeExpiry);

    // Closed: no more calls.
    watched.close();
    const closedAt = watched.calls();
    expect((await a.acquire(first)).acquired).toBe(true);
    expect(await a.release(k, first.owner)).toBe("released");
    await sleep(300);
    expect(watched.calls()).toBe(closedAt);
    other.close();
  });

  it("listens on a connection of its own, and comes back after it is terminated, calling every watcher once", async () => {
    const applicationName = `lockhost-test-${run}-listen`;
    const w = host({ sessions: 2 }, { applicationName });
    const a = host();
    const k = key();
    expect((await w.acquire(req(key()))).acquired).toBe(true);
    const watched = await watchCount(w, k);
    const pid = w.listenerPid;
    expect(pid).toBeDefined();
    expect(w.sessionPids).not.toContain(pid);
    const conns = await admin.query<{ pid: number; application_name: string }>(
      "select pid, application_name from pg_stat_activity where application_name like $1",
      [`${applicationName}%`],
    );
    expect(conns.rows.find((r) => r.pid === pid)?.application_name).toBe(`${applicationName}:listen`);
    expect(
      conns.rows
        .filter((r) => r.application_name === applicationName)
        .map((r) => r.pid)
        .sort(),
    ).toEqual([...w.sessionPids].sort());

    await admin.query("select pg_terminate_backend($1)", [pid]);
    await until("the listener reconnects", 5_000, () => w.listenerPid !== undefined && w.listenerPid !== pid);
    // A release may have been missed while it was down: every watcher is called once.
    await until("the watcher is called after the reconnection", 3_000, () => watched.calls() >= 1);
    const seen = watched.calls();
    const r = req(k);
    expect((await a.acquire(r)).acquired).toBe(true);
    expect(await a.release(k, r.owner)).toBe("released");
    await until("a release after the reconnection is delivered", 3_000, () => watched.calls() > seen);
    watched.close();
  });

  it("resolves a watch's ready (waiters then poll) when the server cannot be reached", async () => {
    const port = await freePort();
    const backend = new PgBackend({ ...config(), url: `postgres://postgres@127.0.0.1:${port}/test`, commandTimeoutMs: 300 }, capture.logger);
    try {
      const w = backend.watch(key(), () => undefined);
      await w.ready;
      w.close();
    } finally {
      await backend.close();
    }
  });

  it("releases by owner token from another instance: the holder unlocks at once and later finds its lease gone", async () => {
    const { a, b, c, k, first, pid } = await heldByA(30_000);
    expect(a.sessionPids).toContain(pid);
    expect(await b.release(k, randomUUID())).toBe("mismatch");
    expect(await b.release(key(), first.owner)).toBe("not_found");
    expect((await b.status(k))?.owner).toBe(first.owner);

    const t0 = performance.now();
    expect(await b.release(k, first.owner)).toBe("released");
    expect(await b.status(k)).toBeNull();
    // The holder hears it on its control channel and unlocks: long before the 30 s lease ends.
    await until("a unlocks", 5_000, async () => (await holders(k)).length === 0);
    expect((await c.acquire(req(k))).acquired).toBe(true);
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(a.heldCount).toBe(0);
    expect(await a.release(k, first.owner)).toBe("not_found");
    expect(await a.renew(k, first.owner, 1_000)).toEqual({ ok: false, reason: "not_found" });
    // c holds it now: not that owner's any more, from anywhere.
    expect(await b.release(k, first.owner)).toBe("mismatch");
  });

  it("releases by owner token right after the holder's first acquisition, before its LISTEN connection is open: the holder unlocks all the same", async () => {
    const [a, b, c] = [host(), host(), host()];
    const k = key();
    await b.status(k); // b's session is open: its release goes out at once
    const first = req(k, { ttlMs: 30_000 });
    expect((await a.acquire(first)).acquired).toBe(true);
    // Sent without waiting for a's listener, which opens with this first lock.
    expect(await b.release(k, first.owner)).toBe("released");
    await until("a unlocks, long before its 30 s lease ends", 10_000, async () => (await holders(k)).length === 0);
    expect((await c.acquire(req(k))).acquired).toBe(true);
    expect(a.heldCount).toBe(0);
  });

  it("releases by owner token while the holder's LISTEN connection is away: the holder unlocks once it is back", async () => {
    const [a, b] = [host(), host()];
    const k = key();
    await b.status(k);
    const first = req(k, { ttlMs: 30_000 });
    expect((await a.acquire(first)).acquired).toBe(true);
    await until("a listens", 10_000, () => a.listenerPid !== undefined);
    const pid = a.listenerPid!;
    await admin.query("select pg_terminate_backend($1)", [pid]);
    expect(await b.release(k, first.owner)).toBe("released");
    await until("a unlocks, long before its 30 s lease ends", 10_000, async () => (await holders(k)).length === 0);
    expect(a.heldCount).toBe(0);
  });

  it("renews by owner token from another instance: the holder keeps the lock past its own deadline", async () => {
    const { a, b, c, k, first, pid } = await heldByA(400);
    expect(await b.renew(k, randomUUID(), 3_000)).toEqual({ ok: false, reason: "mismatch" });
    expect(await b.renew(key(), first.owner, 3_000)).toEqual({ ok: false, reason: "not_found" });
    const renewed = await b.renew(k, first.owner, 3_000);
    expect(renewed.ok).toBe(true);
    await sleep(900); // past a's own deadline (400 ms)
    expect(await holders(k)).toEqual([pid]);
    expectContended(await c.acquire(req(k)), 3_000);
    expect((await c.status(k))?.owner).toBe(first.owner);
    expect(a.heldCount).toBe(1);
    // The batch renews it from elsewhere too; then the holder itself releases it.
    expect((await b.renewMany([{ name: k, owner: first.owner, ttlMs: 3_000 }]))[0]?.ok).toBe(true);
    expect(await a.release(k, first.owner)).toBe("released");
    expect(await holders(k)).toEqual([]);
    // Not renewed elsewhere: the lease ends at the holder's deadline as before.
    const second = req(k, { ttlMs: 300 });
    expect((await a.acquire(second)).acquired).toBe(true);
    await until("a ends the lease", 3_000, async () => (await holders(k)).length === 0);
    expect(await b.renew(k, second.owner, 1_000)).toEqual({ ok: false, reason: "not_found" });
  });

  it("through LockService: a lease restored with keepalive on another host outlives its TTL, and its release frees it", async () => {
    const a = new LockService(host(), { node: "node-a" });
    const b = new LockService(host(), { node: "node-b" });
    const c = host();
    const k = key();
    const lease = (await a.tryLock(k, { ttlMs: 300 }))!;
    expect(lease).not.toBeNull();
    const restored = await b.restore(k, lease.owner, { keepalive: true, ttlMs: 300 });
    await sleep(1_000);
    expect(restored.state).toBe("held");
    expect((await b.status({ name: lease.name })).held).toBe(true);
    expectContended(await c.acquire(req(lease.name)), 300);
    await b.release(restored);
    await until("the holder unlocks", 5_000, async () => (await holders(lease.name)).length === 0);
    expect((await c.acquire(req(lease.name))).acquired).toBe(true);
    await expect(a.release(lease)).rejects.toMatchObject({ code: "LOST" });
    await a.close({ closeBackend: false });
    await b.close({ closeBackend: false });
  });
});

describe("pg expiry queue", () => {
  it("calls back each item once, earliest deadline first, skipping removed ones and honouring moved ones", async () => {
    type Item = Timed & { id: number };
    const fired: Item[] = [];
    const queue = new DeadlineQueue<Item>((item) => fired.push(item));
    const start = performance.now();
    const items: Item[] = Array.from({ length: 200 }, (_, id) => ({ id, deadline: start + ((id * 37) % 60), heapIndex: -1 }));
    for (const item of items) queue.add(item);
    for (const item of items.filter((i) => i.id % 5 === 0)) queue.remove(item);
    for (const item of items.filter((i) => i.id % 7 === 0)) {
      item.deadline = start + 80 + (item.id % 10);
      queue.update(item);
    }
    queue.remove(items[5]!); // twice: a no-op
    await until("all due items fired", 2_000, () => queue.size === 0);
    // Moving an item that was taken out queues it again.
    const expected = items.filter((i) => i.id % 5 !== 0 || i.id % 7 === 0);
    expect(fired.map((i) => i.id).sort((a, b) => a - b)).toEqual(expected.map((i) => i.id));
    for (let i = 1; i < fired.length; i++) expect(fired[i]!.deadline).toBeGreaterThanOrEqual(fired[i - 1]!.deadline);
    for (const item of fired) expect(item.heapIndex).toBe(-1);
    queue.clear();
  });
});
