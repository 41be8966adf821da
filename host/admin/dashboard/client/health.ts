// The header's connection pill and the backend-health banner. The pill is green "live" only
// while the feed is connected and the backend answers: a host whose backend is down is not live,
// whatever its stream says.
import { byId } from "./dom.js";
import { formatTime } from "./format.js";
import type { Health } from "./wire.js";

/** The feed's connection, as the stream's events tell it. */
export type Connection = "connecting" | "open" | "reconnecting" | "token";

/** What the header and banner show. */
export class HealthView {
  #connection: Connection = "connecting";
  #health: Health | undefined;
  readonly #pill = byId("live", HTMLElement);
  readonly #banner = byId("banner", HTMLElement);

  /** Whether the backend is known not to answer. */
  get down(): boolean {
    return this.#health?.ok === false;
  }

  connection(state: Connection): void {
    this.#connection = state;
    this.#render();
  }

  health(health: Health): void {
    this.#health = health;
    this.#render();
  }

  #render(): void {
    const [text, state] =
      this.#connection === "reconnecting"
        ? ["reconnecting", "off"]
        : this.#connection === "token"
          ? ["admin token needed", "off"]
          : this.#connection === "connecting"
            ? ["connecting…", "off"]
            : this.#health === undefined
              ? ["checking backend…", "wait"]
              : this.#health.ok
                ? ["live", "on"]
                : ["backend down", "off"];
    this.#pill.textContent = text;
    this.#pill.className = `pill ${state}`;
    const health = this.#health;
    if (health === undefined || health.ok) {
      this.#banner.hidden = true;
      this.#banner.textContent = "";
      return;
    }
    this.#banner.hidden = false;
    this.#banner.textContent =
      `The ${health.backend} backend is not answering (since ${formatTime(health.sinceMs)}): ${health.message}. ` +
      "Locks cannot be taken, renewed or listed here until it answers again; the list below is as it was.";
  }
}
