// Release notices on Redis: the subscriber connection that hears them (ReleaseWatcher), and the
// watched flags that make the mutex's scripts publish them (WatchFlags, below).
//
// Release notifications over Redis pub/sub (KindSteps.watch, LockBackend.onLost). The release
// and force-release scripts PUBLISH on the lock's channel (mutex-lua.ts, queue-lua.ts; the
// mutex's only while someone flagged the name as watched, WatchFlags); this side holds one
// subscriber connection per backend, opened on the first watch, shared by every watched key: a channel is subscribed
// with its first watcher and unsubscribed with its last.
//
// Notifications are a shortcut, never the only way a waiter learns a key is free (it also
// retries when the holder's lease ends, and polls): so nothing here throws or blocks for long.
// A watch whose SUBSCRIBE fails or is slow is `ready` anyway after commandTimeoutMs. While the
// subscriber is disconnected, releases are missed: on every reconnect it subscribes every
// watched channel again and then calls every listener once, so a waiter retries at once.
//
// WatchFlags, the watched flags: how the mutex's watchers (MutexStore.watch: waiting
// acquisitions, leader observers and campaigners) tell release, force-release and proclaim to publish. A release
// nobody hears costs a PUBLISH all the same (on a Redis Cluster, a message to every node), so
// the scripts publish only while the name's flag (keys.ts watched) exists. Every watching host
// sets it when its first watch of the name opens and refreshes it while any of its watches of the
// name stay open; nobody deletes it, since another host may still watch: it lapses FLAG_TTL_MS
// after the last watcher's last refresh (a release meanwhile publishes to nobody, as before).
//
// The rule that keeps a waiter from missing a release: a watch is `ready` only once the flag is
// set (and the channel subscribed, ReleaseWatcher), and the host tries once more after `ready`. A
// release before the flag exists is not published, but that retry finds the key free; one after
// it publishes, to a subscription that is confirmed by then.
//
// The flag can vanish under a watch: a Redis restarted without persistence, a FLUSHALL, a
// failover to a replica that had not caught up, a host frozen past FLAG_TTL_MS. A restart and a
// failover come with a reconnect: every flag is set again when the lock connection is ready
// again, and the subscriber's resync wakes the watchers only once the flags are back (restored:
// ReleaseWatcher's beforeWake), since a retry before that could miss a release that published to
// nobody. The subscriber often reconnects before the lock connection; a retry then could not
// run anyway. Until then a waiter falls back on what it always has: the holder's lease end and
// polling.
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "pino";
import { ReleaseListeners } from "../../../kit/index.js";
import type { ReleaseWatch, Scrubber } from "../../../kit/index.js";
import type { RedisConnection } from "./client.js";
import { slotOf, type KeyLayout } from "./keys.js";

/** What a watch of a closed backend gets: ready at once, never called. */
const NOT_WATCHING: ReleaseWatch = Object.freeze({ ready: Promise.resolve(), close: () => undefined });

/** How the watcher opens its connection and reports on it. */
export interface WatcherOptions {
  /** Builds the subscriber client, not yet connected (client.ts createSubscriber). */
  readonly create: () => Redis | Cluster;
  readonly commandTimeoutMs: number;
  readonly log: Logger;
  /** The server's URL, password masked. */
  readonly url: string;
  readonly scrub: Scrubber;
  /**
   * Awaited after a resync's SUBSCRIBE and before it wakes the watchers (settling, never
   * rejecting): the mutex's watched flags are back (WatchFlags.restored), so every release
   * after the watchers' retries publishes.
   */
  readonly beforeWake?: () => Promise<void>;
}

/** The pub/sub side of one RedisBackend. */
const noop = (): void => undefined;

export class ReleaseWatcher {
  readonly #options: WatcherOptions;
  /** Listeners by channel: a channel is subscribed with its first and unsubscribed with its last. */
  readonly #listeners = new ReleaseListeners<string>({
    first: (channel) => this.#subscribed.set(channel, this.#subscribe(this.#client!, [channel])),
    // Ordered after any SUBSCRIBE of the channel on the same connection, so a watch made again
    // later (its SUBSCRIBE sent after this) ends up subscribed.
    last: (channel) => {
      this.#subscribed.delete(channel);
      this.#client!.unsubscribe(channel).catch(this.#debug);
    },
  });
  /** Per subscribed channel: settles (never rejects) once SUBSCRIBE was confirmed, failed, or took commandTimeoutMs. */
  readonly #subscribed = new Map<string, Promise<void>>();
  /** Channels whose payload someone reads (watchMessages). */
  readonly #payloads = new Map<string, (payload: string) => void>();
  /** Told after every resync (watchMessages' onResync). */
  readonly #resynced = new Set<() => void>();
  #client: Redis | Cluster | undefined;
  #closed = false;
  /** Set by the first 'ready': a later one is a reconnect, after which nothing is subscribed. */
  #connected = false;
  /** Set when a SUBSCRIBE failed (sent while disconnected): the next 'ready' subscribes it again. */
  #missed = false;

  constructor(options: WatcherOptions) {
    this.#options = options;
  }

  /**
   * Calls `onMessage` with the payload of every message on `channel` (subscribed like a watch),
   * and `onResync` after the subscriber connection came back: messages may have been missed.
   */
  watchMessages(channel: string, onMessage: (payload: string) => void, onResync?: () => void): ReleaseWatch {
    this.#payloads.set(channel, onMessage);
    if (onResync) this.#resynced.add(onResync);
    const watch = this.watch(channel, noop);
    return { ready: watch.ready, close: () => (this.#payloads.delete(channel), onResync && this.#resynced.delete(onResync), watch.close()) };
  }

  /** Calls `listener` on every message on `channel` until the returned watch is closed. */
  watch(channel: string, listener: () => void): ReleaseWatch {
    if (this.#closed) return NOT_WATCHING;
    if (!this.#client) this.#open();
    const close = this.#listeners.add(channel, listener);
    return { ready: this.#subscribed.get(channel)!, close };
  }

  /** Drops the subscriber connection; later watches are never called. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.clear();
    this.#subscribed.clear();
    // Nothing to flush: an unsubscribe on the way out would only delay close().
    this.#client?.disconnect();
  }

  #open(): void {
    const client = this.#options.create();
    this.#client = client;
    client.on("message", this.#onMessage);
    client.on("error", this.#debug);
    client.on("ready", this.#onReady);
    // A cluster client's subscriber connection moves to another node when its node leaves.
    client.on("-node", this.#resync);
    client.connect().catch(this.#debug); // failures arrive as 'error' events
  }

  #subscribe(client: Redis | Cluster, channels: string[]): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#options.commandTimeoutMs);
      const done = (): void => {
        clearTimeout(timer);
        resolve();
      };
      client.subscribe(...channels).then(done, (err: unknown) => {
        this.#missed = true;
        this.#debug(err);
        done();
      });
    });
  }

  /**
   * The first connection sends the SUBSCRIBEs queued while it was made; unless one of them
   * already failed, there is nothing to catch up on. A reconnection starts with no
   * subscriptions at all.
   */
  readonly #onReady = (): void => {
    const first = !this.#connected;
    this.#connected = true;
    if (first && !this.#missed) return;
    this.#resync();
  };

  /** Subscribes every watched channel again, then wakes every watcher: a release may have been missed. */
  readonly #resync = (): void => {
    const client = this.#client;
    if (this.#closed || !client || this.#subscribed.size === 0) return;
    this.#missed = false;
    const beforeWake = this.#options.beforeWake;
    void this.#subscribe(client, [...this.#listeners.keys()])
      .then(beforeWake && (() => beforeWake()))
      .then(() => {
        this.#listeners.wakeAll();
        for (const resynced of this.#resynced) resynced();
      });
  };

  readonly #onMessage = (channel: string, payload: string): void => {
    this.#listeners.wake(channel);
    this.#payloads.get(channel)?.(payload);
  };

  /** Subscriber trouble is logged at debug only: the lock connection reports the server's state. */
  readonly #debug = (err: unknown): void => {
    if (this.#closed) return;
    const message = this.#options.scrub(err instanceof Error ? err.message : String(err));
    this.#options.log.debug({ url: this.#options.url, error: message }, `redis release subscriber: ${message}`);
  };
}

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
