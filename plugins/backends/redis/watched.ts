// The watched flags: how the mutex's watchers (LockBackend.watch: waiting acquisitions, leader
// observers and campaigners) tell release, force-release and proclaim to publish. A release
// nobody hears costs a PUBLISH all the same (on a Redis Cluster, a message to every node), so
// the scripts publish only while the name's flag (keys.ts watched) exists. Every watching host
// sets it when its first watch of the name opens and refreshes it while any of its watches of the
// name stay open; nobody deletes it, since another host may still watch: it lapses FLAG_TTL_MS
// after the last watcher's last refresh (a release meanwhile publishes to nobody, as before).
//
// The rule that keeps a waiter from missing a release: a watch is `ready` only once the flag is
// set (and the channel subscribed, watcher.ts), and the host tries once more after `ready`. A
// release before the flag exists is not published, but that retry finds the key free; one after
// it publishes, to a subscription that is confirmed by then.
//
// The flag can vanish under a watch: a Redis restarted without persistence, a FLUSHALL, a
// failover to a replica that had not caught up, a host frozen past FLAG_TTL_MS. A restart and a
// failover come with a reconnect: every flag is set again when the lock connection is ready
// again, and the subscriber's resync wakes the watchers only once the flags are back (restored:
// watcher.ts beforeWake), since a retry before that could miss a release that published to
// nobody. The subscriber often reconnects before the lock connection; a retry then could not
// run anyway. Until then a waiter falls back on what it always has: the holder's lease end and
// polling.
import type { Logger } from "pino";
import type { RedisConnection } from "./client.js";
import { slotOf, type KeyLayout } from "./keys.js";

/** How long a flag outlives its watchers' last refresh. */
export const FLAG_TTL_MS = 30_000;
/** How often each host refreshes the flags it keeps: a flag misses two refreshes before it lapses. */
export const FLAG_REFRESH_MS = FLAG_TTL_MS / 3;
/** Most flags set by one script call (as renewals: a script runs alone on the server). */
const FLAG_CHUNK = 1_000;

/** One flagged name: how many watches of it are open here, and when its first SET settled. */
interface Flag {
  count: number;
  readonly ready: Promise<void>;
}

/** A flag held by one watch. */
export interface FlagHold {
  /** Settles (never rejects) once the flag is set, the attempt failed, or commandTimeoutMs passed. */
  readonly ready: Promise<void>;
  /** Lets go of it; idempotent. The last hold of a name stops its refreshes here. */
  close(): void;
}

const noop = (): void => undefined;

/** The watched flags one RedisBackend keeps, by lock name. */
export class WatchFlags {
  readonly #conn: RedisConnection;
  readonly #keys: KeyLayout;
  readonly #log: Logger;
  readonly #flags = new Map<string, Flag>();
  #timer: NodeJS.Timeout | undefined;
  #closed = false;
  #sets = 0;
  /** Set by the first 'ready': a later one is a reconnect, after which the server may have lost the flags. */
  #connected = false;
  /** Set when a SET failed: the next 'ready' sets every flag again. */
  #missed = false;
  /** Told when a refresh of every flag succeeds (restored). */
  readonly #restoring = new Set<() => void>();

  constructor(conn: RedisConnection, keys: KeyLayout, log: Logger) {
    this.#conn = conn;
    this.#keys = keys;
    this.#log = log;
    // Connected again: the server may have lost them (restarted, failed over). The first
    // connection runs the SETs that waited for it, unless one of them already failed.
    conn.redis.on("ready", () => {
      const first = !this.#connected;
      this.#connected = true;
      if (first && !this.#missed) return;
      this.#missed = false;
      void this.refresh();
    });
  }

  /** Script calls that set flags so far (first watches and refreshes; for tests and metrics). */
  get setCalls(): number {
    return this.#sets;
  }

  /** How many names are flagged here now. */
  get size(): number {
    return this.#flags.size;
  }

  /** Flags `name` while the returned hold is open; the first hold of a name sets the flag at once. */
  hold(name: string): FlagHold {
    let flag = this.#flags.get(name);
    if (flag) {
      flag.count++;
    } else {
      flag = { count: 1, ready: this.#set([name]).then(noop) };
      this.#flags.set(name, flag);
      this.#timer ??= setInterval(this.#refresh, FLAG_REFRESH_MS).unref();
    }
    let open = true;
    return {
      ready: flag.ready,
      close: () => {
        if (!open) return;
        open = false;
        this.#drop(name);
      },
    };
  }

  /** Sets every flag kept here again; settles (never rejects) when done, failed, or after commandTimeoutMs. */
  async refresh(): Promise<void> {
    if (this.#closed || this.#flags.size === 0) return this.#restored();
    if (await this.#set([...this.#flags.keys()])) this.#restored();
  }

  /**
   * Sets every flag again, and settles once a refresh of them all has succeeded (this one, or the
   * one the lock connection's return or the refresh timer makes), or after `boundMs` without.
   */
  restored(boundMs: number): Promise<void> {
    if (this.#closed || this.#flags.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#restoring.delete(done);
        resolve();
      };
      const timer = setTimeout(done, boundMs);
      this.#restoring.add(done);
      void this.refresh();
    });
  }

  /** Stops refreshing; the flags lapse by themselves. */
  close(): void {
    this.#closed = true;
    this.#flags.clear();
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#restored();
  }

  #restored(): void {
    for (const done of [...this.#restoring]) done();
  }

  readonly #refresh = (): void => void this.refresh();

  #drop(name: string): void {
    const flag = this.#flags.get(name);
    if (!flag || --flag.count > 0) return;
    this.#flags.delete(name);
    if (this.#flags.size === 0) {
      clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  /** SET PX each name's flag: one script call per chunk, per slot on a cluster. Settles (never rejects) to whether it worked. */
  #set(names: readonly string[]): Promise<boolean> {
    if (this.#closed) return Promise.resolve(false);
    const redis = this.#conn.redis;
    const calls: (string | number)[][] = [];
    for (const group of redis.isCluster ? bySlot(names) : [names]) {
      for (let start = 0; start < group.length; start += FLAG_CHUNK) {
        const chunk = group.slice(start, start + FLAG_CHUNK);
        calls.push([chunk.length, ...chunk.map((name) => this.#keys.watched(name)), FLAG_TTL_MS]);
      }
    }
    this.#sets += calls.length;
    return this.#conn
      .whenReady(() => Promise.all(calls.map((args) => redis.lockhostFlag(args))))
      .then(
        () => true,
        (err: unknown) => {
          // Waiters fall back on lease ends and polling; the next reconnect or refresh sets it again.
          this.#missed = true;
          if (!this.#closed) this.#log.debug({ error: this.#conn.toError(err).message }, "redis watched flag not set");
          return false;
        },
      );
  }
}

/** Names per cluster slot (a script may only touch keys of one slot). */
function bySlot(names: readonly string[]): Iterable<string[]> {
  const groups = new Map<number, string[]>();
  for (const name of names) {
    const slot = slotOf(name);
    const group = groups.get(slot);
    if (group) group.push(name);
    else groups.set(slot, [name]);
  }
  return groups.values();
}
