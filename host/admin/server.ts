// The admin HTTP listener: stats, Prometheus metrics, the status of a lock and force-release,
// for operators and for `lockhost status` / `lockhost release --force --admin`. It listens on
// loopback unless told otherwise, and force-release needs the bearer token from the config:
// reading is harmless, deleting someone's lock is not.
import { createHash, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Logger } from "pino";
import { formatListen } from "../config/listen.js";
import type { AdminSettings } from "../config/types.js";
import { LockhostError, toLockhostError, type ErrorCode } from "../../kit/errors.js";
import type { LockService } from "../locking/service.js";
import type { ListPage } from "./dashboard/client/wire.js";
import { dashboardRoutes } from "./dashboard/routes.js";
import { audit } from "./audit.js";
import { ActivityFeed, type AdminCaller } from "./feed.js";
import { MAX_LIST_LIMIT } from "../locking/list.js";
import { lockMetrics, type HostCounters, type LockMetrics } from "./metrics.js";
import { readiness } from "./readiness.js";
import { reply } from "./reply.js";
import { checkKind, LOCK_KINDS, MUTEX, type LockKind } from "../../kit/kinds.js";
import type { TickCounts } from "../scheduler/scheduler.js";

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
}

/** A running admin listener. */
export interface AdminServer {
  /** Base URL, e.g. "http://127.0.0.1:9464" (the real port when the config said 0). */
  readonly url: string;
  /** Stops listening and ends open connections. Idempotent. */
  close(): Promise<void>;
}

/** The body of GET /stats. */
export interface AdminStatsBody {
  readonly node: string;
  readonly backend: string;
  readonly distributed: boolean;
  readonly stats: ReturnType<LockService["stats"]>;
  /** With a host: whether its backend answered its last check. */
  readonly backendUp?: boolean;
  /** With a host: its schedules' ticks by id and outcome (an outage's skips are skipped_error). */
  readonly schedules?: Readonly<Record<string, TickCounts>>;
}

const HTTP_STATUS: Partial<Record<ErrorCode, number>> = {
  INVALID_ARGUMENT: 400,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  BACKEND_UNAVAILABLE: 503,
  CLOSED: 503,
};

/** The longest request target served; lock names are at most ~600 bytes, encoded at most 3x. */
const MAX_URL_LENGTH = 4_096;

/**
 * Starts the admin listener. Endpoints: `GET /healthz` and `GET /readyz` (200 while the
 * backend answers, 503 with its error when it does not), `GET /stats` (JSON, AdminStatsBody:
 * with a host, its schedules' ticks by outcome and whether its backend answers),
 * `GET /metrics` (Prometheus text), `GET /locks?prefix=&plugin=&limit=&cursor=&kind=` (one page of
 * held locks of every kind or of `kind`, LockListPage), `GET /locks/<name>?kind=` (the lock's status, name URL-encoded; its owner
 * token only with the bearer token; `heldElsewhere` when free), the
 * dashboard (`GET /` or `/dashboard`, and `GET /events`: its live feed as server-sent events)
 * and `POST /locks/<name>/force-release` (needs `Authorization: Bearer <token>`: 401 without
 * it, 403 with a wrong one or when the config sets no token). Every GET route answers HEAD too,
 * with the same status and headers and no body (monitors and load balancers probe with it).
 * Rejects with CONFIG_INVALID when the address cannot be listened on.
 */
export async function startAdminServer(options: AdminServerOptions): Promise<AdminServer> {
  const { service, settings, log, node } = options;
  const ownMetrics = options.metrics === undefined;
  const metrics = options.metrics ?? lockMetrics(service, node);
  if (options.host) metrics.showHost(options.host);
  const ownFeed = options.feed === undefined;
  const feed = options.feed ?? new ActivityFeed(service);
  const dashboard = dashboardRoutes({ service, feed, node });
  const tokenDigest = settings.token === undefined ? undefined : digest(settings.token);
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      // A handler bug must not take the host down; the client gets a 500.
      log.error({ err: toLockhostError(err).message, url: req.url }, "admin request failed");
      if (!res.headersSent) send(res, 500, { code: "INTERNAL", message: "internal error" });
      else res.destroy();
    });
  });
  server.keepAliveTimeout = 5_000;
  server.headersTimeout = 10_000;
  server.requestTimeout = 30_000;

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Bodies are never read: drain them so the connection can be reused.
    req.resume();
    const target = req.url ?? "/";
    if (target.length > MAX_URL_LENGTH) return send(res, 414, { code: "INVALID_ARGUMENT", message: "request target too long" });
    const path = target.split("?", 1)[0]!;
    const method = req.method ?? "GET";
    if (path === "/healthz" || path === "/readyz") {
      if (!only(method, "GET", res)) return;
      // The host is of use only while its backend answers: asked afresh each time.
      const ready = await readiness(service);
      return send(res, ready.ok ? 200 : 503, ready);
    }
    if (path === "/stats") {
      if (!only(method, "GET", res)) return;
      const { host } = options;
      const body: AdminStatsBody = {
        node, backend: service.backendKind, distributed: service.distributed, stats: service.stats(),
        ...(host && { backendUp: host.backendUp, schedules: host.ticks() }),
      };
      return send(res, 200, body);
    }
    if (path === "/metrics") {
      if (!only(method, "GET", res)) return;
      const text = await metrics.render();
      reply(res, 200, { "content-type": metrics.registry.contentType }, text);
      return;
    }
    if (path === "/locks") {
      if (!only(method, "GET", res)) return;
      const query = new URLSearchParams(target.slice(path.length + 1));
      const limitText = query.get("limit");
      const limit = limitText === null ? undefined : Number(limitText);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIST_LIMIT)) {
        return send(res, 400, { code: "INVALID_ARGUMENT", message: `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(limitText)}` });
      }
      const prefix = query.get("prefix");
      const plugin = query.get("plugin");
      const cursor = query.get("cursor");
      const kind = query.get("kind");
      return answer(res, (): Promise<ListPage> =>
        service.list({
          ...(limit !== undefined && { limit }), ...(prefix && { prefix }), ...(plugin && { plugin }), ...(cursor && { cursor }),
          ...(kind !== null && { kind: checkKind(kind, LOCK_KINDS) }),
        }),
      );
    }
    if ((method === "GET" || method === "HEAD") && (await dashboard(path, req, res))) return;
    // ?kind=<kind>: the lock of that kind of the name (default: its mutex), as each row of /locks names it.
    const kindText = new URLSearchParams(target.slice(path.length + 1)).get("kind");
    let asked: LockKind | undefined;
    try {
      asked = kindText === null ? undefined : checkKind(kindText, LOCK_KINDS);
    } catch (err) {
      return send(res, 400, { code: "INVALID_ARGUMENT", message: (err as Error).message });
    }
    const kind = asked ?? MUTEX.kind;
    const force = /^\/locks\/([^/]+)\/force-release$/.exec(path);
    if (force) {
      if (!only(method, "POST", res)) return;
      const name = decode(force[1]!, res);
      if (name === undefined) return;
      const by: AdminCaller = { address: req.socket.remoteAddress ?? "unknown", token: tokenOf(req) };
      const refusal = refused(by.token, res);
      if (refusal !== undefined) return audit(log, feed, { action: "force-release", name, kind, outcome: "refused", by, detail: refusal });
      return answer(res, async () => {
        let holders: number;
        try {
          holders = await service.forceRelease({ name }, { kind });
        } catch (err) {
          audit(log, feed, { action: "force-release", name, kind, outcome: "failed", by, detail: toLockhostError(err).message });
          throw err;
        }
        audit(log, feed, { action: "force-release", name, kind, outcome: holders > 0 ? "released" : "not-held", holders, by });
        return { name, kind, released: holders > 0, holders };
      });
    }
    const lock = /^\/locks\/([^/]+)$/.exec(path);
    if (lock) {
      if (!only(method, "GET", res)) return;
      const name = decode(lock[1]!, res);
      if (name === undefined) return;
      // An owner token lets whoever has it release or restore the lock: shown only to the token's holder.
      const showOwner = tokenOf(req) === "valid";
      return answer(res, () => service.status({ name }, { kind, owners: showOwner }));
    }
    send(res, 404, { code: "NOT_FOUND", message: `no such endpoint: ${path}` });
  }

  /** Whether the request carries the configured token (checked in constant time), a wrong one, or none; never "valid" when none is configured. */
  function tokenOf(req: IncomingMessage): AdminCaller["token"] {
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null) return "none";
    return tokenDigest !== undefined && timingSafeEqual(digest(match[1]!), tokenDigest) ? "valid" : "wrong";
  }

  /** Answers 401/403 itself and says why when a force-release may not go on; undefined when it may. */
  function refused(token: AdminCaller["token"], res: ServerResponse): string | undefined {
    if (tokenDigest === undefined) {
      const message = "force-release through the admin listener is disabled: set [admin] token in the config";
      send(res, 403, { code: "PERMISSION_DENIED", message });
      return message;
    }
    if (token === "none") {
      res.setHeader("www-authenticate", 'Bearer realm="lockhost"');
      const message = "force-release needs an Authorization: Bearer <token> header ([admin] token)";
      send(res, 401, { code: "PERMISSION_DENIED", message });
      return message;
    }
    if (token === "wrong") {
      send(res, 403, { code: "PERMISSION_DENIED", message: "wrong admin token" });
      return "wrong admin token";
    }
    return undefined;
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
  const url = `http://${host}:${address.port}`;
  log.info({ url, forceRelease: tokenDigest !== undefined }, "admin listener started");
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

function listen(server: Server, settings: AdminSettings): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException): void => {
      reject(
        new LockhostError(
          "CONFIG_INVALID",
          `[admin] listen: cannot listen on ${formatListen(settings.listen)} (${err.code ?? err.message})`,
        ),
      );
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

/** Runs a service call and answers with its result, or with its error's code and message. */
async function answer(res: ServerResponse, call: () => Promise<unknown>): Promise<void> {
  try {
    send(res, 200, await call());
  } catch (err) {
    const e = toLockhostError(err);
    send(res, HTTP_STATUS[e.code] ?? 500, { code: e.code, message: e.message });
  }
}

/** Whether `method` may be used on a route that takes `allowed` (HEAD wherever GET is); answers 405 when not. */
function only(method: string, allowed: "GET" | "POST", res: ServerResponse): boolean {
  if (method === allowed || (allowed === "GET" && method === "HEAD")) return true;
  const methods = allowed === "GET" ? "GET, HEAD" : allowed;
  res.setHeader("allow", methods);
  send(res, 405, { code: "INVALID_ARGUMENT", message: `use ${methods}` });
  return false;
}

function decode(segment: string, res: ServerResponse): string | undefined {
  try {
    return decodeURIComponent(segment);
  } catch {
    send(res, 400, { code: "INVALID_ARGUMENT", message: "the lock name is not valid percent-encoding" });
    return undefined;
  }
}

function send(res: ServerResponse, status: number, body: unknown): void {
  reply(res, status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" }, JSON.stringify(body));
}


function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
