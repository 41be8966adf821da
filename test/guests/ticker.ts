// Test guest for reloads, build "a" (ticker-b.ts is build "b" of the same plugin): each scheduled
// export writes one line (test/guests/ticker/tick.ts) the reload tests count ticks from.
import { tickLine, callCount } from "./ticker/tick";

export { lockhost_abi_version } from "../../abi/assembly/index";

export function run(): void {
  tickLine("a", "run");
}

export function other(): void {
  tickLine("a", "other");
}

export function calls(): i32 {
  return callCount();
}
