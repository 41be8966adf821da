// The body of the ticker test guests (test/guests/ticker.ts, ticker-b.ts: two builds of one
// plugin for the reload tests). Not an entry itself: the guest build compiles test/guests/*.ts only.
import { scheduleLockState, STATE_HELD } from "../../../abi/assembly/index";

/** Calls this instance has run: it starts again at 1 in a new instance. */
let calls: i32 = 0;

/**
 * One line per scheduled call, from the guest itself: its build, the export, whether the
 * schedule's lock (handle 0) is held as it runs, and this instance's call count.
 */
export function tickLine(build: string, schedule: string): void {
  calls++;
  trace("tick build=" + build + " schedule=" + schedule + " held=" + (scheduleLockState() == STATE_HELD ? "yes" : "no") + " call=" + calls.toString());
}

export function callCount(): i32 {
  return calls;
}
