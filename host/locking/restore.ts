// Restore: a Lease for a lock another process (or another guest) took and handed over by its
// owner token, so this service can renew or release it. One lease per owner token.
import { LockhostError } from "../../kit/errors.js";
import { closedError, lostError, type ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import { DEFAULT_KEEPALIVE } from "./options.js";
import { setKeepalive } from "./renew.js";
import { scopeOf } from "./request.js";
import { qualify, type Scope } from "./scope.js";
import { validateFlag, validateKey, validateOptions, validateTtl } from "./validate.js";

/** Options of restore. */
export interface RestoreOptions {
  /** Where the key lives (default "global"). */
  readonly scope?: Scope;
  /** TTL for renewals of the restored lease (default: the TTL its current lease was set with). */
  readonly ttlMs?: number;
  /**
   * Keep the restored lease alive (see TryLockOptions.keepalive). Default DEFAULT_KEEPALIVE
   * (true) for a new lease; a lease this service already holds keeps its setting unless this
   * is true.
   */
  readonly keepalive?: boolean;
}

/** The lease for `owner`'s lock on `key` (see LockService.restore). */
export function restore(core: ServiceCore, key: string, owner: string, options: RestoreOptions): Promise<Lease> {
  if (core.closing) return Promise.reject(closedError());
  let name: string;
  try {
    validateKey(key);
    validateKey(owner, "owner");
    validateOptions(options, "options");
    if (options.ttlMs !== undefined) validateTtl(options.ttlMs);
    validateFlag(options.keepalive, "keepalive");
    name = qualify(key, scopeOf(options));
  } catch (err) {
    return Promise.reject(err);
  }
  // Tracked like an acquisition: close() waits for it, and it hands out no lease once closing.
  return core.track(restoreNamed(core, name, owner, options));
}

async function restoreNamed(core: ServiceCore, name: string, owner: string, options: RestoreOptions): Promise<Lease> {
  // Always asked, even for a lease this service holds: another process may have released or
  // force-released it, and a lease answered from memory alone would claim a lock nobody has.
  const sentAt = performance.now();
  const record = await core.backendCall(() => core.backend.status(name));
  if (core.closing) throw closedError();
  if (!record || record.owner !== owner) {
    const stale = core.held.get(owner);
    if (stale?.name === name) core.markLost(stale, lostError(stale, record ? "mismatch" : "not_found"));
    if (core.released.has(owner)) {
      throw new LockhostError("ALREADY_RELEASED", `lock ${name} with that owner token was already released by this host`);
    }
    if (!record) throw new LockhostError("NOT_FOUND", `no lock is held under ${name}`);
    throw new LockhostError("OWNERSHIP_MISMATCH", `lock ${name} belongs to another owner token (fence ${record.fence}); nothing was changed`);
  }
  // One lease per owner: the one this service holds (or a concurrent restore just made).
  const mine = sameLease(core, name, owner, options);
  if (mine) return mine;
  const lease = new Lease({
    name,
    owner,
    fence: record.fence,
    ttlMs: options.ttlMs ?? record.ttlMs,
    holder: record.holder,
    acquiredAtMs: record.acquiredAtMs,
    expiresAtMs: record.expiresAtMs,
    deadline: sentAt + record.ttlRemainingMs,
    keepalive: options.keepalive ?? DEFAULT_KEEPALIVE,
    hooks: core.hooks,
  });
  core.hold(lease);
  return lease;
}

/** The lease this service holds for `owner` under `name`, with keepalive turned on if asked. */
function sameLease(core: ServiceCore, name: string, owner: string, options: RestoreOptions): Lease | undefined {
  const mine = core.held.get(owner);
  if (!mine || mine.name !== name) return undefined;
  if (options.keepalive === true && !mine.keepalive) setKeepalive(core, mine, true);
  return mine;
}
