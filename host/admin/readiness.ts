// Whether the host is of use: its backend answers. One answer for `/readyz` and for the
// dashboard's backend-health banner, so the two never disagree.
import { toLockhostError } from "../../kit/errors.js";
import type { LockService } from "../locking/service.js";

/** What `/readyz` answers (200 when ok, 503 when not). */
export type Readiness = { readonly ok: true; readonly backend: string } | { readonly ok: false; readonly backend: string; readonly message: string };

/** Asks the backend afresh (LockService.ping); never rejects. */
export async function readiness(service: LockService): Promise<Readiness> {
  try {
    await service.ping();
    return { ok: true, backend: service.backendName };
  } catch (err) {
    return { ok: false, backend: service.backendName, message: toLockhostError(err).message };
  }
}
