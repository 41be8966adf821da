// When a schedule fires next. Intervals are aligned to the epoch (every 5 s fires at :00,
// :05, ...) so that every node of a cluster fires the same tick at the same moment, and the
// schedule lock can decide which one runs it.
import { Cron } from "croner";
import type { ScheduleSpec } from "../config/types.js";

/** Computes fire times of one schedule. */
export interface TickClock {
  /** The first fire time strictly after `afterMs` (epoch ms). */
  next(afterMs: number): number;
}

/** A TickClock for `spec`. */
export function tickClock(spec: ScheduleSpec): TickClock {
  if (spec.kind === "interval") {
    const every = spec.everyMs;
    return { next: (after) => Math.floor(after / every) * every + every };
  }
  if (spec.kind === "declared") {
    // Replaced by the plugin's own schedules when the host loads it (declared.ts).
    throw new Error("a declared schedule has no clock until the plugin's lockhost_schedules() is read");
  }
  const cron = new Cron(spec.expression, { paused: true });
  return {
    next: (after) => {
      const at = cron.nextRun(new Date(after));
      if (!at) throw new Error(`cron expression "${spec.expression}" has no future run`);
      return at.getTime();
    },
  };
}
