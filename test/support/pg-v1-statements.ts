// The PostgreSQL backend's mutex statements as the previous version (3da4d9f) sent them, the
// text as it was, for the rolling-upgrade tests: an earlier host acquiring (and reserving, and
// releasing) on the tables this version shares with it.
import { holdersTableOf, quoteTable } from "../../plugins/backends/pg/sql.js";

const ms = (column: string): string => `(extract(epoch FROM ${column}) * 1000)::int8`;
const serverNow = "date_trunc('milliseconds', now())";
const FENCE_BLOCK = 1024;

/** The earlier version's acquire, reserve and release texts for `table`. */
export function v1Statements(table: string): { readonly acquire: string; readonly reserve: string; readonly release: string } {
  const t = quoteTable(table);
  const h = quoteTable(holdersTableOf(table));
  return {
    // $1 advisory id, $2 key, $3 owner, $4 plugin, $5 node, $6 hostname, $7 ttl ms.
    acquire: `WITH l AS (SELECT pg_try_advisory_lock($1::int8) AS got),
        r AS (SELECT coalesce((SELECT reserved FROM ${t} WHERE id = $1::int8), 0) AS reserved),
        i AS (
          INSERT INTO ${h} AS h (id, key, fence, reserved, owner, plugin, node, hostname, pid, acquired_at, expires_at, ttl_ms)
          SELECT $1::int8, $2::text, r.reserved + 1, r.reserved, $3::text, $4::text, $5::text, $6::text, pg_backend_pid(),
                 ${serverNow}, ${serverNow} + $7::int8 * interval '1 millisecond', $7::int8
          FROM l, r WHERE l.got
          ON CONFLICT (id) DO UPDATE SET fence = h.fence + 1, key = EXCLUDED.key, owner = EXCLUDED.owner,
            plugin = EXCLUDED.plugin, node = EXCLUDED.node, hostname = EXCLUDED.hostname, pid = EXCLUDED.pid,
            acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at, ttl_ms = EXCLUDED.ttl_ms, value = NULL
          RETURNING fence, reserved, ${ms("acquired_at")} AS acquired, ${ms("expires_at")} AS expires
        )
        SELECT fence, reserved, acquired, expires, NULL::int8 FROM i
        UNION ALL
        SELECT NULL, NULL, NULL, NULL, ${ms("h.expires_at")} - ${ms(serverNow)}
        FROM l, ${h} h WHERE NOT l.got AND h.id = $1::int8 AND h.owner IS NOT NULL`,
    // $1 advisory id, $2 fence just taken.
    reserve: `WITH cur AS (
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
    // $1 advisory id, $2 owner, $3 released channel, $4 and $5 the wait lock.
    release: `SELECT u.ours, u.unlocked,
          CASE WHEN pg_try_advisory_xact_lock($4::int4, $5::int4) THEN NULL ELSE pg_notify($3, $1::int8::text) END
        FROM (SELECT EXISTS (SELECT FROM ${h} WHERE id = $1::int8 AND owner = $2 AND pid = pg_backend_pid()) AS ours,
          pg_advisory_unlock($1::int8) AS unlocked OFFSET 0) u`,
  };
}
