// The signals table of docs/operators.md, written from the signal rows (host/cli/signals.ts):
// what each handled signal does, then what is left to Node or cannot be caught.
import { markdownTable } from "./blocks.js";
import { SIGNALS, type SignalAction } from "../cli/signals.js";

const DOES: Record<SignalAction, string> = {
  stop: "graceful stop (below)",
  reload: "reload ([Reloading](#reloading))",
  ignore: "logged (warn) and ignored",
};

/** The signals as a Markdown table: one row per handled signal, then the ones lockhost leaves alone. */
export function signalsTable(): string {
  const rows = SIGNALS.map((r) => [`\`${r.signal}\``, DOES[r.action], r.why.replaceAll("\\", "\\\\").replaceAll("|", "\\|")]);
  return markdownTable(
    ["signal", "what it does", "why"],
    [
      ...rows,
      ["a second stop signal while stopping", "exits at once with 1", "the operator insists; a lock not released yet is held until its TTL ends"],
      ["`SIGPIPE`", "ignored (Node's default)", "a reader that went away is a write error, not a signal"],
      ["`SIGUSR1`", "Node's own", "opens the inspector (debugger)"],
      ["`SIGKILL`, `SIGSTOP`; `SIGSEGV`, `SIGBUS`, `SIGFPE`, `SIGILL`, `SIGABRT`", "cannot be caught, or report a crash", "the locks end at their TTL"],
    ],
  );
}
