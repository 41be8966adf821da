// The admin listener's routes: ONE table of (method, path, access, doc, handler). The server
// (server.ts) matches a request against it, checks the Host header and the token the row's
// access asks for, and calls the handler; docs/operators.md's route list is written from it.
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Logger } from "pino";
import { toLockhostError, type ErrorCode } from "../../kit/errors.js";
import { checkKind, LOCK_KINDS, MUTEX, type LockKind } from "../../kit/kinds.js";
import { MAX_LIST_LIMIT } from "../locking/list.js";
import type { LockService } from "../locking/service.js";
import type { TickCounts } from "../scheduler/scheduler.js";
import { audit } from "./audit.js";
import type { Dashboard } from "./dashboard/routes.js";
import type { ListPage } from "./dashboard/client/wire.js";
import type { ActivityFeed, AdminCaller } from "./feed.js";
import type { HostCounters, LockMetrics } from "./metrics.js";
import { readiness } from "./readiness.js";
import { reply } from "./reply.js";

/**
 * Who may use a route. "open": anyone who reaches the listener (the probes, the dashboard's
 * files, which hold no data); "read": anyone with [admin] auth = "writes", else the token's
 * holder; "metrics": as "read", unless metrics_open; "write": the token's holder only.
 */
export type RouteAccess = "open" | "read" | "metrics" | "write";

/** What a handler reads and acts on. */
export interface AdminDeps {
  readonly service: LockService;
  readonly feed: ActivityFeed;
  readonly metrics: LockMetrics;
  readonly dashboard: Dashboard;
  readonly log: Logger;
  readonly node: string;
  readonly host?: HostCounters;
  /** Whether the host has loaded its plugins (/readyz answers 503 "starting" before). */
  readonly started: () => boolean;
  /** The host's reload (POST /reload): resolves to what changed, rejects with why nothing did. */
  readonly reload?: () => Promise<unknown>;
}

/** One request, as a handler sees it. */
export interface RouteContext {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly query: URLSearchParams;
  /** The path pattern's captures, percent-decoded. */
  readonly params: readonly string[];
  readonly caller: AdminCaller;
  readonly deps: AdminDeps;
}

/** The routes the CLI's client calls. */
export type AdminCall = "stats" | "list" | "status" | "force-release" | "reload";

/** One row of the table. */
export interface AdminRoute {
  /** GET routes answer HEAD too. */
  readonly method: "GET" | "POST";
  /**
   * As the docs show it, and as the CLI's client fills it in: each `<param>` is a capture of the
   * pattern, the keys after `?` the query parameters the route reads.
   */
  readonly path: string;
  /** The name the CLI's client (host/cli/admin-client.ts) asks for this route by, for a route it calls. */
  readonly call?: AdminCall;
  /** The whole path; its groups are the params. */
  readonly pattern: RegExp;
  readonly access: RouteAccess;
  readonly doc: string;
  readonly handle: (ctx: RouteContext) => Promise<void> | void;
  /** Told when the access check refused the request (force-release's audit line). */
  readonly refused?: (ctx: RouteContext, why: string) => void;
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

/** How a reload that changed nothing answers, by code. */
const RELOAD_STATUS: Partial<Record<ErrorCode, number>> = { NOT_RELOADABLE: 409, CONFIG_INVALID: 422, ABI_UNSUPPORTED: 422 };

const live = ({ res }: RouteContext): void => send(res, 200, { ok: true });

/** Every admin route. The order matters only where two patterns could match one path: none do. */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    method: "GET",
    path: "/livez",
    pattern: /^\/livez$/,
    access: "open",
    doc: 'liveness: 200 `{"ok":true}` while the process and its event loop work, whatever the backend does',
    handle: live,
  },
  {
    method: "GET",
    path: "/healthz",
    pattern: /^\/healthz$/,
    access: "open",
    doc:
      "the same as `/livez`, for older probes (it used to answer 503 while the backend was down, so a liveness probe on it restarted every pod in " +
      "a backend outage)",
    handle: live,
  },
  {
    method: "GET",
    path: "/readyz",
    pattern: /^\/readyz$/,
    access: "open",
    doc:
      'readiness: 200 `{"ok":true,"backend":…}` while the backend answers (asked afresh each time); 503 `{"ok":false,"status":"starting",…}` ' +
      'until the plugins are loaded, 503 `{"ok":false,"backend":…,"message":…}` while the backend does not answer',
    async handle({ res, deps }) {
      if (!deps.started())
        return send(res, 503, { ok: false, status: "starting", backend: deps.service.backendName, message: "the host is loading its plugins" });
      const ready = await readiness(deps.service);
      send(res, ready.ok ? 200 : 503, ready);
    },
  },
  {
    method: "GET",
    path: "/stats",
    call: "stats",
    pattern: /^\/stats$/,
    access: "read",
    doc:
      "`{ node, backend, distributed, stats, backendUp, schedules }`: `LockService.stats()`, whether the backend answered the host's last check, " +
      "and each schedule's ticks on this node by outcome (`ran`, `failed`, `skipped_contended`, `skipped_overlap`, `skipped_error`, `skipped_lost`)",
    handle({ res, deps }) {
      const { host, service, node } = deps;
      const body: AdminStatsBody = {
        node,
        backend: service.backendName,
        distributed: service.distributed,
        stats: service.stats(),
        ...(host && { backendUp: host.backendUp, schedules: host.ticks() }),
      };
      send(res, 200, body);
    },
  },
  {
    method: "GET",
    path: "/metrics",
    pattern: /^\/metrics$/,
    access: "metrics",
    doc: "Prometheus text (prom-client), every metric labelled `node` and `backend`",
    async handle({ res, deps }) {
      const text = await deps.metrics.render();
      reply(res, 200, { "content-type": deps.metrics.registry.contentType }, text);
    },
  },
  {
    method: "GET",
    path: "/locks?prefix=&plugin=&limit=&cursor=&kind=",
    call: "list",
    pattern: /^\/locks$/,
    access: "read",
    doc:
      "one page of held locks of every kind (or of `kind`), `{ locks, cursor }`, each with its `kind` and `mode`, as `lockhost locks --json` " +
      "prints it (no owner tokens)",
    handle({ res, query, deps }) {
      const limitText = query.get("limit");
      const limit = limitText === null ? undefined : Number(limitText);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= MAX_LIST_LIMIT)) {
        return send(res, 400, { code: "INVALID_ARGUMENT", message: `limit must be an integer from 1 to ${MAX_LIST_LIMIT}, got ${JSON.stringify(limitText)}` });
      }
      const prefix = query.get("prefix");
      const plugin = query.get("plugin");
      const cursor = query.get("cursor");
      const kind = query.get("kind");
      return answer(
        res,
        (): Promise<ListPage> =>
          deps.service.list({
            ...(limit !== undefined && { limit }),
            ...(prefix && { prefix }),
            ...(plugin && { plugin }),
            ...(cursor && { cursor }),
            ...(kind !== null && { kind: checkKind(kind, LOCK_KINDS) }),
          }),
      );
    },
  },
  {
    method: "GET",
    path: "/locks/<name>?kind=",
    call: "status",
    pattern: /^\/locks\/([^/]+)$/,
    access: "read",
    doc:
      "the status of one lock (name URL-encoded, e.g. `global%3Aorders`; `kind` default `mutex`), with `heldElsewhere` when it is free and a lock " +
      "of its key is held in the other scope or of another kind; its owner tokens only with the token",
    handle({ res, query, params, caller, deps }) {
      const kind = kindOf(query, res);
      if (kind === undefined) return;
      // An owner token lets whoever has it release or restore the lock: shown only to the token's holder.
      return answer(res, () => deps.service.status({ name: params[0]! }, { kind, owners: caller.token === "valid" }));
    },
  },
  {
    method: "POST",
    path: "/locks/<name>/force-release?kind=",
    call: "force-release",
    pattern: /^\/locks\/([^/]+)\/force-release$/,
    access: "write",
    doc: "needs `Authorization: Bearer <token>`: 401 without it, 403 with a wrong one or when the config sets no token; `{ name, kind, released, holders }`",
    handle({ res, query, params, caller, deps }) {
      const kind = kindOf(query, res);
      if (kind === undefined) return;
      const name = params[0]!;
      const { service, log, feed } = deps;
      return answer(res, async () => {
        let holders: number;
        try {
          holders = await service.forceRelease({ name }, { kind });
        } catch (err) {
          audit(log, feed, { action: "force-release", name, kind, outcome: "failed", by: caller, detail: toLockhostError(err).message });
          throw err;
        }
        audit(log, feed, { action: "force-release", name, kind, outcome: holders > 0 ? "released" : "not-held", holders, by: caller });
        return { name, kind, released: holders > 0, holders };
      });
    },
    refused({ query, params, caller, deps }, why) {
      const kindText = query.get("kind");
      const kind = (LOCK_KINDS as readonly string[]).includes(kindText ?? "") ? (kindText as LockKind) : MUTEX.kind;
      audit(deps.log, deps.feed, { action: "force-release", name: params[0]!, kind, outcome: "refused", by: caller, detail: why });
    },
  },
  {
    method: "POST",
    path: "/reload",
    call: "reload",
    pattern: /^\/reload$/,
    access: "write",
    doc:
      'needs the token, as force-release: re-reads the host\'s config file and applies it (docs/operators.md, "Reloading"); 200 `{ source, ' +
      "plugins: { added, replaced, kept, removed }, schedules: { added, changed, removed } }`; nothing changes on an error: 409 `NOT_RELOADABLE` " +
      "naming each key a reload cannot change, 422 `CONFIG_INVALID` or `ABI_UNSUPPORTED`, 503 `CLOSED` while stopping. One reload runs at a time: a " +
      "second waits for it",
    async handle({ res, caller, deps }) {
      const { reload, log } = deps;
      if (!reload) return send(res, 404, { code: "NOT_FOUND", message: "this listener serves no host to reload" });
      log.info({ by: caller.address }, "reload asked for through the admin listener (POST /reload)");
      try {
        send(res, 200, await reload());
      } catch (err) {
        const e = toLockhostError(err);
        send(res, RELOAD_STATUS[e.code] ?? HTTP_STATUS[e.code] ?? 500, { code: e.code, message: e.message });
      }
    },
  },
  {
    method: "GET",
    path: "/events",
    pattern: /^\/events$/,
    access: "read",
    doc:
      "the dashboard's feed as server-sent events: `snapshot` (recent activity, per-plugin counters, per-second series, recent hold and wait " +
      "durations), then `item` per lock event, schedule run or audit line, `stats` every second, `health` (what `/readyz` says) on each change. At " +
      "most 32 at once (503 `TOO_MANY_STREAMS` beyond); a reader more than 1 MiB behind is dropped",
    handle: ({ req, res, deps }) => deps.dashboard.events(req, res),
  },
  {
    method: "GET",
    path: "/",
    pattern: /^\/(?:dashboard)?$/,
    access: "open",
    doc: "the live dashboard (also `/dashboard`): static files only, no data; the page gets its data from `/events` and `/locks`",
    handle: ({ res, deps }) => file(deps, "index.html", res),
  },
  {
    method: "GET",
    path: "/dashboard/<file>",
    pattern: /^\/dashboard\/([^/]+)$/,
    access: "open",
    doc: "the dashboard's script, stylesheet and icon",
    handle: ({ res, params, deps }) => file(deps, params[0]!, res),
  },
  {
    method: "GET",
    path: "/favicon.ico",
    pattern: /^\/favicon\.ico$/,
    access: "open",
    doc: "the dashboard's icon",
    handle: ({ res, deps }) => file(deps, "favicon.svg", res),
  },
];

async function file(deps: AdminDeps, name: string, res: ServerResponse): Promise<void> {
  if (!(await deps.dashboard.file(name, res))) send(res, 404, { code: "NOT_FOUND", message: `no such file: /dashboard/${name}` });
}

/** ?kind=<kind>: the lock of that kind of the name (default: its mutex), as each row of /locks names it; undefined after a 400. */
function kindOf(query: URLSearchParams, res: ServerResponse): LockKind | undefined {
  const text = query.get("kind");
  try {
    return text === null ? MUTEX.kind : checkKind(text, LOCK_KINDS);
  } catch (err) {
    send(res, 400, { code: "INVALID_ARGUMENT", message: (err as Error).message });
    return undefined;
  }
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

/** Answers JSON. */
export function send(res: ServerResponse, status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): void {
  reply(res, status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers }, JSON.stringify(body));
}
