// One acquisition's inputs, checked once. The public tryLock/acquire check what they are given
// and then hand a CheckedRequest to a path that trusts it; the guest runtime, whose key was
// checked at its own boundary, builds one with requestFor and calls that path directly.
import { LockhostError } from "../../kit/errors.js";
import { DEFAULT_KEEPALIVE } from "./options.js";
import { PLUGIN_NAME_PATTERN, qualify, type Scope } from "./scope.js";
import { validateFlag, validateKey, validateLimit, validateOptions, validateOwner, validateTtl } from "./validate.js";
import { KINDS, limitOf, modeOf, MUTEX, type TakeSpec } from "../../kit/kinds.js";
import type { LockMode } from "../../kit/common.js";

export type { LockSpec } from "../../kit/kinds.js";

/** Options of one acquisition. */
export interface TryLockOptions {
  /** The lease, in ms (1 to MAX_TTL_MS), on the backend's clock. */
  readonly ttlMs: number;
  /** Where the key lives: a plugin's namespace or "global" (the default for host-side callers). */
  readonly scope?: Scope;
  /** Recorded as the holder's plugin; defaults to the scope's plugin, or "host". */
  readonly plugin?: string;
  /**
   * Renew the lease automatically (at `renewAtRatio` of the TTL, batched) until it is
   * released; if a renewal is refused or cannot be confirmed in time, the lease is lost and
   * its `signal` aborts. Default DEFAULT_KEEPALIVE (true), as in every entry point; pass
   * false for a lease that must end at its TTL unless renewed by hand.
   */
  readonly keepalive?: boolean;
  /**
   * The owner token to hold the lock under, chosen by the caller (1 to MAX_OWNER_LENGTH
   * printable ASCII characters, no spaces), so another process that knows it can release or
   * restore the lock without a hand-over. Default: a fresh random UUID. An owner names one live
   * lock: taking a key whose holder has the same owner is contended like any other holder
   * (locks are not reentrant), and this service refuses (INVALID_ARGUMENT) an owner one of its
   * live leases already uses on another key. Release notices are addressed by owner, so keep
   * an owner unique per live lock across processes too.
   */
  readonly owner?: string;
  /**
   * Lock delegation for this acquisition of a mutex (delegation.ts): true delegates, false never
   * does, absent follows `[locking.delegation] enabled`. Off on a backend without its steps.
   */
  readonly delegate?: boolean;
}

declare const checkedBrand: unique symbol;

/**
 * The inputs of one acquisition after checkRequest: only checkRequest makes one, so a function
 * taking a CheckedRequest need not check it again.
 */
export interface CheckedRequest {
  /** The fully qualified lock name (scope prefix and key). */
  readonly name: string;
  /** The key as given, without its scope. */
  readonly key: string;
  /** Where the key lives. */
  readonly scope: Scope;
  /** The lease, in ms (1 to MAX_TTL_MS). */
  readonly ttlMs: number;
  /** The plugin recorded as holder. */
  readonly plugin: string;
  /** Whether the renewal manager keeps the lease alive. */
  readonly keepalive: boolean;
  /** The caller's owner token; undefined: each attempt mints a fresh one. */
  readonly owner: string | undefined;
  /** What is taken: a mutex, a reader or writer of a read/write lock, or a semaphore's permit. */
  readonly spec: TakeSpec;
  /** The spec's mode and limit, read once here rather than on every attempt. */
  readonly mode: LockMode;
  readonly limit: number;
  /** The caller's `delegate` option, when given. */
  readonly delegate: boolean | undefined;
  readonly [checkedBrand]: true;
}

/**
 * Checks `key` and `options` once (key, TTL, scope, holder plugin) and returns them as a
 * CheckedRequest. Throws INVALID_ARGUMENT naming the input at fault.
 */
export function checkRequest(key: string, options: TryLockOptions, spec: TakeSpec = MUTEX): CheckedRequest {
  validateKey(key);
  return requestFor(key, options, spec);
}

/**
 * checkRequest for a key already checked where it came in (the guest's boundary, lock-ops.ts,
 * made it of the guest's bytes): the options and spec are checked, the key is not again.
 */
export function requestFor(key: string, options: TryLockOptions, spec: TakeSpec = MUTEX): CheckedRequest {
  validateOptions(options, "options", true);
  const ttlMs = validateTtl(options.ttlMs);
  const scope = options.scope ?? "global";
  let plugin = options.plugin;
  if (scope === "global") {
    plugin ??= "host";
  } else {
    checkScope(scope);
    plugin ??= scope.plugin;
  }
  // The scope's plugin was just checked, and "host" is the host's own name: no second check on the lock path.
  if (plugin !== "host" && (scope === "global" || plugin !== scope.plugin)) checkPlugin(plugin);
  const keepalive = validateFlag(options.keepalive, "keepalive") ?? DEFAULT_KEEPALIVE;
  const owner = options.owner === undefined ? undefined : validateOwner(options.owner);
  const rule = KINDS[spec.kind].limit;
  const limit = limitOf(spec);
  if (rule !== null) validateLimit(limit, rule);
  const delegate = validateFlag(options.delegate, "delegate");
  return { name: qualify(key, scope), key, scope, ttlMs, plugin, keepalive, owner, spec, mode: modeOf(spec), limit, delegate } as CheckedRequest;
}

/**
 * The scope of an options object (default "global"), checked: throws INVALID_ARGUMENT naming
 * `scope`. For the calls that take a key but no CheckedRequest (restore, release by
 * owner, status, forceRelease).
 */
export function scopeOf(options: { readonly scope?: Scope } | undefined): Scope {
  const scope = options?.scope ?? "global";
  if (scope !== "global") checkScope(scope);
  return scope;
}

/** A plugin scope names a plugin's namespace; "global" would alias the global one. */
function checkScope(scope: Scope): void {
  const plugin: unknown = typeof scope === "object" && scope !== null ? scope.plugin : undefined;
  if (!isPluginName(plugin) || plugin === "global") {
    throw new LockhostError(
      "INVALID_ARGUMENT",
      `scope must be "global" or { plugin } with a plugin name other than "global" matching ${PLUGIN_NAME_PATTERN}, ` +
        `got ${show(typeof scope === "string" ? scope : plugin)}`,
    );
  }
}

function checkPlugin(plugin: unknown): void {
  if (!isPluginName(plugin)) {
    throw new LockhostError("INVALID_ARGUMENT", `plugin must be a plugin name matching ${PLUGIN_NAME_PATTERN}, got ${show(plugin)}`);
  }
}

/** How many plugin names isPluginName remembers before it starts over. */
const KNOWN_NAMES = 1_024;
/**
 * Plugin names already found well-formed. A host uses a handful, and a Set hit is several
 * times cheaper than the regex, which was ~5% of a direct try+release. Bounded: cleared when full.
 */
const knownNames = new Set<string>();

function isPluginName(name: unknown): name is string {
  if (typeof name !== "string") return false;
  if (knownNames.has(name)) return true;
  if (!PLUGIN_NAME_PATTERN.test(name)) return false;
  if (knownNames.size >= KNOWN_NAMES) knownNames.clear();
  knownNames.add(name);
  return true;
}

const show = (value: unknown): string => (typeof value === "string" ? JSON.stringify(value) : String(value));
