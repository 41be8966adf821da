// The lifecycle options of a LockService, checked when the service is made (not at the first
// renewal, hours later): each message names the option at fault. The config loader checks the
// same ranges for the TOML form; this covers services built in code.
import { LockhostError } from "../../kit/errors.js";
import { completeDefaultsOf, field, table } from "../../kit/schema.js";

/** `[locking.keepalive]`: how the host's renewal manager keeps keepalive leases alive. */
export interface KeepaliveSettings {
  /** Renew once this fraction of the TTL has passed (0 < ratio < 1; default 0.5). */
  readonly renewAtRatio: number;
  /** Retries of a renewal that failed on I/O, inside the safety margin (default 3). */
  readonly maxRetries: number;
  /**
   * A renewal not confirmed this fraction of the TTL before the lease would end makes the
   * lease lost (0 <= ratio < 1 - renewAtRatio; default 0.1).
   */
  readonly safetyMarginRatio: number;
  /** Renewals due within this many ms of each other go to the backend as one batch (default 20). */
  readonly batchWindowMs: number;
}

/** `[locking.waiting]`: how waiting acquisitions fall back to polling. */
export interface WaitingSettings {
  /** Longest time between two tries of a waiter that heard no release (jittered ±20%; default 1000). */
  readonly pollIntervalMs: number;
  /**
   * How often, while someone on this host observes or campaigns for an election, its leader is
   * read to notice one that ended without a notice (a killed process), in ms; 0: never (default 20).
   */
  readonly electionPollMs: number;
}

/**
 * `[locking.keepalive]`: each field declared once. The config reads the table with it, and a
 * LockService built in code checks its options against the same ranges and defaults.
 */
export const KEEPALIVE_SCHEMA = table<KeepaliveSettings>({
  doc: "the renewal manager (for keepalive locks)",
  fields: {
    renewAtRatio: field.number({ default: 0.5, gt: 0, lt: 1, doc: "renew once this fraction of the TTL has passed" }),
    maxRetries: field.int({ default: 3, min: 0, max: 100, doc: "retries of a renewal that failed on I/O" }),
    safetyMarginRatio: field.number({
      default: 0.1,
      min: 0,
      lt: 1,
      doc: "not confirmed this close to the lease's end: the lock is lost (renew_at_ratio + this < 1)",
    }),
    batchWindowMs: field.int({ default: 20, min: 0, max: 1_000, unit: "ms", doc: "renewals due within this window go as one round trip" }),
  },
});

/** `[locking.waiting]`: each field declared once (see KEEPALIVE_SCHEMA). */
export const WAITING_SCHEMA = table<WaitingSettings>({
  doc: "how a waiting acquire falls back to polling",
  fields: {
    pollIntervalMs: field.int({
      default: 1_000,
      min: 10,
      max: 3_600_000,
      unit: "ms",
      doc: "fallback poll of a waiting acquire (jittered); a release wakes it sooner",
    }),
    electionPollMs: field.int({
      default: 20,
      min: 0,
      max: 3_600_000,
      unit: "ms",
      doc: "while an election is observed or campaigned for here, its leader is read this often to notice one that died without a notice (0: off)",
    }),
  },
});

/**
 * Whether a lease is kept alive when the caller does not say: the one default of tryLock,
 * acquire, withLock and restore. On, as redis-semaphore's refresh and Redisson's watchdog are:
 * a lease held for as long as the caller needs it, not silently ended by a TTL picked for the
 * common case. Pass `keepalive: false` for a lease that must end at its TTL.
 */
/** `[locking.delegation]`: lock delegation for hot mutexes (delegation.ts). */
export interface DelegationSettings {
  readonly enabled: boolean;
  readonly fenceBlock: number;
  readonly minHoldMs: number;
  readonly wantedHandoffs: number;
  readonly maxHoldMs: number;
  readonly wantedMs: number;
}

export const DELEGATION_SCHEMA = table<DelegationSettings>({
  doc: "lock delegation: a host keeps a hot mutex while its own callers wait and hands it between them without a round trip (redis, pg, scaled etcd)",
  fields: {
    enabled: field.bool({ default: false, doc: "delegate every mutex acquisition of this host (an acquisition's `delegate` option overrides it)" }),
    fenceBlock: field.int({
      default: 1_024,
      min: 2,
      max: 1_000_000,
      doc: "fences each backend grant reserves (on etcd at most its fence_scale): the local holders get base … base + fence_block − 1, every later grant more",
    }),
    minHoldMs: field.int({
      default: 0,
      min: 0,
      max: 60_000,
      unit: "ms",
      doc: "once another host wants the key, local handoffs go on until the grant is this old (GFS2's minimum hold)",
    }),
    wantedHandoffs: field.int({
      default: 0,
      min: 0,
      max: 1_000_000,
      doc: "once another host wants the key, this many more local handoffs before it is given up",
    }),
    maxHoldMs: field.int({
      default: 1_000,
      min: 0,
      max: 3_600_000,
      unit: "ms",
      doc: "a grant is given up at the first release after this long, however busy this host (for waiters that do not mark it wanted; 0: no bound)",
    }),
    wantedMs: field.int({
      default: 200,
      min: 1,
      max: 60_000,
      unit: "ms",
      doc: "how long a waiter's mark that it wants a key lasts: other hosts' grants of the freed key stand back for it that long",
    }),
  },
});

export const DEFAULT_KEEPALIVE = true;

/** Frozen defaults of the keepalive settings (the config's `[locking.keepalive]` defaults). */
export const KEEPALIVE_DEFAULTS: KeepaliveSettings = completeDefaultsOf(KEEPALIVE_SCHEMA);

/** Frozen defaults of the waiting settings (the config's `[locking.waiting]` defaults). */
export const WAITING_DEFAULTS: WaitingSettings = completeDefaultsOf(WAITING_SCHEMA);

export const DELEGATION_DEFAULTS: DelegationSettings = completeDefaultsOf(DELEGATION_SCHEMA);

/**
 * Whether a renewal sent at `renewAtRatio` of the TTL leaves room before the safety margin.
 * Compared as a sum, by the service and the config alike, so both refuse 0.7 + 0.3 despite
 * float rounding.
 */
export function marginFits(renewAtRatio: number, safetyMarginRatio: number): boolean {
  return renewAtRatio + safetyMarginRatio < 1;
}

/** The [min, max] of an integer field, from its declaration. */
const rangeOf = (spec: { readonly min?: number; readonly max?: number }): readonly [number, number] => [spec.min!, spec.max!];

/** Keepalive settings with defaults applied, validated and frozen; throws INVALID_ARGUMENT naming the option. */
export function resolveKeepalive(given: Partial<KeepaliveSettings> | undefined, where = "keepalive"): KeepaliveSettings {
  const s = { ...KEEPALIVE_DEFAULTS, ...definedOnly(given) };
  if (!(s.renewAtRatio > 0 && s.renewAtRatio < 1)) bad(`${where}.renewAtRatio must be a number between 0 and 1 (exclusive), got ${s.renewAtRatio}`);
  if (!(s.safetyMarginRatio >= 0 && marginFits(s.renewAtRatio, s.safetyMarginRatio))) {
    bad(
      `${where}.safetyMarginRatio must be at least 0 and less than 1 - renewAtRatio (${round(1 - s.renewAtRatio)}), got ${s.safetyMarginRatio}: ` +
        "a renewal sent at renewAtRatio of the TTL must have time to be confirmed before the margin",
    );
  }
  integerIn(s.maxRetries, rangeOf(KEEPALIVE_SCHEMA.fields.maxRetries), `${where}.maxRetries`);
  integerIn(s.batchWindowMs, rangeOf(KEEPALIVE_SCHEMA.fields.batchWindowMs), `${where}.batchWindowMs`);
  return Object.freeze(s);
}

/** Waiting settings with defaults applied, validated and frozen; throws INVALID_ARGUMENT naming the option. */
export function resolveWaiting(given: Partial<WaitingSettings> | undefined, where = "waiting"): WaitingSettings {
  const s = { ...WAITING_DEFAULTS, ...definedOnly(given) };
  integerIn(s.pollIntervalMs, rangeOf(WAITING_SCHEMA.fields.pollIntervalMs), `${where}.pollIntervalMs`);
  integerIn(s.electionPollMs, rangeOf(WAITING_SCHEMA.fields.electionPollMs), `${where}.electionPollMs`);
  return Object.freeze(s);
}

/** Delegation settings with the defaults filled in, each checked (INVALID_ARGUMENT naming it). */
export function resolveDelegation(given: Partial<DelegationSettings> | undefined, where = "delegation"): DelegationSettings {
  const s = { ...DELEGATION_DEFAULTS, ...definedOnly(given) };
  if (typeof s.enabled !== "boolean") bad(`${where}.enabled must be true or false, got ${String(s.enabled)}`);
  for (const key of ["fenceBlock", "minHoldMs", "wantedHandoffs", "maxHoldMs", "wantedMs"] as const) {
    integerIn(s[key], rangeOf(DELEGATION_SCHEMA.fields[key]), `${where}.${key}`);
  }
  return Object.freeze(s);
}

function integerIn(value: unknown, [min, max]: readonly [number, number], name: string): void {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) {
    bad(`${name} must be an integer from ${min} to ${max}, got ${String(value)}`);
  }
}

function definedOnly<T extends object>(o: T | undefined): Partial<T> {
  if (!o) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

const round = (n: number): number => Math.round(n * 1e6) / 1e6;

function bad(message: string): never {
  throw new LockhostError("INVALID_ARGUMENT", message);
}
