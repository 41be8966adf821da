// Telling a service manager where the process is (systemd's notify protocol, sd_notify(3)):
// `lockhost run` sends READY=1 when it is ready (the moment /readyz turns 200: admin listener up,
// backend answered, plugins loaded), STOPPING=1 when a graceful stop begins, and a reload sends
// reloadingState() then READY=1. The service manager (systemd with Type=notify, podman
// --sdnotify) names its socket in NOTIFY_SOCKET: a path, or "@name" for an abstract socket.
//
// How: the protocol is one datagram on a unix socket, and Node's dgram has no unix datagram
// sockets. The npm packages that add them (unix-dgram, sd-notify, systemd-daemon) are native
// addons built at install time by node-gyp, a compiler on every user's machine for one message
// at start. So the message goes through systemd's own `systemd-notify`, which every systemd
// machine has (it ships in the same package as systemd), with --pid naming this process as the
// main one. It knows the protocol's corners: "@" abstract names, and (systemd 246 on) waiting
// until the manager has taken the message, so a message from a process that has already exited
// is not dropped. Its messages come from a child process, so the unit says NotifyAccess=all
// (examples/systemd/lockhost.service). A few messages per process lifetime: a spawn each is cheap.
//
// Never fatal: without NOTIFY_SOCKET nothing is sent; a message that cannot be sent (no
// systemd-notify, a socket nobody listens on) is logged once, at warn level, and the host runs on.
import { spawn } from "node:child_process";
import type { Logger } from "pino";

/** How long one systemd-notify may take (it waits up to 5 s for the manager to take the message). */
const SEND_TIMEOUT_MS = 10_000;

let log: Pick<Logger, "warn" | "debug"> | undefined;
let warned = false;
/** Messages go out one after another, in the order they were asked for. */
let queue: Promise<unknown> = Promise.resolve();

/** Where notify() logs its one warning (the CLI's logger); before this, to stderr. */
export function setNotifyLogger(logger: Pick<Logger, "warn" | "debug">): void {
  log = logger;
}

/** Whether a service manager asked to be told (NOTIFY_SOCKET is set). */
export function notifyWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  return (env.NOTIFY_SOCKET ?? "") !== "";
}

/**
 * Sends `state` to the service manager: newline-separated VARIABLE=VALUE assignments, as
 * sd_notify(3) takes them ("READY=1", "STOPPING=1", reloadingState()). Resolves true once it
 * was taken, false when nothing was sent (no NOTIFY_SOCKET) or it failed (logged once); never
 * rejects. Messages are sent in call order.
 */
export function notify(state: string): Promise<boolean> {
  if (!notifyWanted()) return Promise.resolve(false);
  const sent = queue.then(() => send(state));
  queue = sent;
  return sent;
}

/** The message that starts a reload: RELOADING=1 with the monotonic clock's time in µs (systemd 253's Type=notify-reload needs it). */
export function reloadingState(): string {
  // process.hrtime reads CLOCK_MONOTONIC, the clock MONOTONIC_USEC is on.
  return `RELOADING=1\nMONOTONIC_USEC=${process.hrtime.bigint() / 1000n}`;
}

/** Resolves once every message asked for so far has been sent or has failed. */
export function notifySettled(): Promise<void> {
  return queue.then(() => undefined);
}

function send(state: string): Promise<boolean> {
  const assignments = state.split("\n").filter((line) => line !== "");
  return new Promise((resolve) => {
    let stderr = "";
    let done = false;
    const finish = (ok: boolean, why?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (!ok) failed(state, why!);
      else log?.debug({ state }, "service manager notified");
      resolve(ok);
    };
    const child = spawn("systemd-notify", [`--pid=${process.pid}`, ...assignments], { stdio: ["ignore", "ignore", "pipe"] });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      finish(false, `systemd-notify did not finish within ${SEND_TIMEOUT_MS} ms`);
    }, SEND_TIMEOUT_MS);
    timer.unref();
    child.stderr!.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (err: NodeJS.ErrnoException) =>
      finish(false, err.code === "ENOENT" ? "systemd-notify is not on PATH (it comes with systemd)" : `systemd-notify could not start: ${err.message}`),
    );
    child.on("close", (code, signal) => {
      if (code === 0) finish(true);
      else finish(false, `systemd-notify ${signal ? `was ended by ${signal}` : `exited ${code}`}${stderr.trim() ? `: ${stderr.trim()}` : ""}`);
    });
  });
}

function failed(state: string, why: string): void {
  if (warned) return;
  warned = true;
  const msg = `NOTIFY_SOCKET is set but the service manager could not be told ${JSON.stringify(state)}: ${why}; lockhost runs on, and says this once`;
  if (log) log.warn({ notifySocket: process.env.NOTIFY_SOCKET }, msg);
  else console.error(`lockhost: ${msg}`);
}
