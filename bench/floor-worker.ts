// The worker half of the bridge floor measurement: a bare SharedArrayBuffer round trip with
// the same wake-up mechanism as the guest bridge (Atomics.wait here, Atomics.waitAsync on the
// main thread) and no lockhost code, so the bench can tell the machine's cost from ours.
import { parentPort, workerData } from "node:worker_threads";

const { buffer, ops, spins } = workerData as { buffer: SharedArrayBuffer; ops: number; spins: number };
const i32 = new Int32Array(buffer);
const samples = new Float64Array(ops);
const started = performance.now();
for (let seq = 1; seq <= ops; seq++) {
  const t0 = performance.now();
  Atomics.store(i32, 0, seq);
  Atomics.notify(i32, 0);
  for (let n = 0; n < spins && Atomics.load(i32, 1) !== seq; n++);
  for (;;) {
    const seen = Atomics.load(i32, 1);
    if (seen === seq) break;
    Atomics.wait(i32, 1, seen);
  }
  samples[seq - 1] = performance.now() - t0;
}
parentPort!.postMessage({ totalMs: performance.now() - started, samples });
