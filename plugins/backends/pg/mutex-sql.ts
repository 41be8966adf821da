// Every statement of the pg backend's mutex (mutex.ts) and of its sessions and LISTEN connection
// (client.ts, watch.ts), built once per backend for its tables; the queue kinds' are in
// queue-sql.ts. Each lock step is ONE statement (one round trip, one implicit transaction),
// named so that every session parses and plans it once.
//
// Who holds a lock is decided by the advisory lock alone. Two tables, keyed by advisory id
// (names whose ids collide share their rows, as they share their lock), hold what advisory
// locks cannot:
//
// - `<table>` (logged): per id, `reserved`, a bound no fence ever handed out exceeds. It is
//   raised a block at a time (FENCE_BLOCK), by a commit that is flushed to disk before the
//   fence that needed it is handed out; so it survives any crash the server survives.
// - `<table>_holders` (UNLOGGED): per id, the last fence handed out (and a copy of
//   `reserved`) and the last holder: name, owner, plugin, node, hostname, session pid, times,
//   and `ttl_ms`, the TTL the current lease was set with (acquire or the latest renew; NULL in
//   rows an older version wrote, whose tables get the column from `addColumns`).
//   Written on acquire and renew without flushing the WAL (an unlogged write needs no WAL);
//   release only reads it. PostgreSQL empties unlogged tables after a crash, when every
//   session and advisory lock is gone too; the next acquire then starts a new block above
//   `reserved`, so fences never repeat, nor go back. So acquire is one round trip, and two
//   (plus a flush) on a name's first acquisition, every FENCE_BLOCK-th, and after a crash.
//
// A holders row describes a holding only while its `owner` is set AND the session `pid` it
// names holds the advisory lock (pg_locks): a session that releases or ends (crash, network
// loss, pg_terminate_backend) frees its locks at once, whatever its row still says. A row is
// overwritten by the next acquisition of its id, so it can never describe an older holding
// of a lock its pid took again, even for a colliding name (`key` is compared too).
//
// Times are the server's: now() truncated to whole ms, so acquired/expires in ms since the
// epoch are integers and differ by exactly the TTL.
import { createHash } from "node:crypto";

/** Fences reserved per flushed write: a crash makes a name's fences jump by up to this much. */
export const FENCE_BLOCK = 1024;

/** A named statement: node-postgres prepares it on first use on each connection. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** The statements of one backend, for one configured table. */
export interface Statements {
  /**
   * [whether both tables exist, whether the holders table has every column this version
   * writes, whether the holders table is logged]: checked first, so a role without CREATE can
   * use tables made for it.
   */
  readonly tablesExist: { readonly text: string; readonly values: readonly string[] };
  /**
   * [the privileges the role lacks on the two tables ("UPDATE on ..., SELECT on ..."), or null
   * when it has them all]: read when the tables exist (docs/backends.md, "Least-privilege grants").
   */
  readonly privilegesMissing: { readonly text: string; readonly values: readonly string[] };
  /** The holders table's name, quoted (for messages that name it). */
  readonly holdersTable: string;
  /** Creates both tables if missing (two statements, run one at a time). */
  readonly createTables: readonly string[];
  /** Adds to an existing holders table (made by an earlier version) the columns it lacks. */
  readonly addColumns: readonly string[];
  /**
   * $1 advisory id, $2 key, $3 owner, $4 plugin, $5 node, $6 hostname, $7 ttl ms ->
   * [fence, reserved, acquired ms, expires ms, null] when taken; [null x 4, ms left of the
   * holder row's lease] when contended and the row is there; else no row.
   */
  readonly acquire: Statement;
  /** $1 advisory id, $2 fence just taken -> [the fence to hand out]; only while holding the lock. */
  readonly reserve: Statement;
  /**
   * A handoff on the holding session (MutexStore.handoff): $1 advisory id, $2 key, $3 owner,
   * $4 next owner, $5 plugin, $6 node, $7 hostname, $8 ttl ms -> [fence, reserved, acquired ms,
   * expires ms] when the row still named `owner` on this session (it is the next owner's now),
   * else no row.
   */
  readonly handoff: Statement;
  /** $1 advisory id, $2 key, $3 owner, $4 ttl ms -> [expires ms] or no row. */
  readonly renew: Statement;
  /**
   * Many renewals at once, ids unique: $1 ids, $2 keys, $3 owners, $4 ttl ms, $5 whether this
   * session holds the lock (else: any live session may) -> per request in order [expires ms
   * or null, whether a live holder has another owner (asked only of the others)].
   */
  readonly renewMany: Statement;
  /**
   * Release by owner of a lock another session holds: $1 advisory id, $2 key, $3 owner, $4
   * control channel -> ["released" | "mismatch" | "not_found"]. Clears the row's owner and
   * tells the holder (control channel, payload `pid:id:fence`) to unlock.
   */
  readonly releaseRemote: Statement;
  /**
   * The end of a lease at its host deadline: $1 advisory id, $2 key, $3 owner, $4 expires ms
   * known to the holder -> [ms left, expires ms, null] when another host renewed it meanwhile
   * (kept), else [null, null, unlocked].
   */
  readonly expire: Statement;
  /** $1 channel, $2 payload -> [] (pg_notify: delivered when the statement commits). */
  readonly notify: Statement;
  /**
   * $1 advisory id, $2 owner, $3 released channel, $4 and $5 the key's wait lock (waitLockOf)
   * -> [whether the row still named this owner, unlocked, null]; always unlocks, and notifies
   * (payload: the advisory id) when a waiter holds the wait lock.
   */
  readonly release: Statement;
  /**
   * $1, $2: int4 arrays, wait locks (waitLockOf) -> [k1, k2, taken] per lock: a waiter's
   * registration, held shared by the LISTEN connection while the key is watched. A waiter that
   * dies takes its registration with its session: nothing to expire.
   */
  readonly waitOn: Statement;
  /** $1, $2 a wait lock -> [released]: the key's last watcher left. */
  readonly waitOff: Statement;
  /** $1 advisory id -> [unlocked]. */
  readonly unlock: Statement;
  /**
   * $1 advisory id, $2 key, $3 classid, $4 objid -> [owner, fence, plugin, node, hostname,
   * acquired ms, expires ms, remaining ms, ttl ms or null, value or null] or no row.
   */
  readonly status: Statement;
  /**
   * $1 int8[] advisory ids -> [id as text, owner or null, fence] per holders row: what the rows
   * say of the locks a session holds (a holder that was not listening checks it missed nothing).
   */
  readonly heldRows: Statement;
  /**
   * $1 advisory id, $2 key, $3 classid, $4 objid, $5 control channel -> [holder pid, fence] or no row:
   * clears the live holding's owner and tells the holder (`pid:id:fence`) to unlock it itself.
   */
  readonly forceReleaseAsk: Statement;
  /** $1 pid -> [terminated]: ends a holder session that did not unlock when asked. */
  readonly terminate: Statement;
  /**
   * $1 LIKE pattern of the names, $2 the last name of the previous page or null, $3 limit ->
   * [key, then the status columns], live holdings only, in name order.
   */
  readonly list: Statement;
  /**
   * $1 advisory id, $2 key, $3 value, $4 owner, $5 classid, $6 objid, $7 released channel -> a
   * row when the live holding is `owner`'s: its value is set and the key's watchers notified.
   */
  readonly proclaim: Statement;
  /**
   * $1 classid, $2 objid, $3 pid, $4 advisory id, $5 fence -> [whether that pid still holds
   * the lock as the holding with that fence]: a session that unlocked and took the lock again
   * (for another caller of its host) holds a later fence, and is not the holding asked about.
   */
  readonly heldBy: Statement;
}

/** The NOTIFY channels of one configured table. */
export interface Channels {
  /** Payload: the advisory id of a lock that was just unlocked (release, expiry, force-release). */
  readonly released: string;
  /** Payload `pid:id:fence`: the session `pid` must unlock `id` (released by owner from another host). */
  readonly control: string;
  /**
   * The queue kinds (queue-sql.ts): payload `w:<id>`, the key of queue id
   * `id` may be free; `l:<instance>:<owner>`, the backend instance `instance` lost `owner`'s hold.
   */
  readonly queue: string;
}

/** PostgreSQL's identifier limit (NAMEDATALEN - 1). */
const MAX_IDENTIFIER = 63;
const HOLDERS_SUFFIX = "_holders";

/**
 * The holders table's name for the configured `table` (`name` or `schema.name`): `<name>_holders`
 * in the same schema; a name too long for the suffix is cut and marked with a hash of the
 * whole name, so two configured tables never share a holders table.
 */
export function holdersTableOf(table: string): string {
  const dot = table.lastIndexOf(".");
  const schema = table.slice(0, dot + 1);
  const name = table.slice(dot + 1);
  return schema + withSuffix(name, HOLDERS_SUFFIX, name);
}

/**
 * The NOTIFY channels of the configured `table`: `<schema>_<name>_released`, `..._control` and `..._shared`
 * (lowercase letters, digits and `_` only; cut and marked with a hash past 63 characters), so
 * hosts sharing a table share channels and other tables' traffic never reaches them.
 */
export function channelsOf(table: string): Channels {
  const base = table.toLowerCase().replace(/[^a-z0-9_]/g, "_");
  return {
    released: withSuffix(base, "_released", table),
    control: withSuffix(base, "_control", table),
    queue: withSuffix(base, "_shared", table),
  };
}

/** `base` + `suffix`, or past MAX_IDENTIFIER, `base` cut and marked with a hash of `whole` (so cut names stay apart). */
function withSuffix(base: string, suffix: string, whole: string): string {
  if (base.length + suffix.length <= MAX_IDENTIFIER) return `${base}${suffix}`;
  const hash = createHash("sha256").update(whole).digest("hex").slice(0, 8);
  return `${base.slice(0, MAX_IDENTIFIER - suffix.length - 9)}_${hash}${suffix}`;
}

/** `name` or `schema.name` (already validated as lowercase identifiers), quoted. */
export function quoteTable(table: string): string {
  return table
    .split(".")
    .map((part) => `"${part.replace(/"/g, '""')}"`)
    .join(".");
}

/** The advisory lock with classid `c`, objid `o` in this database, granted (int8 keys have objsubid 1). */
const advisoryLock = (c: string, o: string): string =>
  `l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.classid = ${c}::oid AND l.objid = ${o}::oid` +
  ` AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())`;

/** The same, for an int8 advisory id in column `id`. */
const advisoryLockOfId = (id: string): string => advisoryLock(`((${id} >> 32) & 4294967295)`, `(${id} & 4294967295)`);

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::int8`;
const serverNow = "date_trunc('milliseconds', now())";

/** Builds the statements for the configured `table` (`name` or `schema.name`). */
export function statementsFor(table: string): Statements {
  const t = quoteTable(table);
  const h = quoteTable(holdersTableOf(table));
  return {
    tablesExist: {
      text: `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL,
          (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($2) AND attname IN ('ttl_ms', 'value') AND NOT attisdropped) = 2,
          coalesce((SELECT relpersistence = 'p' FROM pg_class WHERE oid = to_regclass($2)), false)`,
      values: [t, h],
    },
    privilegesMissing: {
      // One privilege per call: has_table_privilege with a list answers whether any is held.
      text: `SELECT string_agg(p || ' on ' || t, ', ' ORDER BY o)
        FROM (VALUES ($1, 'SELECT', 1), ($1, 'INSERT', 2), ($1, 'UPDATE', 3), ($2, 'SELECT', 4), ($2, 'INSERT', 5), ($2, 'UPDATE', 6)) AS v(t, p, o)
        WHERE NOT has_table_privilege(t, p)`,
      values: [t, h],
    },
    holdersTable: h,
    createTables: [
      `CREATE TABLE IF NOT EXISTS ${t} (id bigint PRIMARY KEY, reserved bigint NOT NULL)`,
      `CREATE UNLOGGED TABLE IF NOT EXISTS ${h} (
        id bigint PRIMARY KEY,
        key text NOT NULL,
        fence bigint NOT NULL,
        reserved bigint NOT NULL,
        owner text,
        plugin text NOT NULL,
        node text NOT NULL,
        hostname text NOT NULL,
        pid integer NOT NULL,
        acquired_at timestamptz NOT NULL,
        expires_at timestamptz NOT NULL,
        ttl_ms bigint,
        value text
      )`,
    ],
    // Nullable, as in CREATE: rows of an earlier version (still running elsewhere) have none.
    // `value`: a leader's proclamation (proclaim), NULL until it makes one.
    addColumns: [`ALTER TABLE ${h} ADD COLUMN IF NOT EXISTS ttl_ms bigint`, `ALTER TABLE ${h} ADD COLUMN IF NOT EXISTS value text`],
    // The advisory lock, the next fence and the holder in one statement. `l` is volatile, so
    // it runs exactly once, and nothing is written unless it got the lock. When it did not,
    // the holder row (maybe an older version: see below) tells how long its lease has left,
    // a hint for waiters only.
    // CAREFUL: the statement's snapshot is taken before pg_try_advisory_lock runs, so a plain
    // read here may miss what the previous holder committed in between. The fence therefore
    // comes from ON CONFLICT DO UPDATE, which works on the latest row version: last fence + 1.
    // With no holders row at all (a new id, or emptied by a crash) the row starts at fence 1
    // with `reserved` 0, past its block, so the caller runs `reserve`, which takes the fence
    // from the logged `<table>` (above every fence handed out) before it goes out. So the
    // usual acquisition reads only the holders row: the fence table is read once per block.
    // (Earlier versions read `<table>.reserved` in every acquisition for that first row; they
    // share tables with this one safely: a row either writes is past its block or within one
    // that `reserve` made.) When the fence passes the row's copy of `reserved`, the caller
    // runs `reserve` before handing the fence out.
    // A session-level advisory lock survives the rollback of a failed statement: the caller
    // unlocks after any error.
    acquire: {
      name: "lockhost_acquire",
      text: `WITH l AS (SELECT pg_try_advisory_lock($1::int8) AS got),
        i AS (
          INSERT INTO ${h} AS h (id, key, fence, reserved, owner, plugin, node, hostname, pid, acquired_at, expires_at, ttl_ms)
          SELECT $1::int8, $2::text, 1, 0, $3::text, $4::text, $5::text, $6::text, pg_backend_pid(),
                 ${serverNow}, ${serverNow} + $7::int8 * interval '1 millisecond', $7::int8
          FROM l WHERE l.got
          ON CONFLICT (id) DO UPDATE SET fence = h.fence + 1, key = EXCLUDED.key, owner = EXCLUDED.owner,
            plugin = EXCLUDED.plugin, node = EXCLUDED.node, hostname = EXCLUDED.hostname, pid = EXCLUDED.pid,
            acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at, ttl_ms = EXCLUDED.ttl_ms, value = NULL
          RETURNING fence, reserved, ${ms("acquired_at")} AS acquired, ${ms("expires_at")} AS expires
        )
        SELECT fence, reserved, acquired, expires, NULL::int8 FROM i
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, ${ms("h.expires_at")} - ${ms(serverNow)}
        FROM l, ${h} h WHERE NOT l.got AND h.id = $1::int8 AND h.owner IS NOT NULL`,
    },
    // Reserves the next block for a fence the acquire just took past `reserved`, while the
    // lock is held (so this statement's snapshot already sees every earlier holder's commits),
    // and flushes it to disk (also on a server with synchronous_commit = off) before the fence
    // is handed out. The fence is raised above `reserved` if it was not already.
    reserve: {
      name: "lockhost_reserve",
      text: `WITH cur AS (
          SELECT greatest($2::int8, coalesce((SELECT reserved FROM ${t} WHERE id = $1::int8), 0) + 1) AS fence
        ),
        f AS (
          INSERT INTO ${t} AS f (id, reserved)
          SELECT $1::int8, cur.fence + ${FENCE_BLOCK - 1} FROM cur
          WHERE current_setting('synchronous_commit') <> 'off' OR set_config('synchronous_commit', 'on', true) = 'on'
          ON CONFLICT (id) DO UPDATE SET reserved = greatest(f.reserved, EXCLUDED.reserved)
          RETURNING reserved
        )
        UPDATE ${h} h SET fence = cur.fence, reserved = f.reserved FROM cur, f WHERE h.id = $1::int8
        RETURNING h.fence`,
    },
    // A handoff keeps the session's advisory lock (the key is never free) and moves the holder
    // row to the next owner with the next fence. Only while the row names the owner on this
    // session: a force-release clears the owner first, and then nothing is handed over.
    handoff: {
      name: "lockhost_handoff",
      text: `UPDATE ${h} SET fence = fence + 1, owner = $4::text, plugin = $5::text, node = $6::text, hostname = $7::text,
          acquired_at = ${serverNow}, expires_at = ${serverNow} + $8::int8 * interval '1 millisecond', ttl_ms = $8::int8, value = NULL
        WHERE id = $1::int8 AND key = $2 AND owner = $3 AND pid = pg_backend_pid()
        RETURNING fence, reserved, ${ms("acquired_at")}, ${ms("expires_at")}`,
    },
    // Runs on the holding session, so an answer proves the session (and with it the advisory
    // lock) alive: a session loses an advisory lock only by unlocking it, which the caller's
    // bookkeeping tracks, or by ending. The row must still name this owner and session:
    // after a force-release it does not. (pg_locks is not consulted: reading it copies the
    // server's whole lock table, which would make each renew cost O(locks on the server).)
    renew: {
      name: "lockhost_renew",
      text: `UPDATE ${h} SET expires_at = ${serverNow} + $4::int8 * interval '1 millisecond', ttl_ms = $4::int8
        WHERE id = $1::int8 AND key = $2 AND owner = $3 AND pid = pg_backend_pid()
        RETURNING ${ms("expires_at")}`,
    },
    // Local renewals check the session as `renew` does; the others check that the row's
    // session is alive and holds the lock (pg_locks: read only when such a request is there).
    // Ids are unique per statement: UPDATE ... FROM updates a row once, whatever joins it.
    renewMany: {
      name: "lockhost_renew_many",
      text: `WITH q AS (
          SELECT * FROM unnest($1::int8[], $2::text[], $3::text[], $4::int8[], $5::bool[])
            WITH ORDINALITY AS q(id, key, owner, ttl, here, i)
        ),
        u AS (
          UPDATE ${h} h SET expires_at = ${serverNow} + q.ttl * interval '1 millisecond', ttl_ms = q.ttl
          FROM q
          WHERE h.id = q.id AND h.key = q.key AND h.owner = q.owner
            AND CASE WHEN q.here THEN h.pid = pg_backend_pid()
                ELSE EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLockOfId("q.id")}) END
          RETURNING q.i, ${ms("h.expires_at")} AS expires
        )
        SELECT u.expires,
          CASE WHEN q.here OR u.i IS NOT NULL THEN false
            ELSE EXISTS (SELECT FROM ${h} x WHERE x.id = q.id AND x.key = q.key AND x.owner <> q.owner
              AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = x.pid AND ${advisoryLockOfId("q.id")})) END
        FROM q LEFT JOIN u ON u.i = q.i
        ORDER BY q.i`,
    },
    // Another session holds the lock: only it can unlock it, so the row's owner is cleared
    // (the lease has ended for every reader: status, renew, release) and the holder is told.
    releaseRemote: {
      name: "lockhost_release_remote",
      text: `WITH cur AS (
          SELECT h.owner FROM ${h} h
          WHERE h.id = $1::int8 AND h.key = $2 AND h.owner IS NOT NULL
            AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLockOfId("$1::int8")})
        ),
        u AS (
          UPDATE ${h} h SET owner = NULL
          WHERE h.id = $1::int8 AND h.key = $2 AND h.owner = $3 AND EXISTS (SELECT FROM cur WHERE cur.owner = $3)
          RETURNING h.pid, h.fence
        )
        SELECT CASE WHEN EXISTS (SELECT FROM u) THEN 'released' WHEN EXISTS (SELECT FROM cur) THEN 'mismatch' ELSE 'not_found' END,
          (SELECT pg_notify($4, u.pid || ':' || $1::int8 || ':' || u.fence) FROM u)`,
    },
    // Another host may have renewed the lease by owner (restore): then the row says a later
    // expiry than the holder last knew, and the lease goes on. Only reads, as release does.
    expire: {
      name: "lockhost_expire",
      text: `WITH r AS (
          SELECT ${ms("expires_at")} - ${ms(serverNow)} AS remaining, ${ms("expires_at")} AS expires FROM ${h}
          WHERE id = $1::int8 AND key = $2 AND owner = $3 AND pid = pg_backend_pid()
            AND ${ms("expires_at")} > $4::int8 AND expires_at > now()
        )
        SELECT (SELECT remaining FROM r), (SELECT expires FROM r), CASE WHEN NOT EXISTS (SELECT FROM r) THEN pg_advisory_unlock($1::int8) END`,
    },
    notify: { name: "lockhost_notify", text: "SELECT pg_notify($1, $2)" },
    // The NOTIFY for the key's waiters goes in the same statement (one round trip, one
    // transaction), and only when someone waits: a NOTIFY costs more than the rest of the
    // release (~40 µs measured: a global lock at commit, and a wake-up of every listener).
    // Waiters register by holding the key's wait lock shared (waitOn); failing to take it
    // exclusive here tells that one does. The unlock runs first (OFFSET 0 keeps the subquery
    // apart): a waiter that registers after the check retries after the unlock and finds the
    // lock free. PostgreSQL delivers the NOTIFY at commit, after the unlock.
    // Otherwise it only reads (no transaction id) and always unlocks: the caller's bookkeeping
    // says this session holds the advisory lock. A row no longer naming this owner was
    // force-released. The wait-lock check needs a lock table entry for an instant: with the
    // server's lock table full it fails after the unlock ran, and the bare unlock the caller
    // then sends confirms the release.
    release: {
      name: "lockhost_release",
      text: `SELECT u.ours, u.unlocked,
          CASE WHEN pg_try_advisory_xact_lock($4::int4, $5::int4) THEN NULL ELSE pg_notify($3, $1::int8::text) END
        FROM (SELECT EXISTS (SELECT FROM ${h} WHERE id = $1::int8 AND owner = $2 AND pid = pg_backend_pid()) AS ours,
          pg_advisory_unlock($1::int8) AS unlocked OFFSET 0) u`,
    },
    waitOn: {
      name: "lockhost_wait_on",
      text: "SELECT k1, k2, pg_try_advisory_lock_shared(k1, k2) FROM unnest($1::int4[], $2::int4[]) AS w(k1, k2)",
    },
    waitOff: { name: "lockhost_wait_off", text: "SELECT pg_advisory_unlock_shared($1::int4, $2::int4)" },
    unlock: { name: "lockhost_unlock", text: "SELECT pg_advisory_unlock($1::int8)" },
    heldRows: { name: "lockhost_held_rows", text: `SELECT id::text, owner, fence FROM ${h} WHERE id = ANY($1::int8[])` },
    status: {
      name: "lockhost_status",
      text: `SELECT owner, fence, plugin, node, hostname, ${ms("acquired_at")}, ${ms("expires_at")},
          greatest(0, ${ms("expires_at")} - ${ms(serverNow)}), ttl_ms, value
        FROM ${h} h
        WHERE id = $1::int8 AND key = $2 AND owner IS NOT NULL
          AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLock("$3", "$4")})`,
    },
    list: {
      name: "lockhost_list",
      text: `SELECT h.key, owner, fence, plugin, node, hostname, ${ms("acquired_at")}, ${ms("expires_at")},
          greatest(0, ${ms("expires_at")} - ${ms(serverNow)}), ttl_ms, value
        FROM ${h} h
        WHERE h.owner IS NOT NULL AND h.key LIKE $1 ESCAPE '\\' AND ($2::text IS NULL OR h.key > $2::text)
          AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLockOfId("h.id")})
        ORDER BY h.key
        LIMIT $3::int4`,
    },
    forceReleaseAsk: {
      name: "lockhost_force_release_ask",
      text: `WITH u AS (
          UPDATE ${h} SET owner = NULL
          WHERE id = $1::int8 AND key = $2 AND owner IS NOT NULL
            AND pid IN (SELECT l.pid FROM pg_locks l WHERE ${advisoryLock("$3", "$4")})
          RETURNING pid, fence
        )
        SELECT pid, fence, pg_notify($5, pid || ':' || $1::int8 || ':' || fence) FROM u`,
    },
    terminate: {
      name: "lockhost_terminate",
      text: "SELECT CASE WHEN $1::int4 = pg_backend_pid() THEN false ELSE pg_terminate_backend($1::int4) END",
    },
    // Leader election: the value goes into the live holding's row only while `owner` holds it,
    // and the key's waiters and observers hear of it on the released channel (payload: the id,
    // as a release sends), so they re-read the row: a new leader or a new value.
    proclaim: {
      name: "lockhost_proclaim",
      text: `WITH u AS (
          UPDATE ${h} h SET value = $3::text
          WHERE h.id = $1::int8 AND h.key = $2 AND h.owner = $4
            AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLock("$5", "$6")})
          RETURNING h.id
        )
        SELECT pg_notify($7, $1::int8::text) FROM u`,
    },
    heldBy: {
      name: "lockhost_held_by",
      text: `SELECT EXISTS (SELECT FROM pg_locks l WHERE l.pid = $3::int4 AND ${advisoryLock("$1", "$2")})
        AND EXISTS (SELECT FROM ${h} WHERE id = $4::int8 AND fence = $5::int8)`,
    },
  };
}
