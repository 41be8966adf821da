// `lockhost call PLUGIN EXPORT [ARG...]`: runs one export once, through a Host started from the
// config as `run` starts one (the same backend, plugins, grants and lock service, so the export
// takes its locks as it would under `run`), prints what it returned and stops the host, which
// releases every lock. It runs no schedule and no admin listener (a running host of the config
// may hold its port), and it holds its locks as node "<node>/call": a one-off call is told apart
// from the running host in status and logs, and never reclaims that host's locks
// (reclaim_own_locks goes by node name). Logs go to stderr, so stdout is the result alone.
import type { Logger } from "pino";
import { LockhostError, toLockhostError } from "../../kit/errors.js";
import { chosenBackend } from "../registry/create.js";
import type { LockhostConfig } from "../config/types.js";
import { Host } from "../host.js";
import type { GuestArg, GuestValue } from "../runtime/guest-instance.js";
import { cliLogger, type LogFormat } from "./logger.js";
import { handleSignals } from "./signals.js";

/** What the call is asked for, checked. */
export interface CallRequest {
  readonly plugin: string;
  readonly export: string;
  readonly args: readonly GuestArg[];
  /** The export returns a string (callString): print it. */
  readonly string: boolean;
  readonly json: boolean;
}

/** How the call's node is named: the config's node, marked as a one-off call. */
export function callNode(node: string): string {
  const suffix = "/call";
  // A node name is at most 255 characters.
  return `${node.slice(0, 255 - suffix.length)}${suffix}`;
}

/**
 * An argument as typed: a number when it reads as one (`7`, `-1`, `2.5`, `1e3`), passed as
 * the export's i32/f32/f64; otherwise text, passed as a string; a JSON string (`'"42"'`) for a
 * string that reads as a number.
 */
export function parseCallArg(text: string): GuestArg {
  if (/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) return Number(text);
  if (text.length >= 2 && text.startsWith('"') && text.endsWith('"')) {
    try {
      const value: unknown = JSON.parse(text);
      if (typeof value === "string") return value;
    } catch {
      // Not JSON: the text as it is.
    }
  }
  return text;
}

/** Runs the call and prints its result; resolves to the exit code. */
export async function call(config: LockhostConfig, request: CallRequest, format: LogFormat | undefined): Promise<number> {
  const node = callNode(config.host.node);
  const { admin: _admin, ...withoutAdmin } = config;
  const log = await cliLogger(config.host.logLevel, format, { node }, "stderr");
  if (!chosenBackend(config.locking).distributed) {
    log.warn(
      { backend: config.locking.backend },
      `the ${config.locking.backend} backend's locks live in this process: this call's locks do not exclude a running host's`,
    );
  }
  // Signals do what they do to `run` (signals.ts), from before the host takes a lock: Ctrl-C
  // stops the host (waits end, the call may finish, every lock is released), SIGHUP is ignored,
  // a second Ctrl-C exits now.
  let host: Host | undefined;
  let stopAsked = false;
  let forced: ((code: number) => void) | undefined;
  const force = new Promise<number>((resolve) => (forced = resolve));
  const removeSignals = handleSignals(log, {
    stop: (signal) => {
      log.info({ signal }, "stopping: waits end, the call may finish, every lock is released");
      stopAsked = true;
      void host?.stop();
    },
    force: (signal) => {
      log.warn({ signal }, "second signal: exiting without waiting; a lock not released yet is held until its TTL ends");
      forced?.(1);
    },
  });
  try {
    host = await Host.start({ ...withoutAdmin, host: { ...config.host, node } }, { logger: log });
  } catch (err) {
    removeSignals();
    throw err;
  }
  const started = host;
  // Stopped before the call could start: it did not run.
  if (stopAsked) void started.stop();
  const outcome = (async (): Promise<number> => {
    let code: number;
    try {
      const value = request.string
        ? await started.guest(request.plugin).callString(request.export, request.args)
        : await started.call(request.plugin, request.export, request.args);
      print(value, request.json);
      code = 0;
    } catch (err) {
      code = failed(err, log);
    }
    // A lock left held (named in the host's ERROR line) makes it 1.
    const unreleased = await started.stop();
    return code === 0 && unreleased.length > 0 ? 1 : code;
  })();
  try {
    return await Promise.race([outcome, force]);
  } finally {
    removeSignals();
  }
}

function print(value: GuestValue | string, json: boolean): void {
  if (json) {
    // An i64 may be past 2^53: as a string, like every fence in lockhost's JSON.
    console.log(JSON.stringify({ result: typeof value === "bigint" ? value.toString() : (value ?? null) }));
  } else if (value !== undefined) {
    console.log(String(value));
  }
}

/** Says why the call failed; 2 for what the command line got wrong (no such plugin or export, bad arguments), else 1. */
function failed(err: unknown, log: Logger): number {
  const e = toLockhostError(err);
  log.debug({ code: e.code, err: e.message }, "lockhost call failed");
  console.error(`lockhost call: ${e.code}: ${e.message}`);
  return e instanceof LockhostError && (e.code === "UNKNOWN_EXPORT" || e.code === "INVALID_ARGUMENT") ? 2 : 1;
}
