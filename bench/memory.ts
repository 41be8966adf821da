// Bench part "memory": a guest's try+release through each runtime versus the same LockService
// called directly on the main thread (the difference is the runtime's cost), and one lock
// call against the machine's floor for that runtime (a bare thread ping-pong for the worker,
// a bare JSPI suspend+resume for inline), with a host function that returns at once beside it.
import { LockService } from "../host/locking/service.js";
import { SPINS_BEFORE_SLEEP } from "../host/runtime/channel.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { bridgeFloor } from "./floor.js";
import { jspiFloor } from "./floor-jspi.js";
import {
  BENCH_FUNCTIONS,
  capsLoop,
  capsPairedLoop,
  fmt,
  guestLoop,
  INLINE,
  interleaved,
  NOT_MEASURED,
  ROUNDS,
  sequential,
  startBenchGuests,
  startInlineGuests,
  TTL_MS,
} from "./harness.js";
import { median, medianRound, table, type Round } from "./stats.js";

const OPS = Number(process.env.BENCH_OPS ?? 20_000);
/** The bench guest's twins in other languages: [row name, built guest]. */
const LANGUAGES = [
  ["Rust", "rust-bench"],
  ["C", "c-bench"],
] as const;

/** Runs the memory part and prints its tables. */
export async function memoryBench(): Promise<void> {
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const [worker] = await startBenchGuests(locks, 1);
  const [inline] = await startInlineGuests(locks, 1);
  const [workerCaps] = await startBenchGuests(locks, 1, "worker", BENCH_FUNCTIONS, "bench-caps");
  const [inlineCaps] = await startInlineGuests(locks, 1, BENCH_FUNCTIONS, "bench-caps");
  // The same loop in the bench guest's Rust and C twins, each runtime: a guest's language
  // should cost nothing per lock call (target: within 1.1x the AssemblyScript guest's row).
  const twins = await Promise.all(
    LANGUAGES.flatMap(([name, wasm]) => [
      startBenchGuests(locks, 1, "worker", {}, wasm).then(([g]) => [`${name}-worker`, g!] as const),
      ...(INLINE ? [startBenchGuests(locks, 1, "inline", {}, wasm).then(([g]) => [`${name}-inline`, g!] as const)] : []),
    ]),
  );
  const direct = async (): Promise<void> => {
    const lease = await locks.tryLock("k1", { ttlMs: TTL_MS, scope: { plugin: "direct" } });
    if (!lease) throw new Error("direct: not acquired");
    await locks.release(lease);
  };
  // The worker's wake-ups vary from round to round on a busy machine, so the host function's
  // target is also checked against lock.fence calls made in turn with it in one loop.
  const paired: { fn: Round; fence: Round }[] = [];
  const pairedRound = async (): Promise<Round> => {
    const r = await capsPairedLoop(workerCaps!, OPS, 2);
    paired.push(r);
    return r.fn;
  };
  const m = await interleaved({
    floor: () => bridgeFloor(OPS),
    floorSpin: () => bridgeFloor(OPS, SPINS_BEFORE_SLEEP),
    direct: () => sequential(OPS, direct),
    worker: () => guestLoop(worker!, OPS, 1),
    workerFence: () => guestLoop(worker!, OPS, 1, "fenceLoop"),
    workerFn: () => capsLoop(workerCaps!, OPS),
    workerPaired: pairedRound,
    ...(inline && {
      jspiFloor: () => jspiFloor(OPS * 10),
      inline: () => guestLoop(inline, OPS, 1),
      inlineFence: () => guestLoop(inline, OPS, 1, "fenceLoop"),
      ...(inlineCaps && { inlineFn: () => capsLoop(inlineCaps, OPS) }),
    }),
    ...Object.fromEntries(twins.map(([name, g]) => [name, () => guestLoop(g, OPS, 1)])),
  });
  await Promise.all([worker!.close(), inline?.close(), workerCaps!.close(), inlineCaps?.close(), ...twins.map(([, g]) => g.close())]);
  await locks.close();

  const get = (name: string): Round => m[name] ?? NOT_MEASURED;
  const measured = paired.slice(1); // the first is interleaved's warm-up
  const pairedFence = medianRound(measured.map((r) => r.fence));
  const pairedRatio = median(measured.map((r) => r.fn.p50Us / r.fence.p50Us));
  const d = get("direct");
  const perCall = (pair: Round): number => (pair.p50Us - d.p50Us) / 2;
  const ratio = (a: Round, b: Round): string => fmt(a.p50Us / b.p50Us, 2);
  const row = (name: string, r: Round, base: Round): string[] => [name, fmt(r.opsPerSec, 0), fmt(r.p50Us, 2), fmt(r.p99Us, 2), ratio(r, base)];
  const noJspi = INLINE ? "" : ` (n/a: Node ${process.versions.node} has no JSPI; npm run bench runs on one that has)`;

  console.log(`\nlockhost bench: try+release pairs on the memory backend (${ROUNDS} rounds x ${OPS} pairs, medians)\n`);
  console.log(
    table(
      ["path", "pairs/s", "p50 µs", "p99 µs", "p50 ratio"],
      [
        row("LockService direct (main thread)", d, d),
        row("guest via inline runtime (JSPI)", get("inline"), d),
        row("guest via worker runtime", get("worker"), d),
      ],
    ),
  );
  console.log(`\nThe same pairs from the bench guest in each language, against the AssemblyScript guest's row in its runtime (target ≤ 1.1x):\n`);
  console.log(
    table(
      ["path", "pairs/s", "p50 µs", "p99 µs", "p50 ratio"],
      (["inline", "worker"] as const).flatMap((runtime) => [
        row(`AssemblyScript guest, ${runtime} runtime`, get(runtime), get(runtime)),
        ...LANGUAGES.map(([name]) => row(`${name} guest, ${runtime} runtime`, get(`${name}-${runtime}`), get(runtime))),
      ]),
    ),
  );
  console.log(
    `\nOne lock call (lock.fence: a handle lookup), and one host function call that returns at once, against each runtime's floor on this machine (medians):\n`,
  );
  console.log(
    table(
      ["round trip", "calls/s", "p50 µs", "p99 µs", "p50 ratio"],
      [
        row("floor: bare JSPI suspend+resume (mean), no lockhost code", get("jspiFloor"), get("jspiFloor")),
        row("guest lock.fence, inline runtime", get("inlineFence"), get("jspiFloor")),
        row("guest host function (returns at once), inline runtime", get("inlineFn"), get("jspiFloor")),
        row("floor: bare SAB ping-pong between threads, no lockhost code", get("floor"), get("floor")),
        row(`floor: the same, spinning ${SPINS_BEFORE_SLEEP} checks before sleeping`, get("floorSpin"), get("floor")),
        row("guest lock.fence, worker runtime (spins as above)", get("workerFence"), get("floor")),
        row("guest host function (returns at once), worker runtime (ratio: to its lock.fence)", get("workerFn"), get("workerFence")),
        row("guest lock.fence, worker runtime, in turn with a host function call", pairedFence, pairedFence),
        row("guest host function (returns at once), worker runtime, in turn with lock.fence", get("workerPaired"), pairedFence),
      ],
    ),
  );
  console.log(
    `\nper lock call, (guest pair - direct pair) / 2 at p50: inline ${fmt(perCall(get("inline")), 2)} µs${noJspi}, ` +
      `worker ${fmt(perCall(get("worker")), 2)} µs.` +
      `\ninline pair / direct pair at p50: ${ratio(get("inline"), d)}x (target ≤ 2x); inline per-call overhead target ≤ 1 µs.` +
      `\nhost function, inline: p50 - JSPI floor = ${fmt(get("inlineFn").p50Us - get("jspiFloor").p50Us, 2)} µs${noJspi} (target ≤ 1 ` +
      `µs); ${ratio(get("inlineFn"), get("inlineFence"))}x the inline lock.fence.` +
      `\nhost function, worker: p50 / worker lock.fence p50 = ${ratio(get("workerFn"), get("workerFence"))}x in separate ` +
      `loops, ${fmt(pairedRatio, 2)}x in one loop (median of rounds) (target ≤ 1.1x).` +
      `\nA worker lock call costs ${ratio(get("workerFence"), get("floor"))}x a bare round trip between two threads: the thread wake-ups set that ` +
      `floor, not lockhost's code.`,
  );
}
