// Restore: a Lease for a lock another process (or another guest) took and handed over by its
// owner token, so this service can renew or release it. One lease per owner token.
import { LockhostError } from "../../kit/errors.js";
import { closedError, lostError, type ServiceCore } from "./core.js";
import { Lease } from "./lease.js";
import { DEFAULT_KEEPALIVE } from "./options.js";
import { setKeepalive } from "./renew.js";
import { checkRef, type CheckedRef, type LockRefInput, type LockRefOptions } from "./ref.js";
import { kindName } from "./kinds.js";
import { validateFlag, validateKey, validateTtl } from "./validate.js";

/** Options of restore: the reference's scope and the lock's kind (default the mutex), and the restored lease's settings. */
export interface RestoreOptions extends LockRefOptions {
  /** TTL for renewals of the restored lease (default: the TTL its current lease was set with). */
  readonly ttlMs?: number;
  /**
   * Keep the restored lease alive (see TryLockOptions.keepalive). Default DEFAULT_KEEPALIVE
   * (true) for a new lease; a lease this service already holds keeps its setting unless this
   * is true.
   */
  readonly keepalive?: boolean;
}

/** The lease for `owner`'s lock `ref` (see LockService.restore). */
export function restore(core: ServiceCore, ref: LockRefInput, owner: string, options: RestoreOptions): Promise<Lease> {
  if (core.life.closing) return Promise.reject(closedError());
  let checked: CheckedRef;
  try {
    checked = checkRef(ref, options);
    validateKey(owner, "owner");
    if (options.ttlMs !== undefined) validateTtl(options.ttlMs);
    validateFlag(options.keepalive, "keepalive");
  } catch (err) {
    return Promise.reject(err);
  }
  return restoreCounted(core, checked, owner, options);
}

/**
 * restore for a full name and owner already checked (the guest's boundary made them of its
 * bytes, and checked its TTL): nothing is checked again.
 */
export function restoreChecked(core: ServiceCore, checked: CheckedRef, owner: string, options: RestoreOptions): Promise<Lease> {
  if (core.life.closing) return Promise.reject(closedError());
  return restoreCounted(core, checked, owner, options);
}

/** Counted in flight like an acquisition: close() waits for it, and it hands out no lease once closing. */
async function restoreCounted(core: ServiceCore, checked: CheckedRef, owner: string, options: RestoreOptions): Promise<Lease> {
  core.life.attemptStarted();
  try {
    return await restoreNamed(core, checked, owner, options);
  } finally {
    core.life.attemptDone();
  }
}

async function restoreNamed(core: ServiceCore, { name, kind }: CheckedRef, owner: string, options: RestoreOptions): Promise<Lease> {
  // Always asked, even for a lease this service holds: another process may have released or
  // force-released it, and a lease answered from memory alone would claim a lock nobody has.
  const sentAt = performance.now();
  const steps = core.steps(kind);
  const found = await core.backendCall(() => steps.status(name));
  if (core.life.closing) throw closedError();
  const holders = found?.holders ?? [];
  const record = holders.find((h) => h.owner === owner);
  if (!record) {
    const stale = core.held.get(owner);
    if (stale?.name === name && stale.kind === kind) core.markLost(stale, lostError(stale, holders.length > 0 ? "mismatch" : "not_found"));
    if (core.released.has(owner)) {
      throw new LockhostError("ALREADY_RELEASED", `lock ${kindName(kind, name)} with that owner token was already released by this host`);
    }
    if (holders.length === 0) throw new LockhostError("NOT_FOUND", `no lock is held under ${kindName(kind, name)}`);
    throw new LockhostError(
      "OWNERSHIP_MISMATCH",
      `lock ${kindName(kind, name)} belongs to another owner token (fence ${holders[0]!.fence}); nothing was changed`,
    );
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
    kind,
    mode: record.mode,
  });
  // The owner token came from outside: not one this service minted.
  core.hold(lease, false);
  return lease;
}

/** The lease this service holds for `owner` under `name`, with keepalive turned on if asked. */
function sameLease(core: ServiceCore, name: string, owner: string, options: RestoreOptions): Lease | undefined {
  const mine = core.held.get(owner);
  if (!mine || mine.name !== name) return undefined;
  if (options.keepalive === true && !mine.keepalive) setKeepalive(core, mine, true);
  return mine;
}
