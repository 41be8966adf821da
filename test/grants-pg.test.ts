// The PostgreSQL grants that docs/backends.md ("Least-privilege grants") lists, read from the
// page and run on the shared server for roles made for this run (dropped after): lockhost's
// basics work for (a) a role that owns its tables and (b) one that uses tables an administrator
// made, and a role missing a grant gets an error that names it.
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { LockService } from "../host/locking/service.js";
import { BackendHealth } from "../host/backend-health.js";
import { permitSpec } from "../kit/kinds.js";
import { PgBackend } from "../plugins/backends/pg/index.js";
import { pgDefaults } from "../plugins/backends/pg/config.js";
import { statementsFor } from "../plugins/backends/pg/mutex-sql.js";
import { queueStatementsFor } from "../plugins/backends/pg/queue-sql.js";
import { databaseUrl } from "./support/servers.js";
import { exerciseBasics } from "./support/grant-basics.js";
import { silent } from "./support/log.js";

const run = randomUUID().slice(0, 8);
const schema = `lockhost_grants_${run}`;
const table = `${schema}.locks`;
const roles: string[] = [];
let admin: pg.Client;
const backends: PgBackend[] = [];

const page = readFileSync(new URL("../docs/backends.md", import.meta.url), "utf8");

/** The SQL of the docs' code block whose first line is `-- ${title}`. */
function documentedBlock(title: string): string {
  const at = page.indexOf("```sql\n-- " + title + "\n");
  if (at < 0) throw new Error(`docs/backends.md has no sql block starting "-- ${title}"`);
  return page.slice(at + "```sql\n".length, page.indexOf("\n```", at + 1));
}

/** A documented block for this run: its schema, table and role instead of the defaults. */
function forThisRun(sql: string, role: string): string {
  return sql
    .replaceAll("lockhost_locks", table)
    .replaceAll("SCHEMA public", `SCHEMA ${schema}`)
    .replace(/\blockhost\b(?![_.])/g, role);
}

/** Creates `role` with the documented grants of `title`, edited by `edit`; its URL. */
async function roleWith(title: string, suffix: string, edit: (sql: string) => string = (s) => s): Promise<string> {
  const role = `${schema}_${suffix}`;
  await admin.query(edit(forThisRun(documentedBlock(title), role)));
  roles.push(role);
  const url = new URL(databaseUrl());
  url.username = role;
  url.password = "CHANGE-ME";
  return url.toString();
}

function backendAt(url: string, over: Partial<typeof pgDefaults> = {}): PgBackend {
  const b = new PgBackend({ ...pgDefaults, url, table, commandTimeoutMs: 5_000, sessions: 2, ...over }, silent);
  backends.push(b);
  return b;
}

/** The DDL lockhost runs for `t` (mode (a)), as the docs print it. */
const ddlFor = (t: string): string => `${statementsFor(t).createTables.join(";\n")};\n${queueStatementsFor(t).create};`;

beforeAll(async () => {
  admin = new pg.Client({ connectionString: databaseUrl() });
  await admin.connect();
});

afterEach(async () => {
  await Promise.all(backends.splice(0).map((b) => b.close()));
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  for (const role of roles.splice(0)) await admin.query(`DROP OWNED BY ${role}; DROP ROLE ${role}`);
});

afterAll(async () => {
  await admin?.end();
});

describe("PostgreSQL least-privilege grants (docs/backends.md)", () => {
  it("prints the DDL lockhost runs, for the default table", () => {
    // A change to the DDL in mutex-sql.ts or queue-sql.ts changes what an administrator must run: paste ddlFor("lockhost_locks") there.
    expect(
      page.includes("```sql\n" + ddlFor("lockhost_locks") + "\n```"),
      "docs/backends.md prints the DDL of mutex-sql.ts and queue-sql.ts for lockhost_locks",
    ).toBe(true);
  });

  it("(a) a role that owns its tables: the basics and every kind", async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    const url = await roleWith("(a) a role that owns its tables", "own");
    await exerciseBasics(backendAt(url), backendAt(url), run);
    const owners = await admin.query<{ owner: string }>(`SELECT DISTINCT tableowner AS owner FROM pg_tables WHERE schemaname = $1`, [schema]);
    expect(owners.rows.map((r) => r.owner)).toEqual([`${schema}_own`]);
  });

  it("(b) a role that uses tables an administrator made: the basics and every kind, nothing created", async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(ddlFor(table));
    const url = await roleWith("(b) a role that uses tables an administrator made", "use");
    await exerciseBasics(backendAt(url), backendAt(url), run);
    const owners = await admin.query<{ owner: string }>(`SELECT DISTINCT tableowner AS owner FROM pg_tables WHERE schemaname = $1`, [schema]);
    expect(owners.rows.map((r) => r.owner)).toEqual(["postgres"]);
  });

  it("a role missing a grant on the mutex tables fails the start naming it", async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(ddlFor(table));
    const url = await roleWith(
      "(b) a role that uses tables an administrator made",
      "noupdate",
      (sql) => `${sql}\nREVOKE UPDATE ON ${table}_holders FROM ${schema}_noupdate;`,
    );
    const backend = backendAt(url);
    const err = await backend.ping().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain(`the role lacks UPDATE on ${table}_holders`);
    const locks = new LockService(backend, { node: "n" });
    await expect(BackendHealth.atStart(locks, silent, "lockhost.toml: [locking.pg]")).rejects.toMatchObject({
      code: "CONFIG_INVALID",
      message: expect.stringContaining(`the role lacks UPDATE on ${table}_holders`),
    });
    await locks.close({ closeBackend: false });
  });

  it("a role that may neither create the tables nor find them fails the start saying so", async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    // The block's role and schema lines only: there are no tables to grant on.
    const url = await roleWith("(b) a role that uses tables an administrator made", "nocreate", (sql) => sql.split("\n").slice(0, 3).join("\n"));
    const err = await backendAt(url)
      .ping()
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", details: { permanent: 1 } });
    expect((err as Error).message).toContain(`the role may not create the lock tables (permission denied for schema ${schema}`);
  });

  it("a role missing a grant on the queue tables: the step fails for good, naming the table", async () => {
    await admin.query(`CREATE SCHEMA ${schema}`);
    await admin.query(ddlFor(table));
    const url = await roleWith(
      "(b) a role that uses tables an administrator made",
      "nodelete",
      (sql) => `${sql}\nREVOKE DELETE ON ${table}_shared_holders FROM ${schema}_nodelete;`,
    );
    const locks = new LockService(backendAt(url), { node: "n" });
    const permit = (await locks.try("sem", { ttlMs: 5_000, ...permitSpec(2) }))!;
    const err = await locks.release(permit).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: "BACKEND_UNAVAILABLE", retryable: false });
    expect((err as Error).message).toContain("the role lacks a privilege: permission denied for table locks_shared_holders (SQLSTATE 42501");
    await locks.close({ closeBackend: false });
  });
});
