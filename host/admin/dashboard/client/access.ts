// What the listener lets this page do (the snapshot's access), and the admin token typed in the
// header, kept for this browser tab only. The token goes with every request when the listener
// asks for it on reads ([admin] auth = "all"), and with force-release; the token field and the
// force-release buttons show only when the listener has a token configured.
import { byId } from "./dom.js";
import type { Access } from "./wire.js";

const token = byId("token", HTMLInputElement);
const form = byId("token-form", HTMLFormElement);
let access: Access | undefined;
const changed = new Set<() => void>();

/** The Authorization header of the typed token (none when nothing is typed). */
export function tokenHeaders(): Record<string, string> {
  return token.value === "" ? {} : { authorization: `Bearer ${token.value}` };
}

/** Whether force-release can be used here: the listener has a token configured. */
export function canForceRelease(): boolean {
  return access?.forceRelease === true;
}

/** Takes the listener's access from a snapshot: shows the token field only when a token is configured. */
export function setAccess(now: Access): void {
  const before = access?.forceRelease;
  access = now;
  form.hidden = !now.forceRelease;
  // A listener restarted with another config: list again, with or without buttons (not on the first snapshot).
  if (before !== undefined && before !== now.forceRelease) for (const f of changed) f();
}

/** The listener refused a read for its token: the field shows (with `why`) so the operator can type it. */
export function askForToken(why: string): void {
  form.hidden = false;
  token.placeholder = "needed to see anything";
  token.title = why;
}

/** Calls `f` when the token typed changes (after a pause) or force-release becomes (un)available. */
export function onAccessChange(f: () => void): void {
  changed.add(f);
}

/** Keeps the token for this browser tab only. */
export function keepToken(): void {
  token.value = sessionStorage.getItem("lockhost-token") ?? "";
  let typing: ReturnType<typeof setTimeout> | undefined;
  token.addEventListener("input", () => {
    sessionStorage.setItem("lockhost-token", token.value);
    clearTimeout(typing);
    typing = setTimeout(() => {
      for (const f of changed) f();
    }, 300);
  });
  // A password field belongs in a form (browsers say so otherwise); Enter must not load another page.
  form.addEventListener("submit", (e) => e.preventDefault());
}
