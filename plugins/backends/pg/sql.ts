// Every statement the pg backend sends, built once per backend for its tables. Each lock step
// is ONE statement (one round trip, one implicit transaction), named so that every session
// parses and plans it once.
//
// Who holds a lock is decided by the advisory lock alone. Two tables, keyed by advisory id
// (names whose ids collide share their rows, as they share their lock), hold what advisory
// locks cannot:
//
// - `<table>` (logged): per id, `reserved`, a fence bound earlier versions raised a block at a
//   time (FENCE_BLOCK), flushed, so their fences survived a crash. This version's fences follow
//   the clock, which a crash does not set back: it neither reads nor writes it.
// - `<table>_holders` (UNLOGGED): per id, the last published fence and holder: name, owner,
//   plugin, node, hostname, session pid, times, and `ttl_ms`, the TTL the current lease was set
//   with (acquire or the latest renew; NULL in rows an older version wrote).
//
// The acquire writes nothing (no transaction id, no tuple, no commit: a row write costs ~65 µs,
// more than the rest of the pair). Its fence is the server's clock in µs (clock_timestamp(),
// read after the advisory lock was granted, so after the previous holder's unlock), kept above
// the fence stored in the holders row and above the last fence this host handed out for the id. The holder row is written by a deferred step (publish), in one
// statement per session for every lock held past PUBLISH_AFTER_MS (lock-book.ts), and at once
// before anything else needs it on that session (renew, a local status or listing). Until
// then the lock is "unpublished": pg_locks shows its session (which holds this table's session
// mark, sessionMarkOf) holding the advisory lock with no current row, and status, listing,
// force-release and the by-owner steps wait for the row (published.ts). A published lock's
// release, lease end and unlock clear its row's owner in the same statement; an unpublished
// lock's release only unlocks.
//
// A holders row describes a holding only while its `owner` is set AND the session `pid` it
// names holds the advisory lock (pg_locks): a session that releases or ends (crash, network
// loss, pg_terminate_backend) frees its locks at once, whatever its row still says. Rows left
// with an owner by an ended session whose pid the server gave to a new one are cleared when
// that one connects (clearStale).
//
// Hosts of earlier versions (a rolling upgrade) compute a fence as the row's + 1 in a row
// write: a trigger on the holders table (clockFencesTrigger) raises what such a write stores
// to the clock in µs too, so fences of both versions keep rising; this version's sessions set
// `lockhost.clock_fences` and the trigger leaves their writes alone.
//
// Times are the server's: now() truncated to whole ms, so acquired/expires in ms since the
// epoch are integers and differ by exactly the TTL.
import { createHash } from "node:crypto";

/** Fences reserved per flushed write by the queue kinds (queue-sql.ts) and by earlier versions' mutexes. */
export const FENCE_BLOCK = 1024;

/** The setting this version's sessions carry, so the holders table's trigger leaves their writes alone. */
export const CLOCK_FENCES_SETTING = "lockhost.clock_fences";

/** The name of the holders table's trigger, and of its function (one per schema). */
const CLOCK_FENCES_TRIGGER = "lockhost_clock_fences";

/** A named statement: node-postgres prepares it on first use on each connection. */
export interface Statement {
  readonly name: string;
  readonly text: string;
}

/** The statements of one backend, for one configured table. */
export interface Statements {
  /**
   * [whether both tables exist, whether the holders table has every column this version
   * writes, whether it has the clock-fences trigger]: checked first, so a role without CREATE
   * can use tables made for it.
   */
  readonly tablesExist: { readonly text: string; readonly values: readonly string[] };
  /** Creates both tables and the holders table's trigger if missing (run one at a time). */
  readonly createTables: readonly string[];
  /** Adds to an existing holders table (made by an earlier version) the columns it lacks. */
  readonly addColumns: readonly string[];
  /** Puts the clock-fences trigger on a holders table an earlier version made (run one at a time). */
  readonly addTrigger: readonly string[];
  /**
   * Run once on each new session connection -> [pid]: sets CLOCK_FENCES_SETTING and takes the
   * table's session mark (sessionMarkOf) shared, which tells other hosts this session publishes lazily.
   */
  readonly hello: string;
  /**
   * $1 advisory id -> [the stored fence or 0, the server's clock in µs, null] when taken;
   * [null, clock µs, ms left of the holder row's lease or null] when contended. Writes nothing.
   */
  readonly acquire: Statement;
  /** Clears rows that name this session's pid (left by an ended session with that pid): run once per connection. */
  readonly clearStale: string;
  /**
   * Writes holder rows of locks this session holds, ids unique: $1 ids, $2 keys, $3 fences, $4
   * owners, $5 plugins, $6 nodes, $7 hostname, $8 acquired ms, $9 expires ms, $10 ttl ms -> [].
   */
  readonly publish: Statement;
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
   * An unpublished lock's release: $1 advisory id, $2 owner (unused), $3 released channel, $4
   * and $5 the key's wait lock (waitLockOf) -> [unlocked, unlocked, null]; notifies (payload:
   * the advisory id) when a waiter holds the wait lock.
   */
  readonly release: Statement;
  /**
   * A published lock's release, with release's arguments and $6 its fence -> [whether it was
   * still this owner's (not force-released), unlocked, null]: also clears the row's owner;
   * always unlocks.
   */
  readonly releasePublished: Statement;
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
  /** $1 advisory id, $2 owner -> [rows cleared, unlocked]: a published lock's bare unlock. */
  readonly unlockPublished: Statement;
  /**
   * $1 advisory id, $2 classid, $3 objid -> [whether a session with this table's session mark
   * holds the lock with no holders row naming it yet (an unpublished lock)].
   */
  readonly unpublished: Statement;
  /**
   * $1 advisory id, $2 key, $3 classid, $4 objid -> [true, owner, fence, plugin, node, hostname,
   * acquired ms, expires ms, remaining ms, ttl ms or null, value or null], or [false] when the
   * lock is held unpublished, or no row.
   */
  readonly status: Statement;
  /**
   * $1 advisory id, $2 key, $3 classid, $4 objid, $5 control channel -> [holder pid] or no row:
   * clears the live holding's owner and tells the holder (`pid:id:fence`) to unlock it itself.
   */
  readonly forceReleaseAsk: Statement;
  /** $1 pid -> [terminated]: ends a holder session that did not unlock when asked. */
  readonly terminate: Statement;
  /**
   * $1 LIKE pattern of the names, $2 the last name of the previous page or null, $3 limit ->
   * [true, key, then the status columns], live holdings only, in name order; then [false] if
   * any session with this table's session mark holds an unpublished lock.
   */
  readonly list: Statement;
  /**
   * $1 advisory id, $2 key, $3 value, $4 owner, $5 classid, $6 objid, $7 released channel -> a
   * row when the live holding is `owner`'s: its value is set and the key's watchers notified.
   */
  readonly proclaim: Statement;
  /** $1 classid, $2 objid, $3 pid -> [whether that pid still holds the lock]. */
  readonly heldBy: Statement;
}

/** The NOTIFY channels of one configured table. */
export interface Channels {
  /** Payload: the advisory id of a lock that was just unlocked (release, expiry, force-release). */
  readonly released: string;
  /** Payload `pid:id:fence`: the session `pid` must unlock `id` (released by owner from another host). */
  readonly control: string;
  /**
   * Read/write locks and semaphores (queue-sql.ts): payload `w:<id>`, the key of shared-key id
   * `id` may be free; `l:<instance>:<owner>`, the backend instance `instance` lost `owner`'s hold.
   */
  readonly shared: string;
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
    shared: withSuffix(base, "_shared", table),
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
const advisoryLockOfId = (id: string): string =>
  advisoryLock(`((${id} >> 32) & 4294967295)`, `(${id} & 4294967295)`);

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::int8`;
const serverNow = "date_trunc('milliseconds', now())";
/** The server's clock in µs since the epoch, read when evaluated (not at the statement's start). */
const clockUs = "(date_part('epoch', clock_timestamp()) * 1000000)::int8";
/** Whole ms from timestamptz `from` to `to` (SQL expressions). */
const msBetween = (to: string, from: string): string => `(date_part('epoch', ${to} - ${from}) * 1000)::int8`;
/** ms since the epoch (an int8 expression) as a timestamptz, exactly. */
const fromMs = (expr: string): string => `(timestamptz 'epoch' + ${expr} * interval '1 millisecond')`;

/**
 * The session mark of the configured `table`: an advisory lock in the two-int4 space (as
 * [classid, objid], unsigned) that every session of this version holds shared, so a lock held
 * by a marked session with no holders row naming it is known to be unpublished, not another
 * application's advisory lock.
 */
export function sessionMarkOf(table: string): readonly [number, number] {
  const digest = createHash("sha256").update(`\u0000lockhost-session\u0000${table}`, "utf8").digest();
  return [digest.readUInt32BE(0), digest.readUInt32BE(4)];
}

/** Whether session `pid` (an SQL expression) holds the session mark [c, o]. */
const marked = (pid: string, [c, o]: readonly [number, number]): string =>
  `EXISTS (SELECT FROM pg_locks m WHERE m.pid = ${pid} AND m.locktype = 'advisory' AND m.granted AND m.objsubid = 2` +
  ` AND m.classid = ${c}::oid AND m.objid = ${o}::oid AND m.database = (SELECT oid FROM pg_database WHERE datname = current_database()))`;

/** The int8 advisory id of pg_locks row `l` (objsubid 1). */
const idOfLock = (l: string): string => `((${l}.classid::int8 << 32) | ${l}.objid::int8)`;

/** Builds the statements for the configured `table` (`name` or `schema.name`). */
export function statementsFor(table: string): Statements {
  const t = quoteTable(table);
  const h = quoteTable(holdersTableOf(table));
  // One function per schema, whatever the table (its body names none): dropping a table
  // leaves no function of its own behind.
  const fn = quoteTable(table.slice(0, table.lastIndexOf(".") + 1) + CLOCK_FENCES_TRIGGER);
  const mark = sessionMarkOf(table);
  const clockFences = [
    // Earlier versions write fence = the row's + 1 (or `reserved` + 1): raised to the clock in
    // µs, as this version's acquire computes them. Their renewals do not set `fence` and do not
    // fire it; this version's sessions carry the setting.
    `CREATE OR REPLACE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
      BEGIN
        IF coalesce(current_setting('${CLOCK_FENCES_SETTING}', true), '') <> 'on' THEN
          NEW.fence := greatest(NEW.fence, ${clockUs});
        END IF;
        RETURN NEW;
      END $fn$`,
    `CREATE TRIGGER ${CLOCK_FENCES_TRIGGER} BEFORE INSERT OR UPDATE OF fence ON ${h} FOR EACH ROW EXECUTE FUNCTION ${fn}()`,
  ];
  return {
    tablesExist: {
      text: `SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL,
          (SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass($2) AND attname IN ('ttl_ms', 'value') AND NOT attisdropped) = 2,
          EXISTS (SELECT FROM pg_trigger WHERE tgrelid = to_regclass($2) AND tgname = '${CLOCK_FENCES_TRIGGER}')`,
      values: [t, h],
    },
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
      ...clockFences,
    ],
    // Nullable, as in CREATE: rows of an earlier version (still running elsewhere) have none.
    // `value`: a leader's proclamation (proclaim), NULL until it makes one.
    addColumns: [`ALTER TABLE ${h} ADD COLUMN IF NOT EXISTS ttl_ms bigint`, `ALTER TABLE ${h} ADD COLUMN IF NOT EXISTS value text`],
    addTrigger: clockFences,
    hello: `SELECT pg_backend_pid(), set_config('${CLOCK_FENCES_SETTING}', 'on', false),
      pg_try_advisory_lock_shared(${mark[0] | 0}, ${mark[1] | 0})`,
    // The advisory lock and what the fence is made of; nothing is written. The subquery `l`
    // (OFFSET 0 keeps it apart) runs first, once; the stored fence is read and the clock after
    // it (left to right), so the clock is read after the previous holder's unlock, and so after
    // its own clock read. The caller hands out max(clock µs, stored + 1, its last + 1). The
    // stored fence is a floor for a clock that stepped back; the statement's snapshot predates
    // the lock, so a row the previous holder published in the few µs between may be missed
    // (the clock, later than that fence's, covers that). When not taken, the holder row (maybe
    // a stale one) tells how long its lease has left, a hint for waiters only. Each read is a
    // subquery run only on its branch: one index lookup either way.
    // A session-level advisory lock survives the rollback of a failed statement: the caller
    // unlocks after any error.
    acquire: {
      name: "lockhost_acquire",
      text: `SELECT CASE WHEN l.got THEN coalesce((SELECT h.fence FROM ${h} h WHERE h.id = $1::int8), 0) END,
          ${clockUs},
          CASE WHEN NOT l.got THEN (SELECT ${msBetween("h.expires_at", "now()")} FROM ${h} h WHERE h.id = $1::int8 AND h.owner IS NOT NULL) END
        FROM (SELECT pg_try_advisory_lock($1::int8) AS got OFFSET 0) l`,
    },
    // Run on each new session connection: rows naming this session's pid with an owner are
    // left by an ended session whose pid the server gave to this one (a published lock's every
    // unlock clears its row, or its session is dropped). They would pass for this session's
    // holdings until published over: cleared. A scan of the table once per connection.
    clearStale: `UPDATE ${h} SET owner = NULL WHERE pid = pg_backend_pid() AND owner IS NOT NULL`,
    // Only the session holding a lock publishes it, and only while its host's bookkeeping says
    // held: its unlock goes out on the same connection after this, so the row is written while
    // the lock is held. The trigger leaves it alone (the session's setting).
    publish: {
      name: "lockhost_publish",
      text: `INSERT INTO ${h} AS h (id, key, fence, reserved, owner, plugin, node, hostname, pid, acquired_at, expires_at, ttl_ms)
        SELECT q.id, q.key, q.fence, q.fence, q.owner, q.plugin, q.node, $7::text, pg_backend_pid(),
          ${fromMs("q.acquired")}, ${fromMs("q.expires")}, q.ttl
        FROM unnest($1::int8[], $2::text[], $3::int8[], $4::text[], $5::text[], $6::text[], $8::int8[], $9::int8[], $10::int8[])
          AS q(id, key, fence, owner, plugin, node, acquired, expires, ttl)
        ON CONFLICT (id) DO UPDATE SET key = EXCLUDED.key, fence = EXCLUDED.fence, reserved = EXCLUDED.reserved,
          owner = EXCLUDED.owner, plugin = EXCLUDED.plugin, node = EXCLUDED.node, hostname = EXCLUDED.hostname,
          pid = EXCLUDED.pid, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at,
          ttl_ms = EXCLUDED.ttl_ms, value = NULL`,
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
    // A published lease's end (an unpublished one cannot have been renewed elsewhere: that
    // waits for its row). Another host may have renewed the lease by owner (restore): then the
    // row says a later expiry than the holder last knew, and the lease goes on. Otherwise the
    // row's owner is cleared and the lock unlocked.
    expire: {
      name: "lockhost_expire",
      text: `WITH r AS (
          SELECT ${ms("expires_at")} - ${ms(serverNow)} AS remaining, ${ms("expires_at")} AS expires FROM ${h}
          WHERE id = $1::int8 AND key = $2 AND owner = $3 AND pid = pg_backend_pid()
            AND ${ms("expires_at")} > $4::int8 AND expires_at > now()
        ),
        c AS (
          UPDATE ${h} SET owner = NULL
          WHERE id = $1::int8 AND owner = $3 AND pid = pg_backend_pid() AND NOT EXISTS (SELECT FROM r)
          RETURNING 1
        )
        SELECT (SELECT remaining FROM r), (SELECT expires FROM r),
          CASE WHEN NOT EXISTS (SELECT FROM r) THEN (SELECT count(*) FROM c) >= 0 AND pg_advisory_unlock($1::int8) END`,
    },
    notify: { name: "lockhost_notify", text: "SELECT pg_notify($1, $2)" },
    // The NOTIFY for the key's waiters goes in the same statement (one round trip, one
    // transaction), and only when someone waits: a NOTIFY costs more than the rest of the
    // release (~40 µs measured: a global lock at commit, and a wake-up of every listener).
    // Waiters register by holding the key's wait lock shared (waitOn); failing to take it
    // exclusive here tells that one does. The unlock runs first (OFFSET 0 keeps the subquery
    // apart): a waiter that registers after the check retries after the unlock and finds the
    // lock free. PostgreSQL delivers the NOTIFY at commit, after the unlock.
    // An unpublished lock's release reads and writes no row: the caller's bookkeeping says this
    // session holds the advisory lock, and nobody can have force-released it (that waits for
    // its row). The wait-lock check needs a lock table entry for an instant: with the server's
    // lock table full it fails after the unlock ran, and the bare unlock the caller then sends
    // confirms the release.
    release: {
      name: "lockhost_release",
      text: `SELECT u.unlocked, u.unlocked,
          CASE WHEN pg_try_advisory_xact_lock($4::int4, $5::int4) THEN NULL ELSE pg_notify($3, $1::int8::text) END
        FROM (SELECT pg_advisory_unlock($1::int8) AS unlocked, $2::text OFFSET 0) u`,
    },
    // A published lock: its row's owner is cleared first, so the row never outlives the holding
    // it describes. Its row with its fence no longer naming this owner was force-released; no
    // row with its fence means its publish failed (and it was not force-released: that waits
    // for the row), so the lock was ours.
    releasePublished: {
      name: "lockhost_release_published",
      text: `WITH c AS (UPDATE ${h} SET owner = NULL WHERE id = $1::int8 AND owner = $2 AND pid = pg_backend_pid() RETURNING 1)
        SELECT u.ours, u.unlocked,
          CASE WHEN pg_try_advisory_xact_lock($4::int4, $5::int4) THEN NULL ELSE pg_notify($3, $1::int8::text) END
        FROM (SELECT EXISTS (SELECT FROM c) OR NOT EXISTS (SELECT FROM ${h} WHERE id = $1::int8 AND fence = $6::int8) AS ours,
          pg_advisory_unlock($1::int8) AS unlocked OFFSET 0) u`,
    },
    waitOn: {
      name: "lockhost_wait_on",
      text: "SELECT k1, k2, pg_try_advisory_lock_shared(k1, k2) FROM unnest($1::int4[], $2::int4[]) AS w(k1, k2)",
    },
    waitOff: { name: "lockhost_wait_off", text: "SELECT pg_advisory_unlock_shared($1::int4, $2::int4)" },
    unlock: { name: "lockhost_unlock", text: "SELECT pg_advisory_unlock($1::int8)" },
    unlockPublished: {
      name: "lockhost_unlock_published",
      text: `WITH c AS (UPDATE ${h} SET owner = NULL WHERE id = $1::int8 AND owner = $2 AND pid = pg_backend_pid() RETURNING 1)
        SELECT (SELECT count(*) FROM c), pg_advisory_unlock($1::int8)`,
    },
    unpublished: {
      name: "lockhost_unpublished",
      text: `SELECT EXISTS (SELECT FROM pg_locks l WHERE ${advisoryLock("$2", "$3")} AND ${marked("l.pid", mark)}
          AND NOT EXISTS (SELECT FROM ${h} h WHERE h.id = $1::int8 AND h.owner IS NOT NULL AND h.pid = l.pid))`,
    },
    // A live published holding of this name, or else [false] when a marked session holds the
    // lock with no row naming it (unpublished: the caller waits for its row). A row for a
    // colliding name names the holding session: then neither.
    status: {
      name: "lockhost_status",
      text: `WITH holder AS MATERIALIZED (SELECT l.pid FROM pg_locks l WHERE ${advisoryLock("$3", "$4")})
        SELECT true, owner, fence, plugin, node, hostname, ${ms("acquired_at")}, ${ms("expires_at")},
          greatest(0, ${ms("expires_at")} - ${ms(serverNow)}), ttl_ms, value
        FROM ${h} h
        WHERE id = $1::int8 AND key = $2 AND owner IS NOT NULL AND h.pid IN (SELECT pid FROM holder)
        UNION ALL
        SELECT false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM holder x
        WHERE ${marked("x.pid", mark)}
          AND NOT EXISTS (SELECT FROM ${h} h WHERE h.id = $1::int8 AND h.owner IS NOT NULL AND h.pid = x.pid)`,
    },
    list: {
      name: "lockhost_list",
      text: `(SELECT true, h.key, owner, fence, plugin, node, hostname, ${ms("acquired_at")}, ${ms("expires_at")},
          greatest(0, ${ms("expires_at")} - ${ms(serverNow)}), ttl_ms, value
        FROM ${h} h
        WHERE h.owner IS NOT NULL AND h.key LIKE $1 ESCAPE '\\' AND ($2::text IS NULL OR h.key > $2::text)
          AND EXISTS (SELECT FROM pg_locks l WHERE l.pid = h.pid AND ${advisoryLockOfId("h.id")})
        ORDER BY h.key
        LIMIT $3::int4)
        UNION ALL
        SELECT false, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL
        WHERE EXISTS (SELECT FROM pg_locks l
          WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
            AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            AND ${marked("l.pid", mark)}
            AND NOT EXISTS (SELECT FROM ${h} h WHERE h.id = ${idOfLock("l")} AND h.owner IS NOT NULL AND h.pid = l.pid))`,
    },
    forceReleaseAsk: {
      name: "lockhost_force_release_ask",
      text: `WITH u AS (
          UPDATE ${h} SET owner = NULL
          WHERE id = $1::int8 AND key = $2 AND owner IS NOT NULL
            AND pid IN (SELECT l.pid FROM pg_locks l WHERE ${advisoryLock("$3", "$4")})
          RETURNING pid, fence
        )
        SELECT pid, pg_notify($5, pid || ':' || $1::int8 || ':' || fence) FROM u`,
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
      text: `SELECT EXISTS (SELECT FROM pg_locks l WHERE l.pid = $3::int4 AND ${advisoryLock("$1", "$2")})`,
    },
  };
}
