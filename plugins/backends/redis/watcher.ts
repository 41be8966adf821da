// Release notifications over Redis pub/sub (LockBackend.watch). The release and force-release
// scripts PUBLISH on the lock's channel (scripts.ts; the mutex's only while someone flagged the
// name as watched, watched.ts); this side holds one subscriber connection
// per backend, opened on the first watch, shared by every watched key: a channel is subscribed
// with its first watcher and unsubscribed with its last.
//
// Notifications are a shortcut, never the only way a waiter learns a key is free (it also
// retries when the holder's lease ends, and polls): so nothing here throws or blocks for long.
// A watch whose SUBSCRIBE fails or is slow is `ready` anyway after commandTimeoutMs. While the
// subscriber is disconnected, releases are missed: on every reconnect it subscribes every
// watched channel again and then calls every listener once, so a waiter retries at once.
import type { Cluster, Redis } from "ioredis";
import type { Logger } from "pino";
import { ReleaseListeners } from "../../../kit/index.js";
import type { ReleaseWatch, Scrubber } from "../../../kit/index.js";

/** What a watch of a closed backend gets: ready at once, never called. */
const NOT_WATCHING: ReleaseWatch = Object.freeze({ ready: Promise.resolve(), close: () => undefined });

/** How the watcher opens its connection and reports on it. */
export interface WatcherOptions {
  /** Builds the subscriber client, not yet connected (connect.ts createSubscriber). */
  readonly create: () => Redis | Cluster;
  readonly commandTimeoutMs: number;
  readonly log: Logger;
  /** The server's URL, password masked. */
  readonly url: string;
  readonly scrub: Scrubber;
  /**
   * Awaited after a resync's SUBSCRIBE and before it wakes the watchers (settling, never
   * rejecting): the mutex's watched flags are back (watched.ts restored), so every release
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
