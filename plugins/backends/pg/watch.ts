// The pg backend's one LISTEN connection: release notifications for waiters and control
// messages for the locks this host holds. It is a connection of its own, never a lock
// session: a session's statements queue behind each other and its end takes its locks, while
// this one only waits for notifications and may drop and come back at no cost but a missed
// message (so every listener is called once after it comes back). It also holds the wait lock
// of every watched key, shared (mutex-sql.ts): that is how a release elsewhere knows someone waits,
// and a NOTIFY is sent only then. The locks go with the connection; a new one takes them again.
import pg from "pg";
import type { Logger } from "pino";
import { backoffMs, destroy } from "./client.js";
import { backendError, type ErrorContext, type OutageLog } from "./errors.js";
import type { Statement } from "./mutex-sql.js";

/** A wait lock (keys.ts waitLockOf). */
type WaitLock = readonly [number, number];

/** How often a wait lock that was taken exclusive for an instant (a release checking) is tried again. */
const WAIT_LOCK_TRIES = 5;
const WAIT_LOCK_RETRY_MS = 2;

/** What a ReleaseListener needs from its backend. */
export interface ListenerOptions {
  /** node-postgres settings of the connection (URL, connect timeout, application_name). */
  readonly client: pg.ClientConfig;
  /** The channels to LISTEN on (already valid identifiers). */
  readonly channels: readonly string[];
  /** Bound on connecting and on the LISTEN statement. */
  readonly commandTimeoutMs: number;
  /** Called for every notification on one of the channels. */
  readonly onNotification: (channel: string, payload: string) => void;
  /** Called after the connection came back: notifications may have been missed meanwhile. */
  readonly onReconnect: () => void;
  /** Called each time LISTEN is confirmed (the first time too): what was sent before it was not heard. */
  readonly onListening: () => void;
  /** Takes wait locks shared (mutex-sql.ts waitOn), and lets one go (waitOff). */
  readonly waitOn: Statement;
  readonly waitOff: Statement;
  readonly errors: ErrorContext;
  readonly log: Logger;
  /** Says an outage once for every connection of the backend. */
  readonly outage: OutageLog;
}

/**
 * A lazily opened LISTEN connection that reconnects (with backoff) until closed. start()
 * resolves once LISTEN is confirmed or the attempt failed; it never rejects.
 */
export class ReleaseListener {
  readonly #options: ListenerOptions;
  #client: pg.Client | undefined;
  /** The connection being opened, if any (close() ends it too). */
  #opening: pg.Client | undefined;
  /** The attempt in flight or the last one, settled (never rejects); undefined until started. */
  #attempt: Promise<void> | undefined;
  /** Set once an attempt has finished: later successes are reconnections. */
  #settledOnce = false;
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  /** Settles the pending retry's attempt (close() calls it, so nobody waits for a cancelled retry). */
  #settleRetry: (() => void) | undefined;
  #pid: number | undefined;
  #closed = false;
  /** The wait locks of the watched keys, by advisory id, and when each is held (never rejects). */
  readonly #waits = new Map<string, { readonly lock: WaitLock; readonly held: Promise<void> }>();
  /** Wait locks held (or asked for) on the current connection: each taken once, let go once. */
  #held = new Set<WaitLock>();

  constructor(options: ListenerOptions) {
    this.#options = options;
  }

  /** The server pid of the LISTEN connection while it is up (for tests and diagnostics). */
  get pid(): number | undefined {
    return this.#client === undefined ? undefined : this.#pid;
  }

  /** Connects (once) and resolves when notifications flow, or when that failed for now. */
  start(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#attempt ??= this.#open();
    return this.#attempt;
  }

  /**
   * Registers a waiter on advisory id `id`: holds its wait lock shared from now on (again after
   * every reconnect) until unregister. Resolves once held, or once that failed for now (the
   * waiters then rely on polling, as without notifications); never rejects.
   */
  register(id: string, lock: WaitLock): Promise<void> {
    const held = this.start().then(() => this.#take([lock]));
    this.#waits.set(id, { lock, held });
    return held;
  }

  /** When the registration of `id` is held (see register), or when notifications flow. */
  registered(id: string): Promise<void> {
    return this.#waits.get(id)?.held ?? this.start();
  }

  /** The last watcher of `id` left: its wait lock is let go. */
  unregister(id: string): void {
    const wait = this.#waits.get(id);
    if (wait === undefined) return;
    this.#waits.delete(id);
    if (!this.#held.delete(wait.lock)) return;
    // Sent behind the waitOn on the same connection (queued in order), or the connection is gone.
    this.#client?.query({ ...this.#options.waitOff, values: [...wait.lock] }).catch(() => undefined);
  }

  /** Closes the connection now (nothing to flush) and stops reconnecting. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    this.#settleRetry?.();
    for (const client of [this.#client, this.#opening]) if (client !== undefined) destroy(client);
    this.#client = undefined;
    this.#opening = undefined;
  }

  async #open(): Promise<void> {
    const { client: config, channels, commandTimeoutMs, log } = this.#options;
    const client = new pg.Client(config);
    this.#opening = client;
    client.on("error", () => this.#dropped(client));
    client.on("end", () => this.#dropped(client));
    client.on("notification", (msg) => {
      if (client === this.#client && msg.payload !== undefined) this.#options.onNotification(msg.channel, msg.payload);
    });
    try {
      await client.connect();
      const listen = channels.map((c) => `LISTEN "${c}";`).join(" ") + " SELECT pg_backend_pid()";
      const result = await client.query({ text: listen, query_timeout: commandTimeoutMs } as pg.QueryConfig);
      // A multi-statement query resolves to one result per statement; the pid is the last.
      const results = Array.isArray(result) ? (result as pg.QueryResult[]) : [result];
      const row = results[results.length - 1]?.rows[0] as { pg_backend_pid?: number } | undefined;
      this.#opening = undefined;
      if (this.#closed) {
        destroy(client);
        return;
      }
      this.#pid = row?.pg_backend_pid;
      this.#client = client;
      this.#held = new Set();
      // A new connection holds no wait lock: those of the keys still watched are taken again.
      await this.#take([...this.#waits.values()].map((w) => w.lock));
      const reconnected = this.#settledOnce;
      this.#settledOnce = true;
      if (this.#failures > 0) this.#options.outage.up(log, { pid: this.#pid }, "pg listener connected again");
      this.#failures = 0;
      this.#options.onListening();
      if (reconnected) this.#options.onReconnect();
    } catch (err) {
      this.#opening = undefined;
      destroy(client);
      if (this.#closed) return;
      this.#settledOnce = true;
      // One warning per outage; waiters poll meanwhile.
      if (this.#failures === 0) {
        const failure = backendError(err, "listen", this.#options.errors);
        this.#options.outage.down(log, { err: failure.message }, "pg listener cannot connect: waiters poll until it is back");
      }
      this.#failures++;
      this.#schedule();
    }
  }

  /**
   * Takes `locks` shared on the connection, those still wanted: a release checking for waiters
   * holds one exclusive for an instant, so a refusal is tried again a few times. Never rejects.
   */
  async #take(locks: readonly WaitLock[]): Promise<void> {
    const client = this.#client;
    const held = this.#held;
    let left = locks;
    for (let attempt = 0; attempt < WAIT_LOCK_TRIES && client !== undefined && left.length > 0; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, WAIT_LOCK_RETRY_MS));
      // Checked when sent: an unregister before this must not leave its lock held.
      const wanted = new Set([...this.#waits.values()].map((w) => w.lock));
      left = left.filter((lock) => wanted.has(lock) && !held.has(lock));
      if (left.length === 0 || client !== this.#client) return;
      for (const lock of left) held.add(lock);
      try {
        const result = await client.query<[number, number, boolean]>({
          ...this.#options.waitOn,
          values: [left.map((l) => l[0]), left.map((l) => l[1])],
          rowMode: "array",
          query_timeout: this.#options.commandTimeoutMs,
        } as pg.QueryArrayConfig);
        const refused = new Set(result.rows.filter((r) => r[2] !== true).map((r) => `${r[0]}:${r[1]}`));
        left = left.filter((l) => refused.has(`${l[0]}:${l[1]}`));
        for (const lock of left) held.delete(lock);
      } catch {
        // The connection's own events report it; the waiters poll meanwhile.
        return;
      }
    }
  }

  /** `client` ended or failed: the next attempt reconnects, after a backoff when it keeps failing. */
  #dropped(client: pg.Client): void {
    if (client !== this.#client) return;
    this.#client = undefined;
    destroy(client);
    if (this.#closed) return;
    this.#options.log.info({ pid: this.#pid }, "pg listener connection ended: reconnecting");
    this.#schedule();
  }

  #schedule(): void {
    clearTimeout(this.#retry);
    const delay = backoffMs(Math.max(0, this.#failures - 1));
    // Watchers arriving meanwhile wait for the retry (or its failure), then poll if need be.
    this.#attempt = new Promise<void>((resolve) => {
      this.#settleRetry = resolve;
      this.#retry = setTimeout(() => {
        this.#retry = undefined;
        this.#settleRetry = undefined;
        if (this.#closed) return resolve();
        this.#open().then(resolve, resolve);
      }, delay);
      this.#retry.unref();
    });
  }
}
