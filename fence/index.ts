/**
 * `lockhost/fence`: the resource's side of fencing. A lock's fence protects nothing until the
 * resource it guards refuses a fence that is not above the last one it accepted; this is that
 * check, for a service that installs lockhost only for it (node: built-ins only, no lockhost
 * host, backend or pg import).
 *
 * A holder sends `lockhost-lock: <full lock name>` and `lockhost-fence: <decimal fence>` (and
 * `lockhost-kind: rw` for a kind other than the mutex). A name a header value would not keep as
 * it is (a space at its end, a control character) goes percent-encoded in
 * `lockhost-lock-encoded` instead: {@link lockHeader} writes either.
 * {@link fenceGuard} checks them for HTTP, {@link checkFence} anywhere else, against a
 * {@link FenceStore}: {@link memoryFenceStore} in one process, {@link pgFenceStore} shared.
 *
 * **What is atomic.** A store accepts a fence atomically per lock, so of two requests with one
 * fence exactly one passes, and none below a fence once accepted. The check and the write it
 * protects are still two steps: a holder whose fence was accepted may be overtaken by a higher
 * one before its own write lands. In one process that serialises its writes, acceptance is what
 * is needed. For a database resource, make them one step by putting the fence in the same
 * conditional UPDATE as the write:
 *
 * ```sql
 * UPDATE accounts SET balance = balance + $1, fence = $2
 *  WHERE id = $3 AND fence < $2;   -- 0 rows: a stale holder, refused
 * ```
 *
 * @module
 */
export { checkFence, type FenceVerdict } from "./check.js";
export { fenceGuard, fenceOf, type FenceGuardOptions, type FenceMiddleware, type FenceRefusal } from "./guard.js";
export {
  ENCODED_LOCK_HEADER,
  FENCE_HEADER,
  FENCE_KINDS,
  KIND_HEADER,
  LOCK_HEADER,
  lockHeader,
  parseFenceHeaders,
  type Fence,
  type FenceKind,
  type ParsedFence,
} from "./headers.js";
export { memoryFenceStore } from "./memory-store.js";
export { fenceTableDdl, pgFenceStore, type PgFenceStore, type PgFenceStoreOptions, type PgQueryable } from "./pg-store.js";
export { MAX_FENCE, MAX_FENCE_DIGITS, MAX_LOCK_BYTES } from "./rules.js";
export type { FenceAcceptance, FenceStore } from "./store.js";
