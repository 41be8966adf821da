// Bench part "memory": a guest's try+release through the worker runtime versus the same
// LockService called directly on the main thread. The difference is the bridge's cost.
import { LockService } from "../host/locking/service.js";
import { MemoryBackend } from "../plugins/backends/memory/index.js";
import { bridgeFloor } from "./floor.js";
import { fmt, guestLoop, interleaved, ROUNDS, sequential, startBenchGuests, TTL_MS } from "./harness.js";
import { table } from "./stats.js";

const OPS = Number(process.env.BENCH_OPS ?? 20_000);

/** Runs the memory part and prints its tables. */
export async function memoryBench(): Promise<void> {
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const [guest] = await startBenchGuests(locks, 1);
  const direct = async (): Promise<void> => {
    const lease = await locks.tryLock("k1", { ttlMs: TTL_MS, scope: { plugin: "direct" } });
    if (!lease) throw new Error("direct: not acquired");
    await locks.release(lease);
  };
  const m = await interleaved({
    floor: () => bridgeFloor(OPS),
    direct: () => sequential(OPS, direct),
    guest: () => guestLoop(guest!, OPS, 1),
    fence: () => guestLoop(guest!, OPS, 1, "fenceLoop"),
  });
  await guest!.close();
  await locks.close();

  const d = m.direct!;
  const g = m.guest!;
  const f = m.fence!;
  const fl = m.floor!;
  const overheadPerCallUs = (g.p50Us - d.p50Us) / 2;
  console.log(`\nlockhost bench: try+release pairs on the memory backend (${ROUNDS} rounds x ${OPS} pairs, medians)\n`);
  console.log(
    table(
      ["path", "pairs/s", "p50 µs", "p99 µs", "p50 ratio"],
      [
        ["LockService direct (main thread)", fmt(d.opsPerSec, 0), fmt(d.p50Us), fmt(d.p99Us), "1.00"],
        ["guest via worker runtime", fmt(g.opsPerSec, 0), fmt(g.p50Us), fmt(g.p99Us), fmt(g.p50Us / d.p50Us, 2)],
      ],
    ),
  );
  console.log(`\nOne lock call's round trip through the bridge, against the machine's floor (medians):\n`);
  console.log(
    table(
      ["round trip", "calls/s", "p50 µs", "p99 µs", "p50 ratio"],
      [
        ["floor: bare SAB ping-pong, no lockhost code", fmt(fl.opsPerSec, 0), fmt(fl.p50Us), fmt(fl.p99Us), "1.00"],
        ["guest lock.fence (bridge + handle lookup)", fmt(f.opsPerSec, 0), fmt(f.p50Us), fmt(f.p99Us), fmt(f.p50Us / fl.p50Us, 2)],
      ],
    ),
  );
  console.log(
    `\nbridge overhead per lock call (p50, (guest pair - direct pair) / 2): ${fmt(overheadPerCallUs)} µs` +
      ` (target ≤ 10 µs: ${overheadPerCallUs <= 10 ? "met" : "NOT met"}).` +
      `\nA lock call costs ${fmt(f.p50Us / fl.p50Us, 2)}x a bare round trip between two threads on this machine:` +
      ` the wake-ups, not lockhost's code, set the floor (it moves with how idle the vCPUs are).`,
  );
}

