// What a guest runtime tells whoever counts its work (the host's metrics): each export call's
// outcome and duration, traps, time limits and restarts. The runtimes know this interface only,
// never a metrics library; without a recorder they tell a no-op.
import type { ErrorCode } from "../../kit/errors.js";

/** How an export call ended. */
export type CallOutcome =
  /** It returned. */
  | "ok"
  /** It trapped (or aborted); the instance was replaced. */
  | "trap"
  /** It ran past its time limit (worker runtime); the instance was replaced. */
  | "timeout"
  /** Its worker died, or no instance could be started for it. */
  | "crash"
  /** The plugin was closed while it ran. */
  | "closed"
  /** Any other failure (a result that is not a string in its memory, a bad argument). */
  | "error";

/** Why a guest's instance was replaced by a fresh one. */
export type RestartReason = "trap" | "timeout" | "crash";

/**
 * Told of one plugin's guest calls and faults. Called on the call path: an implementation
 * must be cheap and must not throw.
 */
export interface GuestRecorder {
  /**
   * An export call ended, `ms` after its turn came (waiting for a fresh instance included);
   * a call that never reached an instance (none could be started) ends as "crash".
   */
  called(exportName: string, outcome: CallOutcome, ms: number): void;
  /** An export trapped. */
  trapped(): void;
  /** An export ran past its time limit. */
  timedOut(): void;
  /** The instance is being replaced by a fresh one. */
  restarted(reason: RestartReason): void;
}

/** The recorder of a guest nobody counts. */
export const NO_GUEST_RECORDER: GuestRecorder = Object.freeze({
  called: () => undefined,
  trapped: () => undefined,
  timedOut: () => undefined,
  restarted: () => undefined,
});

/** The outcome a call's error code stands for. */
export function callOutcomeOf(code: ErrorCode): CallOutcome {
  switch (code) {
    case "GUEST_TRAP":
      return "trap";
    case "GUEST_TIMEOUT":
      return "timeout";
    case "GUEST_CRASHED":
      return "crash";
    case "CLOSED":
      return "closed";
    default:
      return "error";
  }
}
