// pgFenceStore against a real PostgreSQL (DATABASE_URL, or the machine's default), and the
// conditional UPDATE the fence documentation recommends, run for real. Tables are made up
// for this run and dropped at the end.
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { pgFenceStore, type PgFenceStore } from "../fence/index.js";
import { databaseUrl } from "./support/servers.js";

const run = randomUUID().slice(0, 8);
const table = `lockhost_fence_test_${run}`;
const journal = `${table}_journal`;
const accounts = `lockhost_fence_accounts_${run}`;
const pool = new pg.Pool({ connectionString: databaseUrl(), max: 10 });
pool.on("error", () => undefined);
let store: PgFenceStore;
const I64_MAX = 2n ** 63n - 1n;

beforeAll(async () => {
  store = pgFenceStore(pool, { table });
  await store.createTable();
  await store.createTable(); // a second time is harmless
  // Every change of the fence table, in the order the server made them (under the row's lock).
  await pool.query(`create table ${journal} (id bigserial primary key, lock text not null, fence numeric not null)`);
  await pool.query(`create function ${journal}_fn() returns trigger language plpgsql as $$
    begin insert into ${journal} (lock, fence) values (new.lock, new.fence); return new; end $$`);
  await pool.query(`create trigger ${journal}_tr after insert or update on ${table} for each row execute function ${journal}_fn()`);
});

afterAll(async () => {
  await pool.query(`drop table if exists ${table}, ${journal}, ${accounts}`);
  await pool.query(`drop function if exists ${journal}_fn()`);
  await pool.end();
});

describe("pgFenceStore", () => {
  it("accepts a fence above the last, refuses an equal or lower one with the last accepted", async () => {
    expect(await store.accept("global:ledger", 5n)).toEqual({ accepted: true, last: 5n });
    expect(await store.accept("global:ledger", 5n)).toEqual({ accepted: false, last: 5n });
    expect(await store.accept("global:ledger", 4n)).toEqual({ accepted: false, last: 5n });
    expect(await store.accept("global:ledger", 6n)).toEqual({ accepted: true, last: 6n });
    expect(await store.accept("other:ledger", 1n)).toEqual({ accepted: true, last: 1n });
  });

  it("round-trips 2^63-1 and twenty-digit fences exactly", async () => {
    expect(await store.accept("big", I64_MAX - 1n)).toEqual({ accepted: true, last: I64_MAX - 1n });
    expect(await store.accept("big", I64_MAX)).toEqual({ accepted: true, last: I64_MAX });
    expect(await store.accept("big", I64_MAX - 1n)).toEqual({ accepted: false, last: I64_MAX });
    expect(await store.accept("big", 99_999_999_999_999_999_999n)).toEqual({ accepted: true, last: 99_999_999_999_999_999_999n });
    const { rows } = await pool.query<{ fence: string }>(`select fence::text as fence from ${table} where lock = 'big'`);
    expect(rows[0]?.fence).toBe("99999999999999999999");
  });

  it("of 20 concurrent accepts of interleaved fences, ends at the max and never accepts a lower after a higher", async () => {
    for (let round = 0; round < 5; round++) {
      const lock = `race-${round}`;
      // Two holders' fences interleaved, then shuffled: the arrival order is the pool's.
      const fences = Array.from({ length: 20 }, (_, i) => BigInt(i % 2 === 0 ? 100 + i : 100 - i));
      fences.sort(() => Math.random() - 0.5);
      const results = await Promise.all(fences.map((f) => store.accept(lock, f)));
      const max = fences.reduce((a, b) => (b > a ? b : a));
      results.forEach((r, i) => {
        if (r.accepted) expect(r.last).toBe(fences[i]);
        else expect(r.last! >= fences[i]!).toBe(true);
      });
      expect(results.filter((r) => r.accepted && r.last === max)).toHaveLength(1);
      expect(await store.accept(lock, max)).toEqual({ accepted: false, last: max });
      const { rows } = await pool.query<{ fence: string }>(`select fence::text as fence from ${journal} where lock = $1 order by id`, [lock]);
      const applied = rows.map((r) => BigInt(r.fence));
      expect(applied.length).toBe(results.filter((r) => r.accepted).length);
      for (let i = 1; i < applied.length; i++) expect(applied[i]! > applied[i - 1]!).toBe(true);
      expect(applied.at(-1)).toBe(max);
    }
  });

  it("refuses a table name it would have to quote", () => {
    expect(() => pgFenceStore(pool, { table: "Fences; drop table x" })).toThrow(/must be "name" or "schema.name"/);
  });
});

describe("the documented conditional UPDATE", () => {
  it("writes with a higher fence (1 row) and refuses a stale one (0 rows, balance unchanged)", async () => {
    await pool.query(`create table ${accounts} (id int primary key, balance bigint not null, fence bigint not null default 0)`);
    await pool.query(`insert into ${accounts} (id, balance) values (1, 100)`);
    const write = (amount: number, fence: bigint) =>
      pool.query(
        `UPDATE ${accounts} SET balance = balance + $1, fence = $2
                   WHERE id = $3 AND fence < $2`,
        [amount, fence.toString(), 1],
      );
    const balance = async (): Promise<{ balance: string; fence: string }> =>
      (await pool.query<{ balance: string; fence: string }>(`select balance::text, fence::text from ${accounts} where id = 1`)).rows[0]!;

    expect((await write(10, 5n)).rowCount).toBe(1);
    expect((await write(1000, 4n)).rowCount).toBe(0);
    expect((await write(1000, 5n)).rowCount).toBe(0);
    expect(await balance()).toEqual({ balance: "110", fence: "5" });
    expect((await write(-10, I64_MAX)).rowCount).toBe(1);
    expect((await write(1000, I64_MAX)).rowCount).toBe(0);
    expect(await balance()).toEqual({ balance: "100", fence: I64_MAX.toString() });
  });
});
