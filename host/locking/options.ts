// The lifecycle options of a LockService, checked when the service is made (not at the first
// renewal, hours later): each message names the option at fault. The config loader checks the
// same ranges for the TOML form; this covers services built in code.
import { LockhostError } from "../../kit/errors.js";

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
}


/** Frozen defaults of the keepalive settings (the config's `[locking.keepalive]` defaults). */
export const KEEPALIVE_DEFAULTS: KeepaliveSettings = Object.freeze({
  renewAtRatio: 0.5,
  maxRetries: 3,
  safetyMarginRatio: 0.1,
  batchWindowMs: 20,
});

/** Frozen defaults of the waiting settings (the config's `[locking.waiting]` defaults). */
export const WAITING_DEFAULTS: WaitingSettings = Object.freeze({ pollIntervalMs: 1_000 });

/** Ranges, shared with the config schema so both refuse the same values. */
export const LIFECYCLE_LIMITS = Object.freeze({
  maxRetries: [0, 100],
  batchWindowMs: [0, 1_000],
  pollIntervalMs: [10, 3_600_000],
} as const);

/** Keepalive settings with defaults applied, validated and frozen; throws INVALID_ARGUMENT naming the option. */
export function resolveKeepalive(given: Partial<KeepaliveSettings> | undefined, where = "keepalive"): KeepaliveSettings {
  const s = { ...KEEPALIVE_DEFAULTS, ...definedOnly(given) };
  if (!(s.renewAtRatio > 0 && s.renewAtRatio < 1)) bad(`${where}.renewAtRatio must be a number between 0 and 1 (exclusive), got ${s.renewAtRatio}`);
  // Compared as a sum, like the config loader, so both refuse 0.7 + 0.3 despite float rounding.
  if (!(s.safetyMarginRatio >= 0 && s.renewAtRatio + s.safetyMarginRatio < 1)) {
    bad(
      `${where}.safetyMarginRatio must be at least 0 and less than 1 - renewAtRatio (${round(1 - s.renewAtRatio)}), got ${s.safetyMarginRatio}: ` +
        "a renewal sent at renewAtRatio of the TTL must have time to be confirmed before the margin",
    );
  }
  integerIn(s.maxRetries, LIFECYCLE_LIMITS.maxRetries, `${where}.maxRetries`);
  integerIn(s.batchWindowMs, LIFECYCLE_LIMITS.batchWindowMs, `${where}.batchWindowMs`);
  return Object.freeze(s);
}

/** Waiting settings with defaults applied, validated and frozen; throws INVALID_ARGUMENT naming the option. */
export function resolveWaiting(given: Partial<WaitingSettings> | undefined, where = "waiting"): WaitingSettings {
  const s = { ...WAITING_DEFAULTS, ...definedOnly(given) };
  integerIn(s.pollIntervalMs, LIFECYCLE_LIMITS.pollIntervalMs, `${where}.pollIntervalMs`);
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
