// The admin listener's dashboard routes: the page and its files (assets.ts), and the live feed
// as server-sent events (a snapshot first, then each lock event, schedule tick and audit line as
// it happens, the counters every second, and the backend's health as /readyz tells it, on each
// change). Reading needs no token, as /stats does; the page's force-release button goes through
// the token-checked POST endpoint.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { LockService } from "../../locking/service.js";
import type { ActivityFeed } from "../feed.js";
import { reply } from "../reply.js";
import { loadAssets, type Asset } from "./assets.js";
import type { FeedItem as WireItem, Health as WireHealth, Snapshot } from "./client/wire.js";
import { HealthWatch } from "./health-watch.js";

/** Event streams open at once: each costs a connection and a subscription. */
const MAX_STREAMS = 32;
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

/** The page's address, and where its files are served from (its modules import each other relatively). */
const PAGE_PATHS = new Set(["/", "/dashboard"]);
const FILES = "/dashboard/";
/** Browsers ask for it on every page of the listener. */
const FAVICON = "/favicon.ico";

/** What the routes read. */
export interface DashboardSource {
  readonly service: LockService;
  readonly feed: ActivityFeed;
  readonly node: string;
}

/** Serves the dashboard's GET routes; resolves to false when `path` is not one of them. */
export function dashboardRoutes(source: DashboardSource): (path: string, req: IncomingMessage, res: ServerResponse) => Promise<boolean> {
  let streams = 0;
  const health = new HealthWatch(source.service);
  // Read (or, from source, compiled) at the first request: a host nobody opens the page of never pays.
  let assets: Promise<ReadonlyMap<string, Asset>> | undefined;
  return async (path, req, res) => {
    const file = PAGE_PATHS.has(path) ? "index.html" : path === FAVICON ? "favicon.svg" : path.startsWith(FILES) ? path.slice(FILES.length) : undefined;
    if (file !== undefined) {
      assets ??= loadAssets().catch((err: unknown) => {
        assets = undefined; // a build made meanwhile is found by the next request
        throw err;
      });
      const asset = (await assets).get(file);
      if (asset === undefined) return false;
      reply(res, 200, { "content-type": asset.type, ...ASSET_HEADERS }, asset.body);
      return true;
    }
    if (path !== "/events") return false;
    if (req.method === "HEAD") {
      // The stream's headers, and no stream: nothing would read it.
      res.writeHead(200, EVENT_STREAM_HEADERS);
      res.end();
      return true;
    }
    if (streams >= MAX_STREAMS) {
      res.writeHead(503, { "content-type": "application/json; charset=utf-8", "retry-after": "5" });
      res.end(JSON.stringify({ code: "BACKEND_UNAVAILABLE", message: `too many dashboards connected (at most ${MAX_STREAMS})` }));
      return true;
    }
    streams++;
    openStream(source, health, res, () => streams--);
    return true;
  };
}

function openStream(source: DashboardSource, health: HealthWatch, res: ServerResponse, closed: () => void): void {
  const { service, feed, node } = source;
  res.writeHead(200, EVENT_STREAM_HEADERS);
  const send = (event: string, data: unknown): void => void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  const known: WireHealth | undefined = health.last;
  const snapshot: Snapshot = { node, backend: service.backendKind, distributed: service.distributed, stats: service.stats(), feed: feed.snapshot(), ...(known && { health: known }) };
  send("snapshot", snapshot);
  const unwatch = health.watch((now: WireHealth) => send("health", now));
  // The counters change with the events: they follow them shortly (once per burst), so the
  // cards never disagree with the lists for a whole STATS_EVERY_MS.
  let statsDue: NodeJS.Timeout | undefined;
  const unsubscribe = feed.subscribe((item) => {
    send("item", item satisfies WireItem);
    statsDue ??= setTimeout(() => {
      statsDue = undefined;
      send("stats", service.stats());
    }, STATS_AFTER_EVENT_MS);
  });
  const stats = setInterval(() => send("stats", service.stats()), STATS_EVERY_MS);
  const heartbeat = setInterval(() => void res.write(": keep-alive\n\n"), HEARTBEAT_EVERY_MS);
  stats.unref();
  heartbeat.unref();
  let done = false;
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
}
