// Who may use which admin route: the bearer token (compared in constant time), [admin] auth
// and metrics_open, and the Host header of a loopback listener (a web page cannot reach it
// through DNS rebinding: its requests name the attacker's host, not a loopback one).
import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";
import { isLoopbackHost } from "../config/listen.js";
import type { AdminAuth, AdminSettings } from "../config/types.js";
import type { AdminCaller } from "./feed.js";
import type { RouteAccess } from "./routes.js";

/** A refusal: the HTTP status, the body's code and message, and headers to add. */
export interface Refusal {
  readonly status: number;
  readonly code: string;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
}

/** The listener's access rules, from its settings. */
export class AdminAccess {
  readonly auth: AdminAuth;
  readonly metricsOpen: boolean;
  /** Whether the listener binds loopback only (then the Host header must name loopback too). */
  readonly loopback: boolean;
  readonly #digest: Buffer | undefined;

  constructor(settings: AdminSettings) {
    this.loopback = isLoopbackHost(settings.listen.host);
    this.auth = settings.auth ?? (this.loopback ? "writes" : "all");
    this.metricsOpen = settings.metricsOpen ?? false;
    this.#digest = settings.token === undefined ? undefined : digest(settings.token);
  }

  /** Whether a token is configured (force-release can be used at all). */
  get hasToken(): boolean {
    return this.#digest !== undefined;
  }

  /** Whether a route of `access` needs the token. */
  needsToken(access: RouteAccess): boolean {
    return access === "write" || (this.auth === "all" && (access === "read" || (access === "metrics" && !this.metricsOpen)));
  }

  /** The routes open without the token, as the start-up line and the warning name them. */
  openRoutes(routes: readonly { readonly path: string; readonly access: RouteAccess }[]): string[] {
    return routes.filter((r) => !this.needsToken(r.access)).map((r) => r.path.split("?", 1)[0]!);
  }

  /** Whether the request carries the configured token, a wrong one, or none; never "valid" when none is configured. */
  tokenOf(req: IncomingMessage): AdminCaller["token"] {
    const header = req.headers.authorization;
    const match = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (match === null) return "none";
    return this.#digest !== undefined && timingSafeEqual(digest(match[1]!), this.#digest) ? "valid" : "wrong";
  }

  /** Why a request with `token` may not use a route of `access`; undefined when it may. */
  refusal(access: RouteAccess, token: AdminCaller["token"], what: string): Refusal | undefined {
    if (!this.needsToken(access) || token === "valid") return undefined;
    if (this.#digest === undefined) {
      const why =
        access === "write" ? `${what} through the admin listener is disabled` : `${what} needs the admin token ([admin] auth = "all"), and none is configured`;
      return { status: 403, code: "PERMISSION_DENIED", message: `${why}: set [admin] token in the config` };
    }
    if (token === "none") {
      return {
        status: 401,
        code: "PERMISSION_DENIED",
        message: `${what} needs an Authorization: Bearer <token> header ([admin] token)`,
        headers: { "www-authenticate": 'Bearer realm="lockhost"' },
      };
    }
    return { status: 403, code: "PERMISSION_DENIED", message: "wrong admin token" };
  }

  /**
   * On a loopback listener, the Host header must name loopback (localhost, *.localhost,
   * 127.0.0.0/8, ::1), with any port: else a page the browser loaded from elsewhere could read
   * the listener through a name it re-pointed at 127.0.0.1 (DNS rebinding). Answers 421.
   */
  hostRefusal(req: IncomingMessage): Refusal | undefined {
    if (!this.loopback) return undefined;
    const host = req.headers.host;
    // HTTP/1.0 may send none; browsers always do.
    if (host === undefined) return undefined;
    const name = /^\[([^\]]+)\](?::\d*)?$/.exec(host)?.[1] ?? /^([^:]*)(?::\d*)?$/.exec(host)?.[1];
    if (name !== undefined && isLoopbackHost(name)) return undefined;
    return {
      status: 421,
      code: "HOST_NOT_ALLOWED",
      message:
        `this admin listener listens on loopback and answers requests for loopback names only (localhost, 127.0.0.1, [::1]), not ` +
        `Host: ${JSON.stringify(host.slice(0, 100))}`,
    };
  }
}

function digest(token: string): Buffer {
  return createHash("sha256").update(token).digest();
}
