// Turns what @grpc/grpc-js rejects with into one LockhostError whose message says what happened
// in operator terms and names the endpoint: BACKEND_UNAVAILABLE (with `permanent` where retrying
// cannot help: wrong credentials, no permission, a TLS file that cannot be read) or
// INVALID_ARGUMENT (a request etcd refuses for its size); and tells apart the refusals a caller
// handles itself (an expired token, an unreachable member, a lease etcd no longer has).
import { LockhostError, tlsRefusal, type TlsFiles } from "../../../kit/index.js";

/** gRPC status codes this file tells apart (grpc-js's `status` enum, without importing it). */
const GRPC = { CANCELLED: 1, DEADLINE_EXCEEDED: 4, PERMISSION_DENIED: 7, UNAVAILABLE: 14, UNAUTHENTICATED: 16 } as const;

/** A gRPC error as grpc-js gives it. */
interface GrpcError {
  readonly code?: number;
  readonly details?: string;
  readonly message?: string;
}

/** etcd's messages for requests that are wrong in themselves: retrying the same request cannot help. */
const INVALID =
  /request is too large|received message larger than max|too many operations in txn request|key is not provided|duplicate key given in txn request/;
/** Refusals that stay refusals however often the call is made. */
const PERMANENT = /authentication failed|invalid user ID or password|user name is empty|permission denied|authentication is not enabled/;

/** The error text of a grpc-js error: its details (etcd's own message) when there are any. */
function detailsOf(err: unknown): string {
  const e = err as GrpcError;
  return e?.details || e?.message || String(err);
}

/** True when etcd refused a request for a token that expired (a new token makes it pass). */
export function isExpiredToken(err: unknown): boolean {
  return (err as GrpcError)?.code === GRPC.UNAUTHENTICATED && /invalid auth token|auth token is expired/.test(detailsOf(err));
}

/** True when the endpoint could not be reached (another member may answer). */
export function isUnreachable(err: unknown): boolean {
  const code = (err as GrpcError)?.code;
  return code === GRPC.UNAVAILABLE;
}

/** True for etcd's refusal of a put on a lease it does not have (expired since this host last heard of it). */
export function isLeaseGone(err: unknown): boolean {
  return /requested lease not found|lease not found/.test(String((err as Error)?.message));
}

/** The LockhostError for a failed call to `server` ("etcd at http://127.0.0.1:2379"). */
export function etcdError(err: unknown, server: string, commandTimeoutMs: number, what = "the request", tls?: TlsFiles): LockhostError {
  if (err instanceof LockhostError) return err;
  const code = (err as GrpcError)?.code;
  const text = detailsOf(err);
  if (INVALID.test(text)) return new LockhostError("INVALID_ARGUMENT", `${server} refused ${what}: ${text}`);
  if (PERMANENT.test(text) || code === GRPC.PERMISSION_DENIED) {
    // Authenticated, but the user's roles do not grant the key: a credentials check would not help.
    const hint = /permission denied/.test(text)
      ? "the etcd user lacks a permission lockhost needs: read/write on its key prefix, docs/backends.md#least-privilege-grants"
      : "check [locking.etcd] username and password";
    return new LockhostError("BACKEND_UNAVAILABLE", `${server} refused ${what}: ${text} (${hint})`, { details: { permanent: 1 } });
  }
  if (code === GRPC.DEADLINE_EXCEEDED) {
    return new LockhostError(
      "BACKEND_UNAVAILABLE",
      `${server} did not answer within ${commandTimeoutMs} ms (command_timeout_ms); ${what} may still have been applied`,
    );
  }
  if (code === GRPC.UNAVAILABLE) {
    // gRPC passes on a refused handshake as text only ("No connection established. Last error: ...").
    const refused = tls ? tlsRefusal(text, tls, "[locking.etcd]") : undefined;
    return new LockhostError("BACKEND_UNAVAILABLE", refused ? `${server}: ${refused}` : `${server} is not reachable: ${text}`);
  }
  if (code === GRPC.CANCELLED) return new LockhostError("BACKEND_UNAVAILABLE", `the call to ${server} was cancelled (closing or connection lost): ${text}`);
  return new LockhostError("BACKEND_UNAVAILABLE", `${server}: ${text}`);
}
