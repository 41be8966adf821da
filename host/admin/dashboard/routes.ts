// The admin listener's dashboard routes: the page and its files (assets.ts), and the live feed
// as server-sent events (a snapshot first, then each lock event, schedule tick and audit line as
// it happens, the counters every second, and the backend's health as /readyz tells it, on each
// change). Which of them need the token is the route table's to say (../routes.ts).
//
// A stream's reader may stop reading (a stalled tab, a socket that never reads): what it has not
// taken is buffered on the host, so each stream gets MAX_STREAM_BUFFER_BYTES and a reader that
// falls further behind is dropped (the browser's reconnect starts over from a fresh snapshot).
// Before, a host with a churning plugin and 32 such sockets grew its heap by a gigabyte.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import type { LockService } from "../../locking/service.js";
import type { ActivityFeed } from "../feed.js";
import { reply } from "../reply.js";
import { loadAssets, type Asset } from "./assets.js";
import type { Access, FeedItem as WireItem, Health as WireHealth, Snapshot } from "./client/wire.js";
import { HealthWatch } from "./health-watch.js";

/** Event streams open at once: each costs a connection, a subscription and up to MAX_STREAM_BUFFER_BYTES. */
export const MAX_STREAMS = 32;
/** What one stream may have waiting for its reader before it is dropped. */
export const MAX_STREAM_BUFFER_BYTES = 1 << 20;
/** How often the counters are pushed, and a comment keeps idle proxies from closing the stream. */
const STATS_EVERY_MS = 1_000;
/** How soon after a lock event the counters follow it. */
const STATS_AFTER_EVENT_MS = 50;
const HEARTBEAT_EVERY_MS = 15_000;

const EVENT_STREAM_HEADERS = { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-store", connection: "keep-alive" };
const ASSET_HEADERS = {
  "cache-control": "no-store",
  // Everything the page loads comes from this listener; nothing inline runs.
  "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
};

/** What the dashboard reads. */
export interface DashboardSource {
  readonly service: LockService;
  readonly feed: ActivityFeed;
  readonly node: string;
  readonly log: Logger;
  /** What the page may offer (force-release buttons only when a token is configured). */
  readonly access: Access;
}

/** The dashboard's files and its event streams. */
export class Dashboard {
  #streams = 0;
  readonly #health: HealthWatch;
  // Read (or, from source, compiled) at the first request: a host nobody opens the page of never pays.
  #assets: Promise<ReadonlyMap<string, Asset>> | undefined;

  constructor(private readonly source: DashboardSource) {
    this.#health = new HealthWatch(source.service);
  }

  /** Event streams open now. */
  get streams(): number {
    return this.#streams;
  }

  /** Serves the page's file `file` ("index.html", "main.js", ...); false when there is none. */
  async file(file: string, res: ServerResponse): Promise<boolean> {
    this.#assets ??= loadAssets().catch((err: unknown) => {
      this.#assets = undefined; // a build made meanwhile is found by the next request
      throw err;
    });
    const asset = (await this.#assets).get(file);
    if (asset === undefined) return false;
    reply(res, 200, { "content-type": asset.type, ...ASSET_HEADERS }, asset.body);
    return true;
  }

  /** GET /events: the live feed; refused with 503 TOO_MANY_STREAMS beyond MAX_STREAMS. */
  events(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === "HEAD") {
      // The stream's headers, and no stream: nothing would read it.
      res.writeHead(200, EVENT_STREAM_HEADERS);
      res.end();
      return;
    }
    if (this.#streams >= MAX_STREAMS) {
      reply(
        res,
        503,
        { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", "retry-after": "5" },
        JSON.stringify({ code: "TOO_MANY_STREAMS", message: `too many event streams open (at most ${MAX_STREAMS}); close a dashboard or try again later` }),
      );
      return;
    }
    this.#streams++;
    this.#open(req, res, () => this.#streams--);
  }

  #open(req: IncomingMessage, res: ServerResponse, closed: () => void): void {
    const { service, feed, node, log, access } = this.source;
    res.writeHead(200, EVENT_STREAM_HEADERS);
    let done = false;
    const send = (text: string): void => {
      if (done) return;
      res.write(text);
      // Backpressure: what the reader has not taken stays here. Past the bound, it is dropped.
      if (res.writableLength > MAX_STREAM_BUFFER_BYTES) {
        log.info({ from: req.socket.remoteAddress, bufferedBytes: res.writableLength }, "dashboard event stream dropped: its reader fell behind");
        end();
        res.destroy();
      }
    };
    const event = (name: string, data: unknown): void => send(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`);
    const known: WireHealth | undefined = this.#health.last;
    const snapshot: Snapshot = {
      node,
      backend: service.backendName,
      distributed: service.distributed,
      access,
      stats: service.stats(),
      feed: feed.snapshot(),
      ...(known && { health: known }),
    };
    // The counters change with the events: they follow them shortly (once per burst), so the
    // cards never disagree with the lists for a whole STATS_EVERY_MS.
    let statsDue: NodeJS.Timeout | undefined;
    const unsubscribe = feed.subscribe((item) => {
      event("item", item satisfies WireItem);
      statsDue ??= setTimeout(() => {
        statsDue = undefined;
        event("stats", service.stats());
      }, STATS_AFTER_EVENT_MS);
    });
    const unwatch = this.#health.watch((now: WireHealth) => event("health", now));
    const stats = setInterval(() => event("stats", service.stats()), STATS_EVERY_MS);
    const heartbeat = setInterval(() => send(": keep-alive\n\n"), HEARTBEAT_EVERY_MS);
    stats.unref();
    heartbeat.unref();
    const end = (): void => {
      if (done) return;
      done = true;
      unsubscribe();
      unwatch();
      clearInterval(stats);
      clearInterval(heartbeat);
      clearTimeout(statsDue);
      closed();
    };
    // The response's close is the connection's end; the request's comes once its (empty) body is read.
    res.on("close", end);
    event("snapshot", snapshot);
  }
}
