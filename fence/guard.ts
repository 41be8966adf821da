// The HTTP side: a middleware that refuses a request whose fence is not above the last one
// accepted for its lock, before the handler runs. Written against node:http's own request and
// response, so express (whose req/res extend them) and fastify (request.raw, reply.raw) fit.
import type { IncomingMessage, ServerResponse } from "node:http";
import { checkFence } from "./check.js";
import { FENCE_HEADER, LOCK_HEADER, parseFenceHeaders, type Fence } from "./headers.js";
import { memoryFenceStore } from "./memory-store.js";
import type { FenceStore } from "./store.js";

/**
 * Why the guard answered instead of the handler, with the HTTP status it answered with:
 * `stale_fence` 409 (a fence at or above this one was accepted before), `bad_fence` 400
 * (malformed headers), `fence_required` 428 (no fence, and one is required),
 * `fence_unavailable` 503 (the store failed; `cause` is its error, never sent to the client).
 */
export type FenceRefusal =
  | { readonly error: "stale_fence"; readonly status: 409; readonly lock: string; readonly fence: bigint; readonly last: bigint | undefined }
  | { readonly error: "bad_fence"; readonly status: 400; readonly reason: string }
  | { readonly error: "fence_required"; readonly status: 428; readonly reason: string }
  | { readonly error: "lock_not_accepted"; readonly status: 403; readonly lock: string }
  | { readonly error: "fence_unavailable"; readonly status: 503; readonly lock: string; readonly fence: bigint; readonly cause: unknown };

/** Options of {@link fenceGuard}. */
export interface FenceGuardOptions {
  /** Where accepted fences are kept; default a {@link memoryFenceStore} of this guard's own. */
  readonly store?: FenceStore;
  /** Whether a request without fence headers is refused (428); default true. When false it passes, with no fence. */
  readonly required?: boolean;
  /**
   * The lock names whose fences this resource accepts (e.g. `["global:ledger"]`); a request
   * fenced by any other lock is refused (403), so holding some lock of one's own does not open
   * the resource. Default: any lock.
   */
  readonly locks?: readonly string[];
  /** Told of every refusal after the answer is sent (to log it); what it throws is ignored. */
  onRefused?(refusal: FenceRefusal, req: IncomingMessage): void;
}

/**
 * A connect-style middleware: `(req, res, next)`. `next` is called with no argument, and
 * only for a request it accepted (or, when fences are not required, one without them).
 */
export type FenceMiddleware = (req: IncomingMessage, res: ServerResponse, next: () => void) => void;

// Keyed by the request object, so nothing is added to a type the guard does not own, and a
// request's entry goes when the request does.
const accepted = new WeakMap<IncomingMessage, Fence>();

/**
 * The lock and fence the guard accepted for `req`, or undefined (no guard ran, or fences are
 * optional and none was sent). With fastify pass `request.raw`.
 */
export function fenceOf(req: IncomingMessage): Fence | undefined {
  return accepted.get(req);
}

/**
 * Refuses requests whose {@link FENCE_HEADER} is not strictly above the last fence accepted
 * for their {@link LOCK_HEADER}, answering 409 / 400 / 428 / 503 with a small JSON body (see
 * {@link FenceRefusal}); an accepted request reaches `next()` with its fence at
 * {@link fenceOf}. A store failure is a 503, never an unhandled rejection.
 *
 * - node:http: `createServer((req, res) => guard(req, res, () => handler(req, res)))`
 * - express: `app.post("/entries", guard, handler)`
 * - fastify: `fastify.use(guard)` with @fastify/middie
 *
 * What this serialises is *acceptance* per lock: two requests with one fence, exactly one
 * passes. It cannot make the store's check and the handler's later write one atomic step;
 * in one process that is enough, for a database put the fence in the write itself.
 */
export function fenceGuard(options: FenceGuardOptions = {}): FenceMiddleware {
  const store = options.store ?? memoryFenceStore();
  const required = options.required ?? true;
  const locks = options.locks && new Set(options.locks);
  const refuse = (req: IncomingMessage, res: ServerResponse, refusal: FenceRefusal): void => {
    sendJson(res, refusal.status, bodyOf(refusal));
    try {
      options.onRefused?.(refusal, req);
    } catch {
      // A failing logger must not turn an answered request into a crashed server.
    }
  };

  return (req, res, next) => {
    const parsed = parseFenceHeaders(req);
    if (parsed.kind === "missing") {
      if (!required) return next();
      return refuse(req, res, { error: "fence_required", status: 428, reason: `send ${LOCK_HEADER} and ${FENCE_HEADER}` });
    }
    if (parsed.kind === "malformed") return refuse(req, res, { error: "bad_fence", status: 400, reason: parsed.reason });

    const { lock, lockKind, fence } = parsed;
    if (locks && !locks.has(lock)) return refuse(req, res, { error: "lock_not_accepted", status: 403, lock });
    checkFence(store, storeKey(lock, lockKind), fence).then(
      (verdict) => {
        if (verdict.status === "accepted") {
          accepted.set(req, { lock, lockKind, fence });
          callOutside(next);
        } else if (verdict.status === "stale") {
          refuse(req, res, { error: "stale_fence", status: 409, lock, fence, last: verdict.last });
        } else {
          refuse(req, res, { error: "bad_fence", status: 400, reason: verdict.reason });
        }
      },
      (cause: unknown) => refuse(req, res, { error: "fence_unavailable", status: 503, lock, fence, cause }),
    );
  };
}

/**
 * Where a lock's fences are kept: a mutex's under its name (as before kinds were sent), any
 * other kind's apart from it, since each kind counts its fences on its own.
 */
function storeKey(lock: string, lockKind: string): string {
  return lockKind === "mutex" ? lock : `${lockKind}|${lock}`;
}

/**
 * Calls the handler so that what it throws is its own, as from a plain request listener,
 * not a rejection of the guard's promise (which would hide where it came from).
 */
function callOutside(next: () => void): void {
  try {
    next();
  } catch (err) {
    process.nextTick(() => {
      throw err;
    });
  }
}

function bodyOf(refusal: FenceRefusal): Record<string, string | null> {
  switch (refusal.error) {
    case "stale_fence":
      return {
        error: refusal.error,
        lock: refusal.lock,
        fence: String(refusal.fence),
        last_accepted: refusal.last === undefined ? null : String(refusal.last),
      };
    case "fence_unavailable":
      return { error: refusal.error, reason: "the fence store did not answer; try again" };
    case "lock_not_accepted":
      return { error: refusal.error, lock: refusal.lock, reason: "this resource accepts fences of other locks" };
    default:
      return { error: refusal.error, reason: refusal.reason };
  }
}

function sendJson(res: ServerResponse, status: number, body: Record<string, string | null>): void {
  // Something before the guard may have answered already; the refusal then goes only to onRefused.
  if (res.headersSent || res.writableEnded) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "content-length": Buffer.byteLength(text) });
  res.end(text);
}
