// The admin listener: probes, stats, Prometheus metrics, the status of a lock, force-release
// and the dashboard, for operators, orchestrators and for `lockhost status` / `lockhost release
// --force --admin`. Its routes are one table (routes.ts); who may use which is access.ts's
// (the token, [admin] auth, the Host header of a loopback listener). It listens on loopback
// unless told otherwise, and over HTTPS when given a certificate (tls.ts).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { formatListen } from "../config/listen.js";
import type { AdminSettings } from "../config/types.js";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import type { LockService } from "../locking/service.js";
import { AdminAccess } from "./access.js";
import { Dashboard } from "./dashboard/routes.js";
import { ActivityFeed, type AdminCaller } from "./feed.js";
import { lockMetrics, type HostCounters, type LockMetrics } from "./metrics.js";
import { ADMIN_ROUTES, send, type AdminDeps, type AdminRoute, type RouteContext } from "./routes.js";
import { adminTls } from "./tls.js";

export type { AdminStatsBody } from "./routes.js";

/** What startAdminServer needs. */
export interface AdminServerOptions {
  /** The host's lock service: its stats, status and force-release are served. */
  readonly service: LockService;
  readonly settings: AdminSettings;
  readonly log: Logger;
  /** This host's node name (a label on every metric, and in /stats). */
  readonly node: string;
  /**
   * The activity the dashboard shows live (the host feeds it its schedule ticks too); when
   * absent the listener makes one of the service's lock events, and closes it with itself.
   */
  readonly feed?: ActivityFeed;
  /**
   * The host's counters beside the service's (its schedules' ticks by outcome, whether its
   * backend answers), shown in /stats and /metrics; absent for a bare lock service.
   */
  readonly host?: HostCounters;
  /**
   * The metrics /metrics renders (the host's, which its guests and scheduler feed too); when
   * absent the listener makes the service's, and stops them with itself.
   */
  readonly metrics?: LockMetrics;
  /**
   * Whether the host has loaded its plugins: until it says so /readyz answers 503 "starting"
   * (the host starts its listener first, so /livez answers while plugins load). Default: ready.
   */
  readonly started?: () => boolean;
  /** What POST /reload runs (the host's reload); absent: the route answers 404 NOT_FOUND. */
  readonly reload?: () => Promise<unknown>;
}

/** A running admin listener. */
export interface AdminServer {
  /** Base URL, e.g. "http://127.0.0.1:9464" or "https://…" (the real port when the config said 0). */
  readonly url: string;
  /** Stops listening and ends open connections. Idempotent. */
  close(): Promise<void>;
}

/** The longest request target served; lock names are at most ~600 bytes, encoded at most 3x. */
const MAX_URL_LENGTH = 4_096;

/**
 * Starts the admin listener: the routes of ADMIN_ROUTES (docs/operators.md lists them), each
 * GET route answering HEAD too, with the same status and headers and no body. A route the
 * settings protect needs `Authorization: Bearer <token>`: 401 without it, 403 with a wrong one
 * or when the config sets no token. Rejects with CONFIG_INVALID when the address cannot be
 * listened on or a TLS file cannot be used.
 */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const { service, settings, log, node } = options;
  const tls = adminTls(settings);
  const access = new AdminAccess(settings);
  const ownMetrics = options.metrics === undefined;
  const metrics = options.metrics ?? lockMetrics(service, node);
  if (options.host) metrics.showHost(options.host);
  const ownFeed = options.feed === undefined;
  const feed = options.feed ?? new ActivityFeed(service);
  const dashboard = new Dashboard({ service, feed, node, log, access: { forceRelease: access.hasToken, auth: access.auth } });
  const deps: AdminDeps = {
    service,
    feed,
    metrics,
    dashboard,
    log,
    node,
    ...(options.host && { host: options.host }),
    ...(options.reload && { reload: options.reload }),
    started: options.started ?? (() => true),
  };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    handle(req, res).catch((err: unknown) => {
      // A handler bug must not take the host down; the client gets a 500.
      log.error({ err: toLockhostError(err).message, url: req.url }, "admin request failed");
      if (!res.headersSent) send(res, 500, { code: "INTERNAL", message: "internal error" });
      else res.destroy();
    });
  };
  const server: Server = tls === undefined ? createServer(onRequest) : createHttpsServer(tls, onRequest);
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Bodies are never read: drain them so the connection can be reused.
    req.resume();
    const target = req.url ?? "/";
    if (target.length > MAX_URL_LENGTH) return send(res, 414, { code: "INVALID_ARGUMENT", message: "request target too long" });
    const wrongHost = access.hostRefusal(req);
    if (wrongHost) return send(res, wrongHost.status, { code: wrongHost.code, message: wrongHost.message });
    const q = target.indexOf("?");
    const path = q < 0 ? target : target.slice(0, q);
    const method = req.method ?? "GET";
    const matching = ADMIN_ROUTES.filter((r) => r.pattern.test(path));
    if (matching.length === 0) return send(res, 404, { code: "NOT_FOUND", message: `no such endpoint: ${path}` });
    const route = matching.find((r) => r.method === method || (r.method === "GET" && method === "HEAD"));
    if (route === undefined) {
      const allowed = [...new Set(matching.flatMap((r) => (r.method === "GET" ? ["GET", "HEAD"] : [r.method])))].join(", ");
      return send(res, 405, { code: "INVALID_ARGUMENT", message: `use ${allowed}` }, { allow: allowed });
    }
    const params = decodeAll(route.pattern.exec(path)!.slice(1));
    if (params === undefined) return send(res, 400, { code: "INVALID_ARGUMENT", message: "the lock name is not valid percent-encoding" });
    const caller: AdminCaller = { address: req.socket.remoteAddress ?? "unknown", token: access.tokenOf(req) };
    const ctx: RouteContext = { req, res, query: new URLSearchParams(q < 0 ? "" : target.slice(q + 1)), params, caller, deps };
    const refusal = access.refusal(route.access, caller.token, describe(route));
    if (refusal) {
      send(res, refusal.status, { code: refusal.code, message: refusal.message }, refusal.headers);
      route.refused?.(ctx, refusal.message);
      return;
    }
    await route.handle(ctx);
  }

  try {
    await listen(server, settings);
  } catch (err) {
    if (ownMetrics) metrics.close();
    if (ownFeed) feed.close();
    throw err;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `${tls === undefined ? "http" : "https"}://${host}:${address.port}`;
  log.info(
    {
      url,
      auth: access.auth,
      open: access.openRoutes(ADMIN_ROUTES),
      forceRelease: access.hasToken,
      tls: tls === undefined ? "off" : tls.requestCert ? "mutual" : "on",
    },
    "admin listener started",
  );
  let closing: Promise<void> | undefined;
  return {
    url,
    close() {
      closing ??= new Promise<void>((resolve) => {
        if (ownFeed) feed.close();
        if (ownMetrics) metrics.close();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** What a refusal calls the route ("force-release", "GET /stats"). */
function describe(route: AdminRoute): string {
  return route.access === "write" ? (route.call ?? route.path) : `${route.method} ${route.path.split("?", 1)[0]}`;
}

function listen(server: Server, settings: AdminSettings): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(new LockhostError("CONFIG_INVALID", `[admin] listen: cannot listen on ${formatListen(settings.listen)} (${err.code ?? err.message})`));
    };
    server.once("error", onError);
    server.listen(settings.listen.port, settings.listen.host, () => {
      server.off("error", onError);
      // Later socket errors are per connection; they must never reach the process.
      server.on("error", () => undefined);
      resolve();
    });
  });
}

function decodeAll(segments: readonly string[]): string[] | undefined {
  try {
    return segments.map((s) => decodeURIComponent(s));
  } catch {
    return undefined;
  }
}
