// Measures the bridge floor: see floor-worker.ts.
import { Worker } from "node:worker_threads";
import { quantile, type Round } from "./stats.js";

/**
 * `ops` bare round trips between a worker and this thread; with `spins`, the worker checks
 * the reply slot that many times before it sleeps, as the guest worker does.
 */
export async function bridgeFloor(ops: number, spins = 0): Promise<Round> {
  const buffer = new SharedArrayBuffer(8);
  const i32 = new Int32Array(buffer);
  const worker = new Worker(new URL("./floor-worker.js", import.meta.url), { workerData: { buffer, ops, spins } });
  const done = new Promise<{ totalMs: number; samples: Float64Array }>((resolve, reject) => {
    worker.once("message", resolve);
    worker.once("error", reject);
  });
  let seen = 0;
  let finished = false;
  void done.finally(() => {
    finished = true;
    Atomics.notify(i32, 0);
  });
  while (!finished && seen < ops) {
    const wait = Atomics.waitAsync(i32, 0, seen);
    if (wait.async) await wait.value;
    const seq = Atomics.load(i32, 0);
    if (seq === seen) continue;
    seen = seq;
    Atomics.store(i32, 1, seq);
    Atomics.notify(i32, 1);
  }
  const { totalMs, samples } = await done;
  await worker.terminate();
  const list = Array.from(samples);
  return { opsPerSec: (ops / totalMs) * 1000, p50Us: quantile(list, 0.5) * 1000, p99Us: quantile(list, 0.99) * 1000 };
}
