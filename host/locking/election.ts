// Leader election, the kind-table row "leader": the leader holds the exclusive lease of its
// election's key, whose record also carries what it proclaimed (KindSteps.proclaim), and its
// term is that lease's fence, so terms strictly increase per name on every backend without a
// counter of their own. Campaigning is a waiting acquisition with keepalive (woken by the
// release channel), so the lifecycle (renewal, loss told at once, auto-release, close) is every
// kind's, written once.
import { MAX_LEADER_VALUE_BYTES } from "../../abi/status.js";
import { LockhostError } from "../../kit/errors.js";
import type { KindSteps } from "../../kit/steps.js";
import { ELECTION, LEADER } from "../../kit/kinds.js";
import { acquireChecked } from "./acquire.js";
import { waitKey } from "./kinds.js";
import { closedError, type ServiceCore } from "./core.js";
import type { Lease } from "./lease.js";
import { releaseIfHeld } from "./release.js";
import { requestFor, type CheckedRequest } from "./request.js";
import type { Scope } from "./scope.js";
import { validateKey, validateOptions, validateSignal, validateWaitMs } from "./validate.js";

/** The longest value a leader may proclaim, in UTF-8 bytes (it travels in every status read). */
export { MAX_LEADER_VALUE_BYTES };

/** Options of campaign. */
export interface CampaignOptions {
  /** The leadership's lease, in ms (1 to MAX_TTL_MS); kept alive while this caller leads. */
  readonly ttlMs: number;
  /** What the leader proclaims at once (default ""): observers and leader() read it. */
  readonly value?: string;
  /** Gives up the campaign: the call rejects with the signal's reason. Does not end a leadership already won. */
  readonly signal?: AbortSignal;
  /** The longest campaign, in ms (default Infinity): TIMEOUT when another leads all along. */
  readonly waitMs?: number;
  /** Where the election lives (default "global", as every host-side lock). */
  readonly scope?: Scope;
  /** Recorded as the leader's plugin; defaults to the scope's plugin, or "host". */
  readonly plugin?: string;
}

/** The lock key of `election` (checked: INVALID_ARGUMENT naming `election`): the name itself, in the leader kind's namespace. */
export function electionKey(election: unknown): string {
  return validateKey(election, "election");
}

/** The election's lock request: the leader kind's lease on its name, with keepalive on. */
export function electionRequest(name: string, options: CampaignOptions): CheckedRequest {
  validateOptions(options, "options", true);
  // electionKey checked the key (naming it `election`): requestFor checks the rest.
  return requestFor(electionKey(name), { ttlMs: options.ttlMs, scope: options.scope, plugin: options.plugin, keepalive: true } as const, LEADER);
}

/** `value` checked: a string of at most MAX_LEADER_VALUE_BYTES bytes (INVALID_ARGUMENT otherwise). */
export function validateLeaderValue(value: unknown, argName = "value"): string {
  if (typeof value !== "string") throw new LockhostError("INVALID_ARGUMENT", `${argName} must be a string, got ${typeof value}`);
  const bytes = Buffer.byteLength(value, "utf8");
  if (bytes > MAX_LEADER_VALUE_BYTES) throw new LockhostError("INVALID_ARGUMENT", `${argName} is ${bytes} bytes; at most ${MAX_LEADER_VALUE_BYTES}`);
  return value;
}

/** The backend's proclaim step; INVALID_ARGUMENT naming the backend when it has none. */
export function proclaimStep(core: ServiceCore): NonNullable<KindSteps["proclaim"]> {
  const step = core.steps(ELECTION).proclaim;
  if (typeof step !== "function")
    throw new LockhostError("INVALID_ARGUMENT", `backend ${core.backend.name} has no leader election (its ${ELECTION} steps have no proclaim)`);
  return step;
}

/** Campaigns for the checked election `request` (see LockService.campaign). */
export async function campaign(
  core: ServiceCore,
  election: string,
  request: CheckedRequest,
  value: string,
  waitMs: number,
  signal: AbortSignal | undefined,
): Promise<Leadership> {
  const proclaim = proclaimStep(core);
  const started = performance.now();
  for (;;) {
    const left = waitMs === Infinity ? Infinity : Math.max(0, waitMs - (performance.now() - started));
    // A leader that ends without a notice (a killed process) wakes the campaign through the host's sentinel.
    const unwatch = core.sentinel.watch(request.name, () => core.waits.notify(waitKey(request.spec.kind, request.name)));
    let lease: Lease;
    try {
      lease = await acquireChecked(core, request, left, signal);
    } finally {
      unwatch();
    }
    let held: boolean;
    try {
      // The proclamation also wakes the key's observers: they learn of the new leader, not only of the old one's end.
      held = await core.backendCall(() => proclaim(lease.name, lease.owner, value));
    } catch (err) {
      await releaseIfHeld(core, lease);
      throw err;
    }
    // Held on the server and still within its lease here (a proclamation answered after the
    // lease's end, a server paused past it, must not make a leader of a lease with no time left).
    if (held && lease.state === "held" && performance.now() < lease.deadline) return new Leadership(core, election, lease, value);
    // Lost between winning and proclaiming (force-released, expired): not a leader; campaign on.
    if (lease.state === "held")
      core.markLost(lease, new LockhostError("LOST", `leadership of ${election} (term ${lease.fence}) ended before it was proclaimed`));
  }
}

/** Checked options of a campaign: the wait and the signal. */
export function campaignWait(options: CampaignOptions): { readonly waitMs: number; readonly signal: AbortSignal | undefined; readonly value: string } {
  return {
    waitMs: options.waitMs === undefined ? Infinity : validateWaitMs(options.waitMs),
    signal: validateSignal(options.signal, "signal"),
    value: options.value === undefined ? "" : validateLeaderValue(options.value),
  };
}

/**
 * This caller's leadership of one election, from campaign until resign or loss. Its term is
 * the fence of its lease: strictly above every earlier term of the election, so a resource
 * can refuse a deposed leader by it.
 */
export class Leadership implements AsyncDisposable {
  /** The election's name, as campaign was given it. */
  readonly election: string;
  /** The lease behind it (kind "leader", with keepalive). */
  readonly lease: Lease;
  readonly #core: ServiceCore;
  #value: string;

  constructor(core: ServiceCore, election: string, lease: Lease, value: string) {
    this.#core = core;
    this.election = election;
    this.lease = lease;
    this.#value = value;
  }

  /** The term: the lease's fence, strictly increasing per election. */
  get term(): number {
    return this.lease.fence;
  }

  /** What this leader proclaimed last. */
  get value(): string {
    return this.#value;
  }

  /** Aborts when the leadership ends (resigned, or lost: the reason says which), at once. */
  get signal(): AbortSignal {
    return this.lease.signal;
  }

  /** Whether this caller still leads (its lease is held). */
  get leading(): boolean {
    return this.lease.state === "held";
  }

  /**
   * Proclaims a new value: leader() and observers see it. Rejects with LOST (and the
   * leadership ends) when this caller no longer leads, ALREADY_RELEASED after resign.
   */
  async proclaim(value: string): Promise<void> {
    validateLeaderValue(value);
    const core = this.#core;
    core.checkUsable(this.lease);
    const held = await core.backendCall(() => proclaimStep(core)(this.lease.name, this.lease.owner, value));
    if (!held) {
      const reason = new LockhostError("LOST", `leadership of ${this.election} (term ${this.term}) was lost: another process released or took it`);
      if (this.lease.state === "held") core.markLost(this.lease, reason);
      throw reason;
    }
    this.#value = value;
  }

  /**
   * Steps down: the lease is released, so a waiting campaigner takes over at once and
   * observers hear of it. Resolves also when the leadership had already ended; rejects only
   * when the backend failed (the lease then ends at its TTL).
   */
  async resign(): Promise<void> {
    if (this.#core.life.closed) throw closedError();
    const failed = await releaseIfHeld(this.#core, this.lease);
    if (failed) throw failed;
  }

  /**
   * Resigns when an `await using` block that holds the leadership ends (see Lease's
   * [Symbol.asyncDispose]): nothing to do once it ended (resigned or lost) or the service
   * closed; rejects with the release's error when the backend failed (the lease then ends at
   * its TTL); when the block threw too, its exit throws a SuppressedError carrying both.
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.lease[Symbol.asyncDispose]();
  }
}
