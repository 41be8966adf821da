// The body of the ticker test guests (test/guests/ticker.ts, ticker-b.ts: two builds of one
// plugin for the reload tests). Not an entry itself: the guest build compiles test/guests/*.ts only.
import { lock_fence } from "../../../abi/assembly/index";

/** Calls this instance has run: it starts again at 1 in a new instance. */
let calls: i32 = 0;

/**
 * One line per scheduled call, from the guest itself: its build, the schedule lock's fence
 * (handle 0: which tick of the cluster it is) and this instance's call count.
 */
export function tickLine(build: string, schedule: string): void {
  calls++;
  trace("tick build=" + build + " schedule=" + schedule + " fence=" + lock_fence(0).toString() + " call=" + calls.toString());
}

export function callCount(): i32 {
  return calls;
}
