// The CLI's side of the admin listener: which URL to talk to (http, or https when the config
// gives the listener a certificate), what to trust there, and the requests the CLI makes (stats,
// the list, a lock's status, force-release), each with the token when it has one. A request's
// method and path come from its row of the routes table (host/admin/routes.ts), the one place
// the routes are spelt. Every way of not reaching a listener ends in AdminUnreachable, so the CLI
// can tell the operator how to enable one instead of printing a socket error.
import { readFileSync } from "node:fs";
import { request as httpRequestRaw } from "node:http";
import { request as httpsRequest } from "node:https";
import { createSecureContext, rootCertificates } from "node:tls";
import { text as readText } from "node:stream/consumers";
import { ADMIN_ROUTES, type AdminCall, type AdminStatsBody } from "../admin/routes.js";
import { formatListen } from "../config/listen.js";
import type { AdminSettings } from "../config/types.js";
import { LockhostError, type ErrorCode } from "../../kit/errors.js";
import type { ListOptions, LockListPage, LockRef, LockStatus } from "../locking/service.js";
import type { LockKind } from "../../kit/kinds.js";

/** A request to the route the CLI calls `call`. */
interface RouteRequest {
  readonly method: string;
  readonly path: string;
}

/**
 * The method and path of a request to the route named `call`, from its row: its `<param>`s
 * filled with `params` in order (percent-encoded), and of the query keys its path lists, those
 * `query` gives.
 */
function routeRequest(call: AdminCall, params: readonly string[] = [], query: object = {}): RouteRequest {
  const route = ADMIN_ROUTES.find((r) => r.call === call);
  if (!route) throw new LockhostError("INTERNAL", `no admin route is named ${call}`);
  const [template = "", keys = ""] = route.path.split("?");
  let i = 0;
  const path = template.replace(/<[^>]+>/g, () => encodeURIComponent(params[i++] ?? ""));
  const search = new URLSearchParams();
  const values = query as Readonly<Record<string, unknown>>;
  for (const key of keys.split("&").map((k) => k.replace(/=$/, ""))) {
    if (key && values[key] !== undefined) search.set(key, String(values[key]));
  }
  return { method: route.method, path: search.size === 0 ? path : `${path}?${search}` };
}

/** How long the CLI waits for the admin listener before saying it does not answer. */
const REQUEST_TIMEOUT_MS = 5_000;
/** A reload starts new guest instances (compiled, instantiated, checked) before it answers: longer. */
const RELOAD_TIMEOUT_MS = 120_000;

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
  return `${admin.certFile === undefined ? "http" : "https"}://${formatListen({ host, port: admin.listen.port })}`;
}

/** The TLS files the CLI uses toward an https listener: what it trusts, and its own certificate for mutual TLS. */
export interface AdminTlsFiles {
  /** --admin-ca: PEM CA bundle that signed the listener's certificate. */
  readonly ca?: string;
  /** --admin-cert and --admin-key: the CLI's client certificate ([admin] client_ca_file). */
  readonly cert?: string;
  readonly key?: string;
}

/** The https options of an admin client. */
export interface AdminTlsOptions {
  readonly ca?: string[];
  readonly cert?: string;
  readonly key?: string;
  readonly allowPartialTrustChain?: boolean;
}

/**
 * Reads and checks the TLS files the CLI was given: --admin-ca, else (talking to the config's
 * own listener) its [admin] cert_file, trusted as itself beside the system's CAs (pinned: it
 * may be self-signed or signed by a CA this machine does not know); --admin-cert/--admin-key.
 *
 * @throws LockhostError CONFIG_INVALID naming the option or key, the file and why it cannot be used.
 */
export function adminTls(files: AdminTlsFiles, admin: AdminSettings | undefined): AdminTlsOptions {
  const pinned = files.ca === undefined && admin?.certFile !== undefined;
  const caFile = files.ca ?? admin?.certFile;
  const caName = files.ca !== undefined ? "--admin-ca" : "[admin] cert_file";
  const ca = caFile === undefined ? undefined : pem(caName, caFile, "CERTIFICATE");
  if ((files.cert === undefined) !== (files.key === undefined)) {
    throw new LockhostError("CONFIG_INVALID", "--admin-cert and --admin-key go together: give both for a client certificate, or neither");
  }
  const cert = files.cert === undefined ? undefined : pem("--admin-cert", files.cert, "CERTIFICATE");
  const key = files.key === undefined ? undefined : pem("--admin-key", files.key, "PRIVATE KEY");
  const options: AdminTlsOptions = {
    ...(ca !== undefined && { ca: pinned ? [...rootCertificates, ca] : [ca] }),
    ...(pinned && { allowPartialTrustChain: true }),
    ...(cert !== undefined && { cert, key: key! }),
  };
  try {
    createSecureContext(options);
  } catch (err) {
    const named = cert !== undefined ? `--admin-cert ${files.cert} and --admin-key ${files.key}` : `${caName} ${caFile}`;
    throw new LockhostError("CONFIG_INVALID", `${named}: not usable (${(err as Error).message})`);
  }
  return options;
}

function pem(option: string, path: string, label: string): string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    throw new LockhostError("CONFIG_INVALID", `${option}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  if (!new RegExp(`-----BEGIN [A-Z ]*${label}-----`).test(text)) {
    throw new LockhostError("CONFIG_INVALID", `${option}: ${path} holds no PEM ${label.toLowerCase()} (-----BEGIN ...${label}-----)`);
  }
  return text;
}

/** A client of one admin listener. */
export class AdminClient {
  constructor(
    readonly url: string,
    /**
     * Sent as a bearer token with every request (a listener with [admin] auth = "all" asks for
     * it on reads too); never printed. Absent: the listener answers 401 where it needs one.
     */
    private readonly token: string | undefined,
    /** For an https URL: what to trust, and the client certificate (adminTls). */
    private readonly tls: AdminTlsOptions = {},
    /** Named when the listener's certificate is not trusted (e.g. "--admin-ca /etc/ca.pem"). */
    private readonly trusting = "the system's CAs (pass --admin-ca FILE)",
  ) {}

  /** The host's counters (route `stats`). */
  stats(): Promise<AdminStatsBody> {
    return this.#request(routeRequest("stats"), this.token) as Promise<AdminStatsBody>;
  }

  /** One page of held locks (route `list`). */
  list(options: ListOptions): Promise<LockListPage> {
    return this.#request(routeRequest("list", [], options), this.token) as Promise<LockListPage>;
  }

  /**
   * The lock's status (route `status`; with the token, its owner tokens too: the
   * listener decides by the token, so `owners` asks nothing more). Full names only: the
   * listener's locks are named as it lists them.
   */
  status(ref: { readonly name: string }, options: { readonly kind?: LockKind; readonly owners?: boolean } = {}): Promise<LockStatus> {
    return this.#request(routeRequest("status", [ref.name], { kind: options.kind }), this.token) as Promise<LockStatus>;
  }

  /** When the lock is free, the locks of its key held in the other scope or of another kind (route `status`). */
  async heldElsewhere(name: string, kind: LockKind): Promise<readonly LockRef[]> {
    const body = (await this.#request(routeRequest("status", [name], { kind }), this.token)) as { held?: unknown; heldElsewhere?: readonly LockRef[] };
    return body.held === false && Array.isArray(body.heldElsewhere) ? body.heldElsewhere : [];
  }

  /** Force-releases the lock (route `force-release`): how many held it. */
  async forceRelease(ref: { readonly name: string }, options: { readonly kind?: LockKind } = {}): Promise<number> {
    // Sent even without a token: the listener's 401 is the answer, and an unreachable
    // listener is reported as such rather than as a missing token.
    const body = (await this.#request(routeRequest("force-release", [ref.name], { kind: options.kind }), this.token)) as { holders?: unknown };
    return typeof body.holders === "number" ? body.holders : 0;
  }

  /**
   * Asks the host to re-read its config and apply it (route `reload`): what changed. Rejects with
   * the host's code (NOT_RELOADABLE, CONFIG_INVALID...) when it changed nothing.
   */
  reload(): Promise<unknown> {
    return this.#request(routeRequest("reload"), this.token, RELOAD_TIMEOUT_MS);
  }

  async #request({ method, path }: RouteRequest, token?: string, timeoutMs = REQUEST_TIMEOUT_MS): Promise<unknown> {
    let res: { status: number; text: string };
    try {
      res = await httpRequest(
        method,
        `${this.url}${path}`,
        {
          accept: "application/json",
          ...(token !== undefined && { authorization: `Bearer ${token}` }),
        },
        this.tls,
        timeoutMs,
      );
    } catch (err) {
      const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      // A certificate problem is the operator's files', not a listener that is not there.
      if (/ALERT/i.test(why)) {
        throw new LockhostError(
          "CONFIG_INVALID",
          `the admin listener at ${this.url} refused this client's TLS handshake (${why}): it may ask for a client certificate ([admin] ` +
            `client_ca_file): pass --admin-cert and --admin-key`,
        );
      }
      if (/CERT|SELF_SIGNED|UNABLE_TO|VERIFY|ERR_TLS|ERR_SSL/i.test(why)) {
        throw new LockhostError(
          "CONFIG_INVALID",
          `the admin listener at ${this.url} shows a certificate that ${this.trusting} does not vouch for (${why}: ${(err as Error).message})`,
        );
      }
      throw new AdminUnreachable(
        `no admin listener answers at ${this.url} (${why}). Is 'lockhost run' running, with an [admin] table in its config?\n${ENABLE_ADMIN_HINT}`,
      );
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
function httpRequest(
  method: string,
  url: string,
  headers: Record<string, string>,
  tls: AdminTlsOptions,
  timeoutMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const https = url.startsWith("https:");
    const send = https ? httpsRequest : httpRequestRaw;
    const req = send(url, { method, headers, timeout: timeoutMs, ...(https && tls) }, (res) => {
      readText(res).then((body) => resolve({ status: res.statusCode ?? 0, text: body }), reject);
    });
    req.on("timeout", () => req.destroy(Object.assign(new Error(`no answer in ${timeoutMs} ms`), { code: "ETIMEDOUT" })));
    req.on("error", reject);
    req.end();
  });
}
