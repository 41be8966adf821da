// What a signal does to a process that holds locks (`lockhost run`, `lockhost call`). Node ends
// the process at once on most signals it has no listener for, leaving every lock held until its
// TTL (SIGHUP used to exit 129, silently). So every catchable signal that would end Node by
// default is a row here: it stops the host gracefully, reloads its config, or it is logged and ignored.
// Left to Node: SIGUSR1 (starts its inspector), SIGPIPE (Node ignores it; a reader that went
// away is an EPIPE write error), SIGPROF (V8's profiler uses it); SIGSEGV, SIGBUS, SIGFPE,
// SIGILL, SIGABRT, SIGTRAP and SIGSYS report a crash (no listener can run safely then); SIGKILL
// and SIGSTOP cannot be caught.
import type { Logger } from "pino";

/** What a signal does: stop the host gracefully (as SIGTERM), reload its config, or nothing but a log line. */
export type SignalAction = "stop" | "reload" | "ignore";

/** One signal and what it does, with the reason an operator reads in the log and the docs. */
export interface SignalRow {
  readonly signal: NodeJS.Signals;
  readonly action: SignalAction;
  readonly why: string;
}

/** Every signal lockhost handles, in the order docs/operators.md lists them. */
export const SIGNALS: readonly SignalRow[] = [
  { signal: "SIGTERM", action: "stop", why: "a service manager stopping it (systemd, Kubernetes, docker stop)" },
  { signal: "SIGINT", action: "stop", why: "Ctrl-C" },
  { signal: "SIGQUIT", action: "stop", why: "Ctrl-\\; no core dump" },
  { signal: "SIGXCPU", action: "stop", why: "the soft CPU time limit was reached: stop before the hard limit's SIGKILL" },
  { signal: "SIGPWR", action: "stop", why: "a power failure notice" },
  { signal: "SIGHUP", action: "reload", why: 're-read the config file and apply it without a gap (docs/operators.md, "Reloading")' },
  { signal: "SIGUSR2", action: "ignore", why: "no action is bound to it" },
  { signal: "SIGALRM", action: "ignore", why: "no action is bound to it" },
  { signal: "SIGVTALRM", action: "ignore", why: "no action is bound to it" },
  { signal: "SIGIO", action: "ignore", why: "no action is bound to it" },
  { signal: "SIGSTKFLT", action: "ignore", why: "no action is bound to it" },
];

/** What the process does when a stop signal comes: the first stops gracefully, a second one exits now. */
export interface SignalHandlers {
  /** The first stop signal: stop the host gracefully. */
  stop(signal: NodeJS.Signals): void;
  /** A stop signal while stopping: exit now, without waiting (the operator insists). */
  force(signal: NodeJS.Signals): void;
  /** A reload signal: re-read the config. Absent (`lockhost call`): logged and ignored. */
  reload?(signal: NodeJS.Signals): void;
}

/**
 * Installs a listener for every row of SIGNALS this platform has; returns the function that
 * removes them. An ignored signal is logged at warn level, with why it does nothing; so is a
 * reload signal to a process that has nothing to reload (`lockhost call`).
 */
export function handleSignals(log: Logger, handlers: SignalHandlers): () => void {
  let stops = 0;
  const installed: [NodeJS.Signals, () => void][] = [];
  for (const row of SIGNALS) {
    const listener = (): void => {
      if (row.action === "ignore") {
        log.warn({ signal: row.signal }, `${row.signal}: ${row.why}; ignored`);
      } else if (row.action === "reload") {
        if (handlers.reload) handlers.reload(row.signal);
        else log.warn({ signal: row.signal }, `${row.signal}: this command has no config to reload; ignored`);
      } else if (++stops === 1) {
        handlers.stop(row.signal);
      } else {
        handlers.force(row.signal);
      }
    };
    try {
      process.on(row.signal, listener);
      installed.push([row.signal, listener]);
    } catch {
      // A signal this platform does not have (Windows has few): nothing can send it.
    }
  }
  return () => {
    for (const [signal, listener] of installed) process.off(signal, listener);
  };
}
