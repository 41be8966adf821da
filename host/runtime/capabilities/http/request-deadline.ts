// One request's end conditions, as the single signal undici sees: the time limit and the
// caller's signal each abort it with the error the guest should get, so whatever part of the
// exchange was under way (connect, headers, body) rejects with that error.
import { LockhostError } from "../../../../kit/errors.js";
import type { GrantRules } from "./grant-rules.js";
import { callFailed, cancelled, timedOut } from "./http-errors.js";

export class RequestDeadline {
  readonly #controller = new AbortController();
  readonly #timer: NodeJS.Timeout;
  readonly #outer: AbortSignal | undefined;
  readonly #onOuterAbort: (() => void) | undefined;
  /** The origin named in messages: the current hop's. */
  origin: string;

  constructor(
    readonly rules: GrantRules,
    origin: string,
    readonly ms: number,
    outer: AbortSignal | undefined,
  ) {
    this.origin = origin;
    this.#timer = setTimeout(() => this.#controller.abort(timedOut(rules, this.origin, ms)), ms);
    this.#outer = outer;
    if (outer !== undefined) {
      this.#onOuterAbort = () => this.#controller.abort(cancelled(rules, this.origin, outer.reason));
      outer.addEventListener("abort", this.#onOuterAbort, { once: true });
    }
  }

  /** The signal to hand to undici. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** What `err`, thrown during the request, means to the guest. */
  explain(err: unknown): LockhostError {
    if (this.#controller.signal.aborted) return this.#controller.signal.reason as LockhostError;
    if (err instanceof LockhostError) return err;
    return callFailed(this.rules, this.origin, err);
  }

  /** Stops the timer and lets go of the caller's signal. */
  end(): void {
    clearTimeout(this.#timer);
    if (this.#onOuterAbort !== undefined) this.#outer?.removeEventListener("abort", this.#onOuterAbort);
  }
}
