// The SDK's leader election: campaign (try and wait forms), proclaim, resign
// and who leads. A leadership is a `Lock` on the key in the kind `leader` that the host keeps
// alive: `fence()` is the term, `state()` and `lockhost_on_lost(handle)` tell
// when the leadership is lost, and auto-release (unless `KEEP`) resigns it when
// the export returns.

import { TRY_CONTENDED, TIMEOUT, INTERNAL } from "../status";
import { lock_try_campaign, lock_campaign, lock_proclaim, lock_resign, lock_leader } from "./bindings";
import { Lock, LockError, TextResult, TryResult, errorFromCode } from "./lock";

/** What a campaign's raw result means: a leadership, another leader (after a wait: `timedOut`), or an error. */
function campaigned(key: string, flags: i32, r: i32): TryResult {
  if (r > 0) return new TryResult(new Lock(key, r, flags), false, null);
  if (r == TRY_CONTENDED) return new TryResult(null, true, null);
  if (r == -TIMEOUT) return new TryResult(null, true, null, true);
  return new TryResult(null, false, errorFromCode(r));
}

/**
 * Leads the election `key` if nobody does, proclaiming `value` (0 to
 * `MAX_LEADER_VALUE_BYTES` bytes): `lock` is the leadership; `contended` while
 * another leads. `flags`: `0`, `GLOBAL`, `KEEP` (lead past this export call).
 */
export function tryCampaign(key: string, value: string, ttlMs: i32, flags: i32 = 0): TryResult {
  const k = String.UTF8.encode(key);
  const v = String.UTF8.encode(value);
  return campaigned(key, flags, lock_try_campaign(changetype<usize>(k), k.byteLength, changetype<usize>(v), v.byteLength, ttlMs, flags));
}

/** `tryCampaign`, waiting up to `waitMs` to lead (woken when the leader resigns or is lost); `timedOut` when another led all along. */
export function campaign(key: string, value: string, ttlMs: i32, waitMs: i32, flags: i32 = 0): TryResult {
  const k = String.UTF8.encode(key);
  const v = String.UTF8.encode(value);
  return campaigned(key, flags, lock_campaign(changetype<usize>(k), k.byteLength, changetype<usize>(v), v.byteLength, ttlMs, waitMs, flags));
}

/** Proclaims a new value as the leader `leadership`: null, or the error (`LOST` when it no longer leads). */
export function proclaim(leadership: Lock, value: string): LockError | null {
  const v = String.UTF8.encode(value);
  const r = lock_proclaim(leadership.handle, changetype<usize>(v), v.byteLength);
  return r < 0 ? errorFromCode(r) : null;
}

/** Steps down: a waiting campaigner takes over at once. Null, or the error (as `Lock.release`). */
export function resign(leadership: Lock): LockError | null {
  const r = lock_resign(leadership.handle);
  return r < 0 ? errorFromCode(r) : null;
}

/** The JSON of who leads the election `key` now (`{"key":…,"held":…,"node":…,"value":…,"term":…,"since_ms":…}`), or the error. `flags`: `0` or `GLOBAL`. */
export function leaderOf(key: string, flags: i32 = 0): TextResult {
  const k = String.UTF8.encode(key);
  let cap = 256;
  // The leader can change between two calls (a longer value), so retry a few times.
  for (let attempt = 0; attempt < 4; attempt++) {
    const buf = new ArrayBuffer(cap);
    const n = lock_leader(changetype<usize>(k), k.byteLength, flags, changetype<usize>(buf), cap);
    if (n < 0) return new TextResult("", errorFromCode(n));
    if (n <= cap) return new TextResult(String.UTF8.decodeUnsafe(changetype<usize>(buf), <usize>n), null);
    cap = n;
  }
  return new TextResult("", new LockError(INTERNAL, "lockhost SDK: the leader's JSON kept growing past the buffer"));
}
