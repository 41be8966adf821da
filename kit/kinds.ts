// The lock kinds, one row each: everything the layers above need to know about a kind lives in
// its row (how messages name it, its modes, its limit rule, its ABI status flag and operations),
// so no other file names a kind. Tables keyed by LockKind elsewhere fail to compile until a new
// row has their entry; code that branches on a kind asks the row instead of comparing names.
import type { OpName } from "../abi/ops.js";
import { FLAG_FAIR, FLAG_RW, FLAG_SEMAPHORE } from "../abi/status.js";
import { LockhostError } from "./errors.js";
import { MAX_PERMITS, type LockMode } from "./common.js";

/** A kind's limit rule: the request field that carries it and the range a caller may name. */
export interface LimitRule {
  /** The request field: a semaphore's `permits`. */
  readonly field: "permits";
  readonly min: number;
  readonly max: number;
}

/** One kind's row. */
export interface KindRow {
  /** How messages name the kind: "read/write lock global:a is held". */
  readonly label: string;
  /** The label's plural: "backend acme has no read/write locks". */
  readonly plural: string;
  /**
   * Whether it is the kind of an acquisition that names none (the mutex). Its lock names stand
   * alone, in messages and wait queues, as they did before there were other kinds; the others'
   * carry their kind.
   */
  readonly isDefault: boolean;
  /** The modes a holder takes it in; the first is the mode of a spec that names none. */
  readonly modes: readonly [LockMode, ...LockMode[]];
  /** What a holder in each mode is called (lists and status: "writer", "permit"). */
  readonly roles: Partial<Record<LockMode, string>>;
  /** The limit a request names (a semaphore's permits), or null when the kind takes none. */
  readonly limit: LimitRule | null;
  /**
   * How a backend may store it: "single", one exclusive holder per key and no queue, so a
   * backend may keep it in a one-record MutexStore (kit/mutex.ts) behind its steps; "queue",
   * holders and a queue of exclusive waiters (kit/steps.ts's rules in full).
   */
  readonly store: "single" | "queue";
  /**
   * Whether it is leader election's kind: taken by campaign (not by try/acquire with a spec),
   * its holder's record carries a proclaimed value (KindSteps.proclaim).
   */
  readonly elects: boolean;
  /**
   * Prepended to its names in a single-record store that also keeps mutexes (MutexSteps), so
   * the two namespaces never meet: "" for the mutex. Starts with a character no lock name can.
   */
  readonly namespace: string;
  /** Whether a waiting exclusive acquirer keeps a place in the key's queue (writer preference). */
  readonly queuesExclusive: boolean;
  /**
   * Whether a host serves its own contention on a key locally: while it holds or queues the key,
   * a new attempt is contended (or waits in the host's line) without asking the backend, and a
   * release hands the key to the host's next waiter in one step (KindSteps.handoff). Only for a
   * kind with one exclusive holder and no queue across hosts, whose waiters are served by whoever
   * asks first: the mutex. A fair mutex's order is the backend's queue, not a host's line.
   */
  readonly handsOffLocally: boolean;
  /** The `lock.status` flag that asks for this kind (abi/status.ts); 0 for the default, the mutex. */
  readonly statusFlag: number;
  /** The flag's name in abi/status.ts, for messages. */
  readonly statusFlagName: string;
  /**
   * The ABI operations that take it, per mode (abi/ops.ts), and the flag bit that picks this
   * kind when it shares its operations with another (the fair mutex: `try` with FLAG_FAIR).
   */
  readonly ops: Partial<Record<LockMode, { readonly try: OpName; readonly acquire: OpName; readonly flag?: number }>>;
}

/** Every lock kind. The order is the order listings go through them. */
export const KINDS = Object.freeze({
  mutex: {
    label: "mutex",
    plural: "mutexes",
    isDefault: true,
    modes: ["exclusive"],
    roles: { exclusive: "holder" },
    limit: null,
    store: "single",
    elects: false,
    namespace: "",
    queuesExclusive: false,
    handsOffLocally: true,
    statusFlag: 0,
    statusFlagName: "",
    ops: { exclusive: { try: "try", acquire: "acquire" } },
  },
  rw: {
    label: "read/write lock",
    plural: "read/write locks",
    isDefault: false,
    modes: ["shared", "exclusive"],
    roles: { shared: "reader", exclusive: "writer" },
    limit: null,
    store: "queue",
    elects: false,
    namespace: "",
    queuesExclusive: true,
    handsOffLocally: false,
    statusFlag: FLAG_RW,
    statusFlagName: "FLAG_RW",
    ops: { shared: { try: "try_read", acquire: "acquire_read" }, exclusive: { try: "try_write", acquire: "acquire_write" } },
  },
  semaphore: {
    label: "semaphore",
    plural: "semaphores",
    isDefault: false,
    modes: ["shared"],
    roles: { shared: "permit" },
    limit: { field: "permits", min: 1, max: MAX_PERMITS },
    store: "queue",
    elects: false,
    namespace: "",
    queuesExclusive: false,
    handsOffLocally: false,
    statusFlag: FLAG_SEMAPHORE,
    statusFlagName: "FLAG_SEMAPHORE",
    ops: { shared: { try: "try_permit", acquire: "acquire_permit" } },
  },
  // A mutex whose waiters queue first come, first served across hosts: the read/write lock's
  // writer queue with writers only, so it is served through the queue steps (each backend
  // keys their storage by the kind, apart from the rw lock of the same name).
  fair: {
    label: "fair mutex",
    plural: "fair mutexes",
    isDefault: false,
    modes: ["exclusive"],
    roles: { exclusive: "holder" },
    limit: null,
    store: "queue",
    elects: false,
    namespace: "",
    queuesExclusive: true,
    handsOffLocally: false,
    statusFlag: FLAG_FAIR,
    statusFlagName: "FLAG_FAIR",
    ops: { exclusive: { try: "try", acquire: "acquire", flag: FLAG_FAIR } },
  },
  // Leader election: the leader holds its election's key, whose record carries the value it
  // proclaims, and its term is the fence. Stored as a mutex is, in a namespace of its own, so
  // campaigns never meet a mutex of the same name; taken only through campaign.
  leader: {
    label: "leader election",
    plural: "leader elections",
    isDefault: false,
    modes: ["exclusive"],
    roles: { exclusive: "leader" },
    limit: null,
    store: "single",
    elects: true,
    namespace: "\u0001leader:",
    queuesExclusive: false,
    handsOffLocally: false,
    statusFlag: 0,
    statusFlagName: "",
    ops: { exclusive: { try: "try_campaign", acquire: "campaign" } },
  },
} as const satisfies Record<string, KindRow>);

/** What a lease holds: a mutex, a read/write lock, a semaphore permit or a fair mutex. */
export type LockKind = keyof typeof KINDS;

/** The kinds stored with holders and a queue (rows with store "queue"). */
export type QueueKind = { [K in LockKind]: (typeof KINDS)[K]["store"] extends "queue" ? K : never }[LockKind];

/** The kinds a lock spec can take (every row but leader election's, which campaign takes). */
export type SpecKind = { [K in LockKind]: (typeof KINDS)[K]["elects"] extends true ? never : K }[LockKind];

/** Leader election's kind (the row with `elects`). */
export type ElectionKind = Exclude<LockKind, SpecKind>;
export const ELECTION: ElectionKind = "leader";

/** Every kind, in table order. */
export const LOCK_KINDS: readonly LockKind[] = Object.freeze(Object.keys(KINDS) as LockKind[]);

/** The kinds stored with a queue, in table order. */
export const QUEUE_KINDS: readonly QueueKind[] = Object.freeze(LOCK_KINDS.filter(isQueueKind));

/** The kinds a spec can name, in table order. */
export const SPEC_KINDS: readonly SpecKind[] = Object.freeze(LOCK_KINDS.filter((kind): kind is SpecKind => !KINDS[kind].elects));

/** The row of `kind`. */
export function kindRow(kind: LockKind): KindRow {
  return KINDS[kind];
}

/** Whether `kind` is stored with holders and a queue (else one record per key). */
export function isQueueKind(kind: LockKind): kind is QueueKind {
  return KINDS[kind].store === "queue";
}

/** Whether `value` names a kind of `among` (a string that is a row's key, not an inherited property). */
export function isKindOf<K extends LockKind>(value: unknown, among: readonly K[]): value is K {
  return typeof value === "string" && (among as readonly string[]).includes(value);
}

/**
 * `value` as one of the kinds `among`, else INVALID_ARGUMENT naming `argName` and the kinds it
 * may be: the one validity check of a kind argument (API options, CLI flags, admin queries).
 */
export function checkKind<K extends LockKind>(value: unknown, among: readonly K[], argName = "kind"): K {
  if (isKindOf(value, among)) return value;
  const shown = typeof value === "string" ? JSON.stringify(value) : String(value);
  throw new LockhostError("INVALID_ARGUMENT", `${argName} must be ${kindChoices(among)}, got ${shown}`);
}

/** The kinds `among` as prose: "rw or semaphore", "mutex, rw or semaphore". */
export function kindChoices(among: readonly LockKind[]): string {
  return among.length < 2 ? among.join("") : `${among.slice(0, -1).join(", ")} or ${among.at(-1)!}`;
}

type Row<K extends LockKind> = (typeof KINDS)[K];
/** A kind with one mode takes it implicitly; one with several names it. */
type ModeField<K extends LockKind> = Row<K>["modes"]["length"] extends 1 ? unknown : { readonly mode: Row<K>["modes"][number] };
/** A kind with a limit rule carries its limit in the rule's field. */
type LimitField<K extends LockKind> = Row<K>["limit"] extends { readonly field: infer F extends string } ? { readonly [P in F]: number } : unknown;

/** How an acquisition takes its key: the kind, and the mode and limit its row asks for. */
export type LockSpec = { [K in SpecKind]: { readonly kind: K } & ModeField<K> & LimitField<K> }[SpecKind];

/** What an acquisition takes: a lock spec, or leader election's kind (which campaign takes). */
export type TakeSpec = LockSpec | { readonly kind: ElectionKind };

/** A leadership: what a campaign takes. */
export const LEADER: TakeSpec = Object.freeze({ kind: ELECTION });

/** A mutex: the default of every acquisition. */
export const MUTEX: LockSpec = Object.freeze({ kind: "mutex" });
/** A read lock and a write lock. */
export const READ: LockSpec = Object.freeze({ kind: "rw", mode: "shared" });
export const WRITE: LockSpec = Object.freeze({ kind: "rw", mode: "exclusive" });

/** A fair mutex: waiters across hosts take the key in arrival order; a try is refused while one waits. */
export const FAIR: LockSpec = Object.freeze({ kind: "fair" });

/** A permit of a semaphore with `permits` permits (checked with the rest of the request). */
export function permitSpec(permits: number): LockSpec {
  return { kind: "semaphore", permits };
}

/**
 * The spec an ABI operation's `flags` ask for: the kind whose row rides the same operation
 * under a flag bit that is set (`try` with FLAG_FAIR: the fair mutex), else `spec`. Such a row
 * has one mode and no limit, so its kind alone is its spec.
 */
export function flaggedSpec(spec: LockSpec, flags: number): LockSpec {
  if (flags === 0) return spec;
  const op = kindRow(spec.kind).ops[modeOf(spec)];
  for (const kind of LOCK_KINDS) {
    const other = kindRow(kind).ops[modeOf(spec)];
    if (other?.flag !== undefined && (flags & other.flag) !== 0 && other.try === op?.try) return { kind } as LockSpec;
  }
  return spec;
}

/** The mode a spec takes its key in: the one it names, else its kind's only mode. */
export function modeOf(spec: TakeSpec): LockMode {
  return "mode" in spec ? spec.mode : KINDS[spec.kind].modes[0];
}

/** The limit a spec names under its kind's limit rule; 0 for a kind without one. */
export function limitOf(spec: TakeSpec): number {
  return "permits" in spec ? spec.permits : 0;
}

/** What a holder of `kind` in `mode` is called: "writer", "permit" (the mode itself if the row names none). */
export function roleOf(kind: LockKind, mode: LockMode): string {
  return kindRow(kind).roles[mode] ?? mode;
}
