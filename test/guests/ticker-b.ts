// Test guest for reloads, build "b": ticker.ts with another build name, so its module's bytes
// (and content hash) differ and its lines say which build ran.
import { tickLine, callCount } from "./ticker/tick";

export { lockhost_abi_version } from "../../abi/assembly/index";

export function run(): void {
  tickLine("b", "run");
}

export function other(): void {
  tickLine("b", "other");
}

export function calls(): i32 {
  return callCount();
}
