// The tables, function and statements of the queue kinds (read/write locks, semaphores, fair
// mutexes: kit/steps.ts) on PostgreSQL. Mutexes ride on session advisory locks; their holders cannot (a holder's lease
// must end on the server's clock and a crashed holder must heal by TTL, whatever its session
// does), so they live in rows, and every step is ONE round trip:
//
// - `<table>_shared_keys` (UNLOGGED): per (kind, name) the row every acquisition attempt
//   updates first, which locks it till commit (so it serializes a key's acquisitions, in no
//   advisory space): the fence counter (advanced by every attempt), a copy of `reserved`, the
//   limit the live holders took the key with, and the queue's sequence. Never deleted.
// - `<table>_shared_fences` (logged): per (kind, name) `reserved`, a bound no fence handed out
//   exceeds, raised a block at a time with a flushed commit, as the mutex fence table does. So
//   an acquisition writes no WAL (no flush) except every FENCE_BLOCK-th, and fences never
//   repeat after a crash empties the unlogged tables.
// - `<table>_shared_holders` (UNLOGGED): one row per live holder (and expired ones until the
//   key's next acquisition prunes them): mode, fence, who, the lease, and `instance`, the
//   backend instance that took it, so a force-release tells that host alone of the loss.
// - `<table>_shared_queue` (UNLOGGED): the places of waiting exclusive acquirers, each with its
//   own expiry and `pid`, the backend pid of the session that took or last refreshed it; FIFO
//   by `seq`. A place whose session is gone (its host died: the server ended the session when
//   the socket closed) counts as absent at once, not when its expiry lapses: a dead host's
//   waiter must not hold a free key for everyone (measured before: 3.0-3.7 s, at the default
//   1 s poll). A live waiter whose session was replaced gets its place back with its seq at its
//   next attempt (the upsert rewrites pid), having maybe let others pass meanwhile.
//
// Times are the server's clock, whole ms (clock_timestamp(), read after the key's row lock so
// that a waited-for lock does not date a lease in the past).
import { createHash } from "node:crypto";
import { FENCE_BLOCK, quoteTable, type Statement } from "./mutex-sql.js";

/** PostgreSQL's identifier limit (NAMEDATALEN - 1). */
const MAX_IDENTIFIER = 63;

/** The names of the queue objects beside the configured `table` (`name` or `schema.name`). */
export interface QueueObjects {
  readonly keys: string;
  readonly fences: string;
  readonly holders: string;
  readonly queue: string;
  /** The acquisition function. */
  readonly acquire: string;
}

/** Version tag of the DDL, kept as the function's comment: a host that finds another one re-creates the function. */
export const QUEUE_DDL_NUMBER = 5;
export const QUEUE_DDL_VERSION = `lockhost shared v${QUEUE_DDL_NUMBER}`;

/**
 * `<name>_shared_keys`, ... in the configured table's schema; a name too long for a suffix is
 * cut and marked with a hash of the whole name, so two configured tables never share objects.
 */
export function queueObjectsOf(table: string): QueueObjects {
  const dot = table.lastIndexOf(".");
  const schema = table.slice(0, dot + 1);
  const name = table.slice(dot + 1);
  const named = (suffix: string): string => {
    if (name.length + suffix.length <= MAX_IDENTIFIER) return `${schema}${name}${suffix}`;
    const hash = createHash("sha256").update(name).digest("hex").slice(0, 8);
    return `${schema}${name.slice(0, MAX_IDENTIFIER - suffix.length - 9)}_${hash}${suffix}`;
  };
  return {
    keys: named("_shared_keys"),
    fences: named("_shared_fences"),
    holders: named("_shared_holders"),
    queue: named("_shared_queue"),
    acquire: named("_shared_acquire"),
  };
}

/** The acquisition function's argument types, for to_regprocedure and DROP FUNCTION. */
export const ACQUIRE_ARGS = "text, text, text, text, integer, bigint, bigint, text, text, text, text";

/** The statements of the queue steps, for one configured table. */
export interface QueueStatements {
  /** $1 the function's signature, $2-$5 the tables -> [whether all exist, the function at this DDL version]. */
  readonly ready: { readonly text: string; readonly values: readonly string[] };
  /** Creates or replaces every object, in one transaction serialized across hosts (simple query protocol). */
  readonly create: string;
  /**
   * $1 kind, $2 name, $3 owner, $4 mode, $5 limit, $6 ttl ms, $7 queue ms, $8 plugin, $9 node,
   * $10 hostname, $11 instance -> [fence, acquired ms, expires ms, retry after ms, held limit]:
   * fence set when taken; else a retry hint, and the holders' limit when it differs.
   */
  readonly acquire: Statement;
  /**
   * $1 kind, $2 names, $3 owners, $4 ttl ms (arrays, pairs unique) -> [expires ms or null] per
   * request, in order.
   */
  readonly renewMany: Statement;
  /**
   * $1 kind, $2 name, $3 owner, $4 $5 the key's wait lock, $6 channel, $7 wake payload ->
   * [whether a live hold was removed]; wakes watchers when a row went.
   */
  readonly release: Statement;
  /** $1 kind, $2 name, $3 owner, $4 $5 wait lock, $6 channel, $7 wake payload -> [] (wakes when a place went). */
  readonly leaveQueue: Statement;
  /**
   * $1 kind, $2 name, $3 $4 wait lock, $5 channel, $6 wake payload -> [live holders removed];
   * tells each one's instance (`l:<instance>:<owner>`) and wakes the watchers.
   */
  readonly forceRelease: Statement;
  /** $1 kind, $2 name -> [limit, queued, holders json] or no row. */
  readonly status: Statement;
  /**
   * $1 kind, $2 LIKE pattern, $3 last name of the previous page or null, $4 limit ->
   * [name, limit, queued, holders json] per key with live holders, in name order.
   */
  readonly list: Statement;
}

/**
 * Whether the session that keeps queue place `alias` is still connected: one lookup of its pid
 * in the server's backend status (no row once the session ended). Visible for every role's
 * sessions. A place without a pid (written before v5) is judged by its expiry alone.
 */
const sessionAlive = (alias: string): string => `(${alias}.pid IS NULL OR EXISTS (SELECT 1 FROM pg_stat_get_activity(${alias}.pid)))`;

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::int8`;
const clockNow = "date_trunc('milliseconds', clock_timestamp())";

/** Key for the DDL transaction's advisory lock: hosts starting together create the objects one at a time. */
const DDL_LOCK = createHash("sha256").update("lockhost shared ddl").digest().readBigInt64BE(0).toString();

/** Builds the queue statements for the configured `table`. */
export function queueStatementsFor(table: string): QueueStatements {
  const names = queueObjectsOf(table);
  const k = quoteTable(names.keys);
  const f = quoteTable(names.fences);
  const h = quoteTable(names.holders);
  const q = quoteTable(names.queue);
  const fn = quoteTable(names.acquire);
  // A key's live holders and queue places, as status and list report them (`t.t`: now).
  const holdersJson = (kind: string, name: string): string =>
    `(SELECT json_agg(json_build_array(h.owner, h.mode, h.fence, h.plugin, h.node, h.hostname,
        ${ms("h.acquired_at")}, ${ms("h.expires_at")}, h.ttl_ms, ${ms("h.expires_at")} - ${ms("t.t")}) ORDER BY h.fence)
      FROM ${h} h WHERE h.kind = ${kind} AND h.name = ${name} AND h.expires_at > t.t)`;
  const queued = (kind: string, name: string): string =>
    `(SELECT count(*) FROM ${q} q WHERE q.kind = ${kind} AND q.name = ${name} AND q.expires_at > t.t AND ${sessionAlive("q")})`;
  // Wakes the key's watchers, only when one holds its wait lock (as the mutex release does).
  const wake = (removed: string, k1: string, k2: string, channel: string, payload: string): string =>
    `CASE WHEN ${removed} = 0 OR pg_try_advisory_xact_lock(${k1}::int4, ${k2}::int4) THEN NULL ELSE pg_notify(${channel}, ${payload}) END`;
  // The key's holders as of `t`: live ones by mode, whether the requester is one, the earliest
  // lease end, and how many have lapsed.
  const countHolders = `SELECT count(*) FILTER (WHERE expires_at > t AND mode = 'shared'), count(*) FILTER (WHERE expires_at > t AND mode = 'exclusive'),
         coalesce(bool_or(owner = p_owner AND expires_at > t), false), min(expires_at) FILTER (WHERE expires_at > t),
         count(*) FILTER (WHERE expires_at <= t)
    INTO n_shared, n_excl, mine, earliest, n_expired FROM ${h} WHERE kind = p_kind AND name = p_name`;
  return {
    ready: {
      // At this version or a newer one: a host never puts back an older function over a newer
      // host's (in a rolling upgrade the newer one's objects stay).
      text: `SELECT coalesce(substring(obj_description(to_regprocedure($1), 'pg_proc') from '^lockhost shared v([0-9]+)$')::int >= ${QUEUE_DDL_NUMBER}, false)
          AND to_regclass($2) IS NOT NULL AND to_regclass($3) IS NOT NULL AND to_regclass($4) IS NOT NULL AND to_regclass($5) IS NOT NULL`,
      values: [`${fn}(${ACQUIRE_ARGS})`, k, f, h, q],
    },
    create: `SELECT pg_advisory_xact_lock(${DDL_LOCK});
CREATE UNLOGGED TABLE IF NOT EXISTS ${k} (
  kind text NOT NULL, name text NOT NULL, lim integer NOT NULL, fence bigint NOT NULL,
  reserved bigint NOT NULL, qseq bigint NOT NULL, PRIMARY KEY (kind, name));
CREATE TABLE IF NOT EXISTS ${f} (kind text NOT NULL, name text NOT NULL, reserved bigint NOT NULL, PRIMARY KEY (kind, name));
CREATE UNLOGGED TABLE IF NOT EXISTS ${h} (
  kind text NOT NULL, name text NOT NULL, owner text NOT NULL,
  mode text NOT NULL CHECK (mode IN ('shared', 'exclusive')), fence bigint NOT NULL,
  plugin text NOT NULL, node text NOT NULL, hostname text NOT NULL, instance text NOT NULL,
  acquired_at timestamptz NOT NULL, expires_at timestamptz NOT NULL, ttl_ms bigint NOT NULL,
  PRIMARY KEY (kind, name, owner));
CREATE UNLOGGED TABLE IF NOT EXISTS ${q} (
  kind text NOT NULL, name text NOT NULL, owner text NOT NULL, seq bigint NOT NULL,
  expires_at timestamptz NOT NULL, pid integer, PRIMARY KEY (kind, name, owner));
ALTER TABLE ${q} ADD COLUMN IF NOT EXISTS pid integer;
CREATE OR REPLACE FUNCTION ${fn}(p_kind text, p_name text, p_owner text, p_mode text, p_limit integer,
  p_ttl bigint, p_queue bigint, p_plugin text, p_node text, p_host text, p_instance text,
  OUT o_fence bigint, OUT o_acquired bigint, OUT o_expires bigint, OUT o_retry bigint, OUT o_limit integer)
LANGUAGE plpgsql AS $fn$
DECLARE
  k ${k}%ROWTYPE;
  t timestamptz;
  n_shared integer;
  n_excl integer;
  n_expired integer;
  mine boolean;
  earliest timestamptz;
  head text;
  head_expires timestamptz;
BEGIN
  -- The key's row, locked by advancing its fence: one acquisition of a key at a time, on any
  -- host. Every attempt takes a fence, handed out or not: fences only have to increase, and
  -- this costs one statement where a SELECT FOR UPDATE and a later UPDATE would cost two.
  UPDATE ${k} SET fence = fence + 1 WHERE kind = p_kind AND name = p_name RETURNING * INTO k;
  IF NOT FOUND THEN
    INSERT INTO ${k} (kind, name, lim, fence, reserved, qseq) VALUES (p_kind, p_name, p_limit, 0, 0, 0) ON CONFLICT DO NOTHING;
    UPDATE ${k} SET fence = fence + 1 WHERE kind = p_kind AND name = p_name RETURNING * INTO k;
  END IF;
  t := ${clockNow};
  ${countHolders};
  IF n_expired > 0 THEN
    -- Deleted, then counted again: a renewal in flight when the count read the row as expired
    -- either commits first (the DELETE re-checks the new version and keeps it; the new count
    -- sees it live) or finds the row gone (not_found). Deciding on the first count could grant
    -- beside a lease renewed at its last moment.
    DELETE FROM ${h} WHERE kind = p_kind AND name = p_name AND expires_at <= t;
    ${countHolders};
  END IF;
  -- Lapsed places and those of dead sessions are skipped here and pruned when a waiter queues.
  SELECT owner, expires_at INTO head, head_expires FROM ${q} q
    WHERE kind = p_kind AND name = p_name AND expires_at > t AND ${sessionAlive("q")} ORDER BY seq LIMIT 1;
  IF mine THEN
    NULL; -- not reentrant
  ELSIF p_mode = 'shared' AND n_shared + n_excl > 0 AND k.lim <> p_limit THEN
    o_limit := k.lim;
  ELSIF (p_mode = 'exclusive' AND n_shared + n_excl = 0 AND (head IS NULL OR head = p_owner))
     OR (p_mode = 'shared' AND n_excl = 0 AND head IS NULL AND (p_limit = 0 OR n_shared < p_limit)) THEN
    o_fence := k.fence;
    IF o_fence > k.reserved OR k.lim <> p_limit THEN
      IF o_fence > k.reserved THEN
        -- Past the reserved block (or the unlogged row was emptied by a crash): the next block,
        -- flushed before the fence goes out.
        SELECT greatest(o_fence, coalesce(max(x.reserved), 0) + 1) INTO o_fence FROM ${f} x WHERE x.kind = p_kind AND x.name = p_name;
        k.reserved := o_fence + ${FENCE_BLOCK - 1};
        INSERT INTO ${f} AS x (kind, name, reserved) VALUES (p_kind, p_name, k.reserved)
          ON CONFLICT (kind, name) DO UPDATE SET reserved = greatest(x.reserved, EXCLUDED.reserved);
        IF current_setting('synchronous_commit') = 'off' THEN
          PERFORM set_config('synchronous_commit', 'on', true);
        END IF;
      END IF;
      UPDATE ${k} SET fence = o_fence, reserved = k.reserved, lim = p_limit WHERE kind = p_kind AND name = p_name;
    END IF;
    IF head = p_owner THEN
      DELETE FROM ${q} WHERE kind = p_kind AND name = p_name AND owner = p_owner;
    END IF;
    INSERT INTO ${h} (kind, name, owner, mode, fence, plugin, node, hostname, instance, acquired_at, expires_at, ttl_ms)
      VALUES (p_kind, p_name, p_owner, p_mode, o_fence, p_plugin, p_node, p_host, p_instance, t,
              t + p_ttl * interval '1 millisecond', p_ttl);
    o_acquired := ${ms("t")};
    o_expires := o_acquired + p_ttl;
    RETURN;
  ELSIF p_mode = 'exclusive' AND p_queue > 0 THEN
    -- A waiter keeps (or refreshes) its place; a lapsed one counts as absent: back to the tail.
    DELETE FROM ${q} q WHERE kind = p_kind AND name = p_name AND (expires_at <= t OR NOT ${sessionAlive("q")});
    INSERT INTO ${q} AS x (kind, name, owner, seq, expires_at, pid)
      VALUES (p_kind, p_name, p_owner, k.qseq + 1, t + p_queue * interval '1 millisecond', pg_backend_pid())
      ON CONFLICT (kind, name, owner) DO UPDATE SET expires_at = EXCLUDED.expires_at, pid = EXCLUDED.pid;
    UPDATE ${k} SET qseq = k.qseq + 1 WHERE kind = p_kind AND name = p_name;
  END IF;
  -- At the latest, retry when the earliest lease ends, or when the place of the queue's head
  -- (another waiter) would lapse: a waiter that crashed is noticed without a notification.
  IF head IS NOT NULL AND head <> p_owner THEN
    earliest := least(earliest, head_expires);
  END IF;
  IF earliest IS NOT NULL THEN
    o_retry := greatest(1, ${ms("earliest")} - ${ms("t")});
  END IF;
END
$fn$;
COMMENT ON FUNCTION ${fn}(${ACQUIRE_ARGS}) IS '${QUEUE_DDL_VERSION}'`,
    acquire: {
      name: "lockhost_shared_acquire",
      text: `SELECT o_fence, o_acquired, o_expires, o_retry, o_limit
        FROM ${fn}($1::text, $2::text, $3::text, $4::text, $5::int4, $6::int8, $7::int8, $8::text, $9::text, $10::text, $11::text)`,
    },
    renewMany: {
      name: "lockhost_shared_renew_many",
      text: `WITH t AS (SELECT ${clockNow} AS t),
        r AS (SELECT * FROM unnest($2::text[], $3::text[], $4::int8[]) WITH ORDINALITY AS r(name, owner, ttl, i)),
        u AS (
          UPDATE ${h} h SET expires_at = t.t + r.ttl * interval '1 millisecond', ttl_ms = r.ttl
          FROM r, t WHERE h.kind = $1::text AND h.name = r.name AND h.owner = r.owner AND h.expires_at > t.t
          RETURNING r.i, ${ms("h.expires_at")} AS expires
        )
        SELECT u.expires FROM r LEFT JOIN u ON u.i = r.i ORDER BY r.i`,
    },
    release: {
      name: "lockhost_shared_release",
      text: `WITH d AS (
          DELETE FROM ${h} WHERE kind = $1::text AND name = $2::text AND owner = $3::text
          RETURNING expires_at > ${clockNow} AS live
        )
        SELECT coalesce(bool_or(live), false), ${wake("count(*)", "$4", "$5", "$6::text", "$7::text")} FROM d`,
    },
    leaveQueue: {
      name: "lockhost_shared_leave_queue",
      text: `WITH d AS (DELETE FROM ${q} WHERE kind = $1::text AND name = $2::text AND owner = $3::text RETURNING 1)
        SELECT ${wake("count(*)", "$4", "$5", "$6::text", "$7::text")} FROM d`,
    },
    forceRelease: {
      name: "lockhost_shared_force_release",
      text: `WITH d AS (
          DELETE FROM ${h} WHERE kind = $1::text AND name = $2::text
          RETURNING owner, instance, expires_at > ${clockNow} AS live
        ),
        told AS (SELECT pg_notify($5::text, 'l:' || instance || ':' || owner) FROM d WHERE live)
        SELECT count(*) FILTER (WHERE live), (SELECT count(*) FROM told),
          ${wake("count(*)", "$3", "$4", "$5::text", "$6::text")} FROM d`,
    },
    status: {
      name: "lockhost_shared_status",
      text: `WITH t AS (SELECT ${clockNow} AS t)
        SELECT k.lim, ${queued("$1::text", "$2::text")}, ${holdersJson("$1::text", "$2::text")}
        FROM ${k} k, t WHERE k.kind = $1::text AND k.name = $2::text`,
    },
    list: {
      name: "lockhost_shared_list",
      text: `WITH t AS (SELECT ${clockNow} AS t),
        n AS (
          SELECT DISTINCT h.name FROM ${h} h, t
          WHERE h.kind = $1::text AND h.name LIKE $2::text ESCAPE '\\' AND ($3::text IS NULL OR h.name > $3::text)
            AND h.expires_at > t.t
          ORDER BY h.name LIMIT $4::int4
        )
        SELECT n.name, coalesce(k.lim, 0), ${queued("$1::text", "n.name")}, ${holdersJson("$1::text", "n.name")}
        FROM n CROSS JOIN t LEFT JOIN ${k} k ON k.kind = $1::text AND k.name = n.name
        ORDER BY n.name`,
    },
  };
}

/** The SQL that removes every shared object of `table` (tests' cleanup). */
export function dropQueueSql(table: string): string {
  const o = queueObjectsOf(table);
  return `DROP FUNCTION IF EXISTS ${quoteTable(o.acquire)}(${ACQUIRE_ARGS});
    DROP TABLE IF EXISTS ${[o.keys, o.fences, o.holders, o.queue].map(quoteTable).join(", ")}`;
}
