// What the admin listener sends the page, as JSON: the page's own copy of the shapes, since it
// imports nothing from the host. The listener's routes (../routes.ts) check what they send
// against these types, so the two cannot drift apart unnoticed.

/** A kind of lock, as the kind table names it (kit/kinds.ts). */
export type Kind = "mutex" | "rw" | "semaphore" | "fair" | "leader";

/** Every kind, in the kind table's order (the kind filter's choices). */
export const KINDS: readonly Kind[] = ["mutex", "rw", "semaphore", "fair", "leader"];

/** The lock service's counters (LockService.stats()), as far as the page shows them. */
export interface Stats {
  readonly held: number;
  readonly waiters: number;
  readonly contended: number;
  readonly renewalsOk: number;
  readonly renewalsFailed: number;
  readonly lost: number;
}

/** A lock event, a schedule tick, or an operator's action (an audit line). */
export type FeedItem =
  | {
      readonly type: "acquired";
      readonly name: string;
      readonly fence: number;
      readonly plugin: string;
      readonly ttlMs: number;
      readonly atMs: number;
      readonly kind?: Kind;
    }
  | {
      readonly type: "released";
      readonly name: string;
      readonly fence: number;
      readonly plugin: string;
      readonly heldMs: number;
      readonly atMs: number;
      readonly kind?: Kind;
    }
  | {
      readonly type: "lost";
      readonly name: string;
      readonly fence: number;
      readonly plugin: string;
      readonly reason: string;
      readonly atMs: number;
      readonly kind?: Kind;
    }
  | { readonly type: "force-released"; readonly name: string; readonly found: boolean; readonly atMs: number; readonly kind?: Kind }
  | {
      readonly type: "waited";
      readonly name: string;
      readonly plugin: string;
      readonly waitedMs: number;
      readonly outcome: string;
      readonly atMs: number;
      readonly kind?: Kind;
    }
  | { readonly type: "tick"; readonly atMs: number; readonly id: string; readonly tickAtMs: number; readonly outcome: string; readonly fence?: number }
  | Audit;

/** An operator's force-release through the listener: who, which lock, what came of it. */
export interface Audit {
  readonly type: "audit";
  readonly atMs: number;
  readonly action: string;
  readonly name: string;
  readonly kind: Kind;
  readonly outcome: "released" | "not-held" | "refused" | "failed";
  readonly holders?: number;
  readonly by: { readonly address: string; readonly token: "valid" | "wrong" | "none" };
  readonly detail?: string;
}

/** Counters of one plugin. */
export interface PluginCounters {
  acquired: number;
  released: number;
  lost: number;
  waits: number;
  timeouts: number;
}

/** One second of the series. */
export interface SeriesPoint {
  readonly second: number;
  acquired: number;
  waits: number;
  waitMsTotal: number;
  waitMsMax: number;
}

/** When a duration ended, and how long it was (ms). */
export type DurationSample = readonly [atMs: number, ms: number];

/** The first message of the stream. */
export interface Snapshot {
  readonly node: string;
  readonly backend: string;
  readonly distributed: boolean;
  /** What the page may offer. */
  readonly access: Access;
  readonly stats: Stats;
  readonly feed: {
    readonly recent: readonly FeedItem[];
    readonly plugins: Readonly<Record<string, PluginCounters>>;
    readonly series: readonly SeriesPoint[];
    readonly durations: { readonly held: readonly DurationSample[]; readonly waited: readonly DurationSample[] };
  };
  /** The backend's health, when already known (else a "health" message follows). */
  readonly health?: Health;
}

/** Whether the backend answers (what /readyz says), and since when. */
export type Health =
  | { readonly ok: true; readonly backend: string; readonly sinceMs: number }
  | { readonly ok: false; readonly backend: string; readonly message: string; readonly sinceMs: number };

/** One held lock, a row of GET /locks (LockListing). */
export interface Listing {
  readonly name: string;
  readonly kind: Kind;
  readonly mode: string;
  readonly holder: { readonly plugin: string; readonly node: string };
  readonly fence: number;
  readonly ageMs: number;
  readonly ttlMs: number;
  readonly ttlRemainingMs: number;
  readonly waiters: number;
}

/** A page of GET /locks. */
export interface ListPage {
  readonly locks: readonly Listing[];
  readonly cursor?: string;
  readonly skipped?: readonly { readonly kind: Kind; readonly reason: string }[];
}

/** The error body of a refused request. */
export interface ErrorBody {
  readonly code?: string;
  readonly message?: string;
}

/** What the listener lets the page do: force-release only when a token is configured. */
export interface Access {
  /** A token is configured: force-release goes with it (and is refused without). */
  readonly forceRelease: boolean;
  /** Which routes need the token ([admin] auth): with "all", the page sends it on every request. */
  readonly auth: "writes" | "all";
}
