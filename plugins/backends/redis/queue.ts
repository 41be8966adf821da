// The queue kinds (read/write locks, semaphores, fair mutexes) on Redis (kit/steps.ts): each step is
// one script of queue-lua.ts over the keys of one name (one slot on a cluster), on the
// backend's connection; wake-ups and loss notices over the backend's subscriber (watch.ts),
// on channels of the kind's own namespace, apart from the mutex's of the same name.
import {
  LockhostError,
  MAX_PERMITS,
  type Holder,
  type ListRequest,
  type ReleaseResult,
  type ReleaseWatch,
  type RenewRequest,
  type RenewResult,
  type AcquireRequest,
  type AcquireResult,
  type HolderRecord,
  type QueueKind,
  type LockMode,
  type KindSteps,
  type LockState,
  type LockStatePage,
} from "../../../kit/index.js";
import { renewCallsOf } from "./batch.js";
import type { LockClient, RedisConnection } from "./client.js";
import { QueueKeyLayout, scanNames, type KeyLayout } from "./keys.js";
import { DELETED, NOT_FOUND } from "./mutex-lua.js";
import type { QueueAcquireReply, QueueStatusReply } from "./queue-lua.js";
import type { ReleaseWatcher } from "./watch.js";

/** What the queue steps borrow from their RedisBackend. */
export interface RedisQueueParts {
  readonly conn: RedisConnection;
  readonly keys: KeyLayout;
  readonly watcher: ReleaseWatcher;
  /** os.hostname(), recorded with each holder. */
  readonly hostname: string;
  /** The backend's instance id: a release by another instance tells this one on its channel. */
  readonly instanceId: string;
  /** Counts script calls of renewMany (RedisBackend.renewRoundTrips). */
  readonly countRenewCalls: (calls: number) => void;
  /**
   * Subscribes this instance's own channel (once) and settles when it is: other hosts judge a
   * queued waiter alive by that subscription, so it must exist before a place is taken.
   */
  /** Whether this instance's liveness channel is confirmed subscribed (then a queue place may name it). */
  readonly present: () => Promise<boolean>;
}

const NOT_ACQUIRED: AcquireResult = Object.freeze({ acquired: false });
const RENEW_NOT_FOUND: RenewResult = Object.freeze({ ok: false, reason: "not_found" });

/** The queue steps of one kind on one RedisBackend. */
export class RedisQueueSteps implements KindSteps {
  readonly kind: QueueKind;
  readonly #parts: RedisQueueParts;
  readonly #redis: LockClient;
  readonly #keys: QueueKeyLayout;
  /** renewMany's keys per request, in the order its script reads them. */
  readonly #renewKeys: readonly ((name: string) => string)[];

  constructor(kind: QueueKind, parts: RedisQueueParts) {
    this.kind = kind;
    this.#parts = parts;
    this.#redis = parts.conn.redis;
    const keys = new QueueKeyLayout(parts.keys.prefix, kind);
    this.#keys = keys;
    this.#renewKeys = [(name) => keys.holders(name), (name) => keys.info(name)];
  }

  /** One acquisition attempt (KindSteps.acquire); INVALID_ARGUMENT for a TTL, limit or queueMs Redis cannot take. */
  acquire(req: AcquireRequest): Promise<AcquireResult> {
    const invalid = invalidRequest(req);
    if (invalid) return Promise.reject(invalid);
    const k = this.#keys;
    const { name, holder } = req;
    // A cluster's subscribers are counted per node: no liveness check there (queue-lua.ts).
    const liveness = this.#redis.isCluster ? "" : this.#parts.keys.holderHead;
    const send = (check: string): Promise<AcquireResult> =>
      this.#parts.conn.whenReady(() =>
        this.#redis
          .lockhostQueueAcquire(
            k.holders(name),
            k.info(name),
            k.queue(name),
            k.places(name),
            k.fence(name),
            k.waiters(name),
            req.owner,
            req.ttlMs,
            req.mode,
            req.limit,
            req.queueMs,
            holder.plugin,
            holder.node,
            this.#parts.hostname,
            this.#parts.instanceId,
            check,
          )
          .then(toAcquireResult, this.#fail),
      );
    return req.queueMs > 0 && liveness !== "" ? this.#parts.present().then((ok) => send(ok ? liveness : "")) : send(liveness);
  }

  /**
   * Renews each hold in one round trip: one script per chunk of up to 1,000, or on a cluster per
   * slot, all sent at once (as the mutex's renewMany). Rejects the whole batch when any call fails.
   */
  renewMany(reqs: readonly RenewRequest[]): Promise<RenewResult[]> {
    if (reqs.length === 0) return Promise.resolve([]);
    for (const r of reqs) if (!validTtl(r.ttlMs)) return Promise.reject(ttlError("ttlMs", r.ttlMs));
    return this.#parts.conn.whenReady(() => {
      const results = new Array<RenewResult>(reqs.length);
      const calls = renewCallsOf(reqs, this.#renewKeys, this.#redis.isCluster);
      this.#parts.countRenewCalls(calls.length);
      const sent = calls.map((call) =>
        this.#redis.lockhostQueueRenewMany(call.args).then((replies) => {
          const { indexes } = call;
          for (let j = 0; j < indexes.length; j++) {
            const reply = replies[j]!;
            results[indexes[j]!] = reply > 0 ? { ok: true, expiresAtMs: reply } : RENEW_NOT_FOUND;
          }
        }),
      );
      return Promise.all(sent).then(() => results, this.#fail);
    });
  }

  /** Removes `owner`'s hold on `name` and wakes the key's watchers (KindSteps.release). */
  release(name: string, owner: string): Promise<ReleaseResult> {
    const k = this.#keys;
    return this.#parts.conn.whenReady(() =>
      this.#redis
        .lockhostQueueRelease(k.holders(name), k.info(name), owner, k.released(name), this.#parts.instanceId, this.#parts.keys.holderHead)
        .then((reply) => (reply === DELETED ? "released" : "not_found"), this.#fail),
    );
  }

  /** Drops `owner`'s queue place; wakes the key's watchers when it had one (KindSteps.leaveQueue). */
  leaveQueue(name: string, owner: string): Promise<void> {
    const k = this.#keys;
    return this.#parts.conn.whenReady(() =>
      this.#redis.lockhostQueueLeaveQueue(k.queue(name), k.places(name), k.waiters(name), owner, k.released(name)).then(() => undefined, this.#fail),
    );
  }

  /** The key's live holders (in fence order) and queue, or null (KindSteps.status). */
  status(name: string): Promise<LockState | null> {
    return this.#parts.conn.whenReady(() => this.#status(name).catch(this.#fail));
  }

  /** Removes every holder, telling each one's instance; the queue and fence stay (KindSteps.forceRelease). */
  forceRelease(name: string): Promise<number> {
    const k = this.#keys;
    return this.#parts.conn.whenReady(() =>
      this.#redis
        .lockhostQueueForceRelease(k.holders(name), k.info(name), k.queue(name), k.places(name), k.released(name), this.#parts.keys.holderHead)
        .catch(this.#fail),
    );
  }

  /** A page of keys with live holders: SCAN over the kind's holders keys on every master, then each one's status. */
  list(req: ListRequest): Promise<LockStatePage> {
    return this.#parts.conn.whenReady(async () => {
      try {
        const page = await scanNames(this.#redis, this.#parts.keys, req, this.#keys.holdersHead);
        const found = await Promise.all(page.names.map((name) => this.#status(name)));
        const records = found.filter((r): r is LockState => r !== null && r.holders.length > 0);
        return page.cursor === undefined ? { records } : { records, cursor: page.cursor };
      } catch (err) {
        return this.#fail(err);
      }
    });
  }

  /** Calls `listener` on every release, force-release and queue departure of `name` in this kind (KindSteps.watch). */
  watch(name: string, listener: () => void): ReleaseWatch {
    return this.#parts.watcher.watch(this.#keys.released(name), listener);
  }

  #status(name: string): Promise<LockState | null> {
    const k = this.#keys;
    return this.#redis.lockhostQueueStatus(k.holders(name), k.info(name), k.queue(name), k.places(name)).then((reply) => toRecord(name, this.kind, reply));
  }

  readonly #fail = (err: unknown): never => {
    throw this.#parts.conn.toError(err);
  };
}

function toAcquireResult(reply: QueueAcquireReply): AcquireResult {
  if (typeof reply === "number") return reply > 0 ? { acquired: false, retryAfterMs: reply } : NOT_ACQUIRED;
  if (reply.length === 1) return { acquired: false, limit: reply[0] };
  const [fence, acquiredAtMs, expiresAtMs] = reply as Extract<QueueAcquireReply, { length: 3 }>;
  return { acquired: true, fence, acquiredAtMs, expiresAtMs };
}

/** The holder record written by the acquire script: JSON of strings (queue-lua.ts). */
type StoredHolder = [mode: string, fence: string, plugin: string, node: string, hostname: string, instance: string, acquiredAt: string];

function toRecord(name: string, kind: QueueKind, reply: QueueStatusReply): LockState | null {
  if (reply === NOT_FOUND) return null;
  const [now, queued, limit] = reply;
  const holders: HolderRecord[] = [];
  for (let i = 3; i + 3 < reply.length; i += 4) {
    const owner = reply[i] as string;
    const expiresAtMs = Number(reply[i + 1]);
    const stored = parseStored(reply[i + 2] as string);
    // A record lost by hand (HDEL): the lease is still real, the rest unknown.
    const [mode, fence, plugin, node, hostname, , acquiredAt] = stored ?? ["shared", "0", "", "", "", "", String(expiresAtMs)];
    const acquiredAtMs = Number(acquiredAt);
    const ttlRemainingMs = Math.max(0, expiresAtMs - now);
    const recorded = Number(reply[i + 3]);
    const holder: Holder = { plugin, node, hostname };
    holders.push({
      owner,
      mode: mode === "exclusive" ? "exclusive" : ("shared" satisfies LockMode),
      fence: Number(fence),
      holder,
      acquiredAtMs,
      expiresAtMs,
      ttlMs: reply[i + 3] !== "" && Number.isSafeInteger(recorded) ? recorded : Math.max(1, ttlRemainingMs),
      ttlRemainingMs,
    });
  }
  holders.sort((a, b) => a.fence - b.fence);
  return { name, kind, limit: holders.length > 0 ? Number(limit) : 0, holders, queued };
}

function parseStored(text: string): StoredHolder | undefined {
  if (text === "") return undefined;
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) && v.length >= 7 && v.every((x) => typeof x === "string") ? (v as StoredHolder) : undefined;
  } catch {
    return undefined;
  }
}

/** Checked before sending: a script failing half-way is not rolled back. */
const validTtl = (ms: number): boolean => ms > 0 && Number.isSafeInteger(ms);

function ttlError(name: string, value: number): LockhostError {
  return new LockhostError("INVALID_ARGUMENT", `${name} must be a positive integer number of milliseconds, got ${String(value)}`);
}

function invalidRequest(req: AcquireRequest): LockhostError | undefined {
  if (!validTtl(req.ttlMs)) return ttlError("ttlMs", req.ttlMs);
  if (!(req.queueMs === 0 || validTtl(req.queueMs))) {
    return new LockhostError("INVALID_ARGUMENT", `queueMs must be 0 or a positive integer number of milliseconds, got ${String(req.queueMs)}`);
  }
  if (!Number.isSafeInteger(req.limit) || req.limit < 0 || req.limit > MAX_PERMITS) {
    return new LockhostError("INVALID_ARGUMENT", `limit must be an integer from 0 to ${MAX_PERMITS}, got ${String(req.limit)}`);
  }
  if (req.mode !== "shared" && req.mode !== "exclusive") {
    return new LockhostError("INVALID_ARGUMENT", `mode must be "shared" or "exclusive", got ${JSON.stringify(req.mode)}`);
  }
  return undefined;
}
