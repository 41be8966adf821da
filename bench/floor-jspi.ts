// The inline runtime's floor: one JSPI suspend and resume with no lockhost code, i.e. a wasm
// loop calling a WebAssembly.Suspending import that returns a resolved promise (what the
// quickest lock call does). Measured as the mean over the loop: a single suspension is too
// short to time on its own.
import type { Round } from "./stats.js";

/**
 * (module (import "host" "call" (func (param i32) (result i32)))
 *   (func (export "loop") (param $n i32) (result i32) ;; calls host.call $n times))
 */
const LOOP_WASM = Buffer.from("AGFzbQEAAAABBgFgAX8BfwINAQRob3N0BGNhbGwAAAMCAQAHCAEEbG9vcAABCiUBIwEBfwJAA0AgAEUNASABIAAQAGohASAAQQFrIQAMAAsLIAEL", "base64");

interface Jspi {
  readonly Suspending: new (fn: (n: number) => Promise<number>) => object;
  promising(fn: unknown): (n: number) => Promise<number>;
}

/** `ops` bare suspend+resume round trips through JSPI. */
export async function jspiFloor(ops: number): Promise<Round> {
  const jspi = WebAssembly as unknown as Jspi;
  const module = new WebAssembly.Module(LOOP_WASM);
  const call = new jspi.Suspending(async (n: number) => n & 1);
  const instance = new WebAssembly.Instance(module, { host: { call } } as unknown as WebAssembly.Imports);
  const loop = jspi.promising(instance.exports.loop);
  const started = performance.now();
  await loop(ops);
  const meanUs = ((performance.now() - started) * 1000) / ops;
  return { opsPerSec: 1e6 / meanUs, p50Us: meanUs, p99Us: meanUs };
}
