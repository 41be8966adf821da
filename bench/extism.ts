// Bench part "extism": an Extism plugin's try+release pair through the lock functions
// (extism:host/user: JSON arguments and replies copied through kernel memory, the Extism
// convention) against the same pair through lockhost's own ABI, in the inline runtime (the
// target: within 2x) and, for reference, the worker runtime. Each round is one export call
// doing OPS pairs, timed from the host alike for both guests (an Extism plugin has no clock
// import): pairs/s and the mean per pair, medians of interleaved rounds.
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import { fmt, INLINE, interleaved, NOT_MEASURED, ROUNDS, startBenchGuests } from "./harness.js";
import { table, type Round } from "./stats.js";

const OPS = Number(process.env.BENCH_OPS ?? 20_000);

/** One round: one call of `run` doing OPS pairs, timed from the host. */
async function round(run: () => Promise<unknown>): Promise<Round> {
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  return { opsPerSec: (OPS / ms) * 1000, p50Us: (ms * 1000) / OPS, p99Us: Number.NaN };
}

const native = (g: GuestInstance) => () => round(() => g.call("loop", [OPS, 1]));
const extism = (g: GuestInstance) => () => round(() => g.callString("loop", [`${OPS} 2`]));

/** Runs the extism part and prints its table. */
export async function extismBench(): Promise<void> {
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const [worker] = await startBenchGuests(locks, 1, "worker");
  const [workerExtism] = await startBenchGuests(locks, 1, "worker", {}, "extism-bench");
  const inline = INLINE ? (await startBenchGuests(locks, 1, "inline"))[0] : undefined;
  const inlineExtism = INLINE ? (await startBenchGuests(locks, 1, "inline", {}, "extism-bench"))[0] : undefined;
  const m = await interleaved({
    worker: native(worker!),
    workerExtism: extism(workerExtism!),
    ...(inline && inlineExtism && { inline: native(inline), inlineExtism: extism(inlineExtism) }),
  });
  await Promise.all([worker!.close(), workerExtism!.close(), inline?.close(), inlineExtism?.close()]);
  await locks.close();

  const get = (name: string): Round => m[name] ?? NOT_MEASURED;
  const row = (name: string, r: Round, base: Round): string[] => [name, fmt(r.opsPerSec, 0), fmt(r.p50Us, 2), fmt(r.p50Us / base.p50Us, 2)];
  const noJspi = INLINE ? "" : ` (inline: n/a, Node ${process.versions.node} has no JSPI; npm run bench runs on one that has)`;
  console.log(`\nlockhost bench: an Extism plugin's try+release pairs vs lockhost's own ABI, memory backend (${ROUNDS} rounds x ${OPS} pairs, medians)\n`);
  console.log(
    table(
      ["path", "pairs/s", "µs per pair", "ratio"],
      [
        row("lockhost ABI guest, inline runtime", get("inline"), get("inline")),
        row("Extism plugin (lock functions, JSON), inline runtime", get("inlineExtism"), get("inline")),
        row("lockhost ABI guest, worker runtime", get("worker"), get("worker")),
        row("Extism plugin (lock functions, JSON), worker runtime", get("workerExtism"), get("worker")),
      ],
    ),
  );
  console.log(
    `\nExtism / lockhost ABI per pair, inline runtime: ${fmt(get("inlineExtism").p50Us / get("inline").p50Us, 2)}x (target ≤ 2x)${noJspi}; ` +
      `worker runtime: ${fmt(get("workerExtism").p50Us / get("worker").p50Us, 2)}x.`,
  );
}
