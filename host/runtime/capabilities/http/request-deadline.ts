// One request's end conditions, as the single signal undici sees: the time limit and the
// caller's signal each abort it with the error the guest should get, so whatever part of the
// exchange was under way (connect, headers, body) rejects with that error.
//
// It is an EventEmitter with `aborted` and `reason`, which undici accepts as a signal, rather
// than an AbortController: an EventTarget and its abort listeners cost about 10-20 µs a request
// on a local round trip of ~60 µs, and every guest request pays it.
import { EventEmitter } from "node:events";
import { LockhostError } from "../../../../kit/errors.js";
import type { GrantRules } from "./grant-rules.js";
import { callFailed, cancelled, timedOut } from "./http-errors.js";

export class RequestDeadline extends EventEmitter {
  /** Read by undici, as on an AbortSignal. */
  aborted = false;
  /** What the request rejects with once aborted (undici reads it, as on an AbortSignal). */
  reason: LockhostError | undefined;
  /** The origin named in messages: the current hop's. */
  origin: string;
  readonly #timer: NodeJS.Timeout;
  readonly #outer: AbortSignal | undefined;
  readonly #onOuterAbort: (() => void) | undefined;

  constructor(
    readonly rules: GrantRules,
    origin: string,
    ms: number,
    outer: AbortSignal | undefined,
  ) {
    super();
    this.origin = origin;
    this.#timer = setTimeout(() => this.#abort(timedOut(rules, this.origin, ms)), ms);
    this.#outer = outer;
    if (outer !== undefined) {
      this.#onOuterAbort = () => this.#abort(cancelled(rules, this.origin, outer.reason));
      outer.addEventListener("abort", this.#onOuterAbort, { once: true });
      // Aborted while undici was still loading: no event will come for it.
      if (outer.aborted) this.#onOuterAbort();
    }
  }

  /** What `err`, thrown during the request, means to the guest. */
  explain(err: unknown): LockhostError {
    if (this.reason !== undefined) return this.reason;
    if (err instanceof LockhostError) return err;
    return callFailed(this.rules, this.origin, err);
  }

  /** Stops the timer and lets go of the caller's signal. */
  end(): void {
    clearTimeout(this.#timer);
    if (this.#onOuterAbort !== undefined) this.#outer?.removeEventListener("abort", this.#onOuterAbort);
  }

  #abort(reason: LockhostError): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit("abort");
  }
}
