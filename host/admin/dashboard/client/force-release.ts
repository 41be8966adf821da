// Force-release from the page: the operator confirms first (naming the lock, its kind and its
// holder: the holder loses it at once), then the request goes through the listener's
// token-checked endpoint with the token typed in the header. The listener logs and feeds the
// audit line (who, when, which lock), granted or refused.
import { tokenHeaders } from "./access.js";
import { byId } from "./dom.js";
import type { ErrorBody, Listing } from "./wire.js";

const dialog = byId("confirm", HTMLDialogElement);
const question = byId("confirm-text", HTMLElement);

/** Asks the operator to confirm: resolves to whether they did. */
function confirmed(lock: Listing): Promise<boolean> {
  question.textContent =
    `Force-release the ${lock.kind} ${lock.name}, held by ${lock.holder.plugin} @ ${lock.holder.node} (fence ${lock.fence})? ` +
    "Every holder of it loses it at once, and may be in the middle of its work.";
  dialog.returnValue = "";
  dialog.showModal();
  return new Promise((resolve) => dialog.addEventListener("close", () => resolve(dialog.returnValue === "release"), { once: true }));
}

/**
 * Confirms, then force-releases `lock` (its kind goes along: each kind has its own names); resolves
 * to what to tell the operator, or undefined when cancelled.
 */
export async function forceRelease(lock: Listing): Promise<string | undefined> {
  if (!(await confirmed(lock))) return undefined;
  const res = await fetch(`/locks/${encodeURIComponent(lock.name)}/force-release?kind=${encodeURIComponent(lock.kind)}`, {
    method: "POST",
    headers: tokenHeaders(),
  });
  const body = (await res.json().catch(() => ({}))) as ErrorBody & { readonly released?: boolean };
  if (!res.ok) return `force-release refused (${res.status}): ${body.message ?? res.statusText}`;
  return body.released === true ? `force-released ${lock.name}` : `${lock.name} was not held`;
}
