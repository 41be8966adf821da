// What the host's log says about locks: a loss and a force-release at info (an operator must
// hear of them), acquisitions, releases and waits at debug. Subscribes only to what the log
// level shows, so at info the lock path builds no acquire or release events at all.
import type { Logger } from "pino";
import { LOCK_EVENT_TYPES, type LockEvent, type LockEventType } from "./locking/events.js";
import type { LockService } from "./locking/service.js";

/** Logs `locks`' events on `log`; returns the function that stops. */
export function logLockEvents(locks: LockService, log: Logger): () => void {
  if (!log.isLevelEnabled("info")) return () => undefined;
  const types: readonly LockEventType[] = log.isLevelEnabled("debug") ? LOCK_EVENT_TYPES : ["lost", "force-released"];
  const stopEvents = locks.onEvent((event) => logEvent(log, event), types);
  // One line per round of cleanup (after an outage: one line), naming a few of the locks.
  const stopCleanups = locks.onCleanup((cleaned) => {
    const names = cleaned.slice(0, SHOWN_NAMES).map((c) => c.name);
    const more = cleaned.length > SHOWN_NAMES ? ` and ${cleaned.length - SHOWN_NAMES} more` : "";
    log.info(
      { count: cleaned.length, locks: names },
      `released ${cleaned.length} lock(s) left behind by calls that failed with the backend (${names.join(", ")}${more}): their acquisition or ` +
        `release had timed out but ran on the server`,
    );
  });
  return () => {
    stopEvents();
    stopCleanups();
  };
}

/** How many lock names a cleanup line names. */
const SHOWN_NAMES = 5;

function logEvent(log: Logger, e: LockEvent): void {
  switch (e.type) {
    case "lost":
      log.info({ lock: e.name, fence: e.fence, plugin: e.plugin }, `lock lost: ${e.reason}`);
      break;
    case "force-released":
      log.info({ lock: e.name, found: e.found }, e.found ? "lock force-released by an operator" : "force-release: the lock was not held");
      break;
    case "acquired":
      log.debug({ lock: e.name, fence: e.fence, plugin: e.plugin, ttlMs: e.ttlMs }, "lock acquired");
      break;
    case "released":
      log.debug({ lock: e.name, fence: e.fence, plugin: e.plugin, heldMs: e.heldMs }, "lock released");
      break;
    case "waited":
      log.debug({ lock: e.name, waitedMs: e.waitedMs, outcome: e.outcome }, "wait for a lock ended");
      break;
  }
}
