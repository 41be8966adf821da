// The CLI's side of the admin listener: which URL to talk to, and the three requests the CLI
// makes (stats, a lock's status, force-release). Every way of not reaching a listener ends in
// AdminUnreachable, so the CLI can tell the operator how to enable one instead of printing a
// socket error.
import { request as httpRequestRaw } from "node:http";
import { request as httpsRequest } from "node:https";
import { text as readText } from "node:stream/consumers";
import type { AdminStatsBody } from "../admin/server.js";
import { formatListen } from "../config/listen.js";
import type { AdminSettings } from "../config/types.js";
import { LockhostError, type ErrorCode } from "../../kit/errors.js";
import type { ListOptions, LockListPage, LockRef, LockStatus } from "../locking/service.js";
import type { LockKind } from "../../kit/kinds.js";

/** The admin listener's path of a lock (and of an action on it). */
function lockPath(name: string, kind: LockKind | undefined, action = ""): string {
  return `/locks/${encodeURIComponent(name)}${action}${kind === undefined ? "" : `?kind=${kind}`}`;
}

/** How long the CLI waits for the admin listener before saying it does not answer. */
const REQUEST_TIMEOUT_MS = 5_000;

/** What to write in a config to get an admin listener: shown whenever none answers. */
export const ENABLE_ADMIN_HINT = `To enable it, add to the config of 'lockhost run' and restart it:

  [admin]
  listen = "127.0.0.1:9464"
  token = "\${LOCKHOST_ADMIN_TOKEN}"   # at least 16 characters; needed for release --force

then run this command with the same --config, or pass --admin http://127.0.0.1:9464.`;

/** No admin listener to talk to: none configured, or none answering at the URL. */
export class AdminUnreachable extends Error {
  override readonly name = "AdminUnreachable";
}

/**
 * The base URL of the admin listener: `--admin` when given (a bare "host:port" is read as
 * http), else the config's [admin] listen.
 *
 * @throws AdminUnreachable when neither names a listener the CLI can reach.
 */
export function adminUrl(flag: string | undefined, admin: AdminSettings | undefined, source: string | undefined): string {
  if (flag !== undefined) {
    const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(flag) ? flag : `http://${flag}`;
    const url = URL.canParse(text) ? new URL(text) : undefined;
    if (!url || !/^https?:$/.test(url.protocol)) {
      throw new LockhostError("INVALID_ARGUMENT", `--admin must be the admin listener's URL (e.g. http://127.0.0.1:9464), got "${flag}"`);
    }
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, "")}`;
  }
  const file = source ?? "the config";
  if (!admin) throw new AdminUnreachable(`${file} has no [admin] table, so the running host has no admin listener to ask.\n${ENABLE_ADMIN_HINT}`);
  if (admin.listen.port === 0) {
    throw new AdminUnreachable(
      `${file}: [admin] listen has port 0, so the host picked a free port at startup; pass --admin with the URL its log shows ("admin listener started").`,
    );
  }
  // A host listening on every interface is reachable on loopback.
  const host = admin.listen.host === "0.0.0.0" ? "127.0.0.1" : admin.listen.host === "::" ? "::1" : admin.listen.host;
  return `http://${formatListen({ host, port: admin.listen.port })}`;
}

/** A client of one admin listener. */
export class AdminClient {
  constructor(
    readonly url: string,
    /** Sent as a bearer token on force-release only; never printed. Absent: the listener answers 401. */
    private readonly token: string | undefined,
  ) {}

  /** GET /stats. */
  stats(): Promise<AdminStatsBody> {
    return this.#request("GET", "/stats") as Promise<AdminStatsBody>;
  }

  /** GET /locks?…: one page of held locks. */
  list(options: ListOptions): Promise<LockListPage> {
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(options)) if (value !== undefined) query.set(name, String(value));
    return this.#request("GET", `/locks?${query}`) as Promise<LockListPage>;
  }

  /**
   * GET /locks/<name>?kind=…: the lock's status (with the token, its owner tokens too: the
   * listener decides by the token, so `owners` asks nothing more). Full names only: the
   * listener's locks are named as it lists them.
   */
  status(ref: { readonly name: string }, options: { readonly kind?: LockKind; readonly owners?: boolean } = {}): Promise<LockStatus> {
    return this.#request("GET", lockPath(ref.name, options.kind), this.token) as Promise<LockStatus>;
  }

  /** GET /locks/<name>?kind=…: when the lock is free, the locks of its key held in the other scope or of another kind. */
  async heldElsewhere(name: string, kind: LockKind): Promise<readonly LockRef[]> {
    const body = (await this.#request("GET", lockPath(name, kind))) as { held?: unknown; heldElsewhere?: readonly LockRef[] };
    return body.held === false && Array.isArray(body.heldElsewhere) ? body.heldElsewhere : [];
  }

  /** POST /locks/<name>/force-release?kind=…: how many held it. */
  async forceRelease(ref: { readonly name: string }, options: { readonly kind?: LockKind } = {}): Promise<number> {
    // Sent even without a token: the listener's 401 is the answer, and an unreachable
    // listener is reported as such rather than as a missing token.
    const body = (await this.#request("POST", lockPath(ref.name, options.kind, "/force-release"), this.token)) as { holders?: unknown };
    return typeof body.holders === "number" ? body.holders : 0;
  }

  async #request(method: string, path: string, token?: string): Promise<unknown> {
    let res: { status: number; text: string };
    try {
      res = await httpRequest(method, `${this.url}${path}`, {
        accept: "application/json",
        ...(token !== undefined && { authorization: `Bearer ${token}` }),
      });
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      throw new AdminUnreachable(`no admin listener answers at ${this.url} (${why}). Is 'lockhost run' running, with an [admin] table in its config?\n${ENABLE_ADMIN_HINT}`);
    }
    let body: unknown;
    try {
      body = JSON.parse(res.text);
    } catch {
      throw new AdminUnreachable(`${this.url} answered ${res.status} with something that is not the lockhost admin listener's JSON; is --admin the right URL?`);
    }
    if (res.status >= 200 && res.status < 300) return body;
    const { code, message } = (body ?? {}) as { code?: unknown; message?: unknown };
    // The listener sends lockhost's own codes; anything else is shown as INTERNAL.
    const known = typeof code === "string" && /^[A-Z_]+$/.test(code);
    const why = typeof message === "string" ? message : `HTTP ${res.status}`;
    // Every endpoint the CLI uses exists on a lockhost admin listener: a 404 means another server.
    if (res.status === 404) throw new AdminUnreachable(`${this.url}${path} answered 404 (${why}); is --admin the lockhost admin listener's URL?`);
    if (res.status === 401) {
      throw new LockhostError("PERMISSION_DENIED", `the admin listener refused: ${why}; set LOCKHOST_ADMIN_TOKEN, or [admin] token in the --config file`);
    }
    if (res.status === 403) throw new LockhostError("PERMISSION_DENIED", `the admin listener refused: ${why}`);
    throw new LockhostError(known ? (code as ErrorCode) : "INTERNAL", `the admin listener answered ${res.status}: ${why}`);
  }
}

/**
 * One request with node:http(s) rather than fetch, which refuses ports on the WHATWG "bad
 * port" list (6000, 6665, ...) that an operator may well listen on.
 */
function httpRequest(method: string, url: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const send = url.startsWith("https:") ? httpsRequest : httpRequestRaw;
    const req = send(url, { method, headers, timeout: REQUEST_TIMEOUT_MS }, (res) => {
      readText(res).then((body) => resolve({ status: res.statusCode ?? 0, text: body }), reject);
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error(`no answer in ${REQUEST_TIMEOUT_MS} ms`), { code: "ETIMEDOUT" })));
    req.on("error", reject);
    req.end();
  });
}
