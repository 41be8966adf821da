// One watch over every key under the prefix, for the life of the backend: it wakes waiters
// when a lock may have become free (a holder's or a queue place's key deleted, a leader's value
// put) and tells HeldLocks (held.ts) of deletions (a force-release, an expired lease), so a holder hears
// of its loss within a round trip. A broken stream resumes from the revision after the last one
// seen, on the next endpoint, so no release is missed; when etcd has compacted that revision
// away, `missed` is called (the host then checks every lock it holds) and every waiter is woken.
import type { Logger } from "pino";
import { ReleaseListeners, type ReleaseWatch } from "../../../kit/index.js";
import { withBytes, type EtcdClient, type EtcdStream } from "./client.js";
import { parseKey, prefixEnd, wantedNoticeKey, wantedWatchKey } from "./keys.js";
import type { KeyValue, WatchResponse } from "./proto.js";
import { decodeHolder } from "./record.js";

/** What the watch reports besides waking listeners. */
export interface WatchSink {
  /** etcd deleted the key `key` of holder or place `owner` (by anyone, this host included). */
  deleted(owner: string, key: string): void;
  /** Events may have been lost (the revision to resume from was compacted). */
  missed(): void;
}

export class PrefixWatcher {
  readonly #client: EtcdClient;
  readonly #log: Logger;
  readonly #prefix: string;
  readonly #sink: WatchSink;
  readonly #listeners = new ReleaseListeners();
  #stream: EtcdStream | undefined;
  /** The last revision whose events were delivered; a new stream starts after it. */
  #revision = 0;
  #closed = false;
  #ready!: Promise<void>;
  #markReady: () => void = () => undefined;
  #retryTimer: NodeJS.Timeout | undefined;

  constructor(client: EtcdClient, log: Logger, prefix: string, sink: WatchSink) {
    this.#client = client;
    this.#log = log;
    this.#prefix = prefix;
    this.#sink = sink;
    this.#newReady();
    client.onFailover(() => {
      // Another component found the member unreachable: move this stream along too.
      if (this.#stream !== undefined) this.#broken(false);
    });
    void this.#open();
  }

  /** Calls `listener` when a key under `watchKey` (a lock's key or directory) may have become free. */
  watch(watchKey: string, listener: () => void): ReleaseWatch {
    return { ready: this.#ready, close: this.#listeners.add(watchKey, listener) };
  }

  /** Settles once the watch is established (at once when it is). */
  get ready(): Promise<void> {
    return this.#ready;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    this.#markReady();
    this.#listeners.clear();
    this.#drop();
  }

  #newReady(): void {
    this.#ready = new Promise((resolve) => (this.#markReady = resolve));
  }

  async #open(): Promise<void> {
    if (this.#closed) return;
    let stream: EtcdStream;
    try {
      stream = await this.#client.stream("Watch");
    } catch (err) {
      this.#log.debug({ err: (err as Error).message }, "etcd: watch not opened; retrying");
      return this.#retry();
    }
    if (this.#closed) return void stream.cancel();
    this.#stream = stream;
    stream.on("data", (res: WatchResponse) => this.#onResponse(res));
    stream.on("error", () => this.#broken(true));
    stream.on("end", () => this.#broken(false));
    stream.write({
      create_request: withBytes({
        key: this.#prefix,
        range_end: prefixEnd(this.#prefix),
        prev_kv: true,
        ...(this.#revision > 0 && { start_revision: String(this.#revision + 1) }),
      }),
    });
  }

  #onResponse(res: WatchResponse): void {
    if (res.created) {
      if (this.#revision === 0) this.#revision = Number(res.header.revision);
      this.#markReady();
      return;
    }
    if (res.canceled) {
      if (Number(res.compact_revision) > 0) {
        this.#log.warn({ compactRevision: res.compact_revision }, "etcd: the watch's revision was compacted; checking every held lock");
        this.#revision = 0;
        this.#sink.missed();
        this.#listeners.wakeAll();
      }
      return this.#broken(false);
    }
    for (const event of res.events) {
      this.#revision = Math.max(this.#revision, Number(event.kv.mod_revision));
      this.#onEvent(event.type === "DELETE" || event.type === 1, event.kv, event.prev_kv);
    }
  }

  #onEvent(deleted: boolean, kv: KeyValue, prev: KeyValue | null): void {
    const key = kv.key.toString("utf8");
    if (key === wantedNoticeKey(this.#prefix)) {
      // A delegated grant found the name it put here held: that name's holder is wanted (delegation.ts).
      if (!deleted) this.#listeners.wake(wantedWatchKey(this.#prefix, kv.value.toString("utf8")));
      return;
    }
    const ref = parseKey(this.#prefix, key);
    if (ref === undefined) return;
    if (deleted) {
      const owner = ref.type === "mutex" ? (prev === null ? undefined : decodeHolder(prev.value)?.o) : ref.owner;
      if (owner !== undefined) this.#sink.deleted(owner, key);
      this.#listeners.wake(ref.watchKey);
    } else if (
      ref.type === "mutex" &&
      prev !== null &&
      prev.create_revision === kv.create_revision &&
      // Every renewal is a put too: only one someone here watches is decoded.
      this.#listeners.has(ref.watchKey) &&
      decodeHolder(prev.value)?.v !== decodeHolder(kv.value)?.v
    ) {
      // A holder proclaimed a new value in place (a leader): its election's observers hear of it.
      this.#listeners.wake(ref.watchKey);
    }
  }

  #broken(failover: boolean): void {
    if (this.#closed) return;
    this.#drop();
    if (failover) this.#client.failover();
    this.#retry();
  }

  #retry(): void {
    if (this.#closed) return;
    this.#retryTimer = setTimeout(() => void this.#open(), 100);
    this.#retryTimer.unref();
  }

  #drop(): void {
    const stream = this.#stream;
    this.#stream = undefined;
    if (stream === undefined) return;
    stream.removeAllListeners();
    stream.on("error", () => undefined);
    stream.cancel();
  }
}
