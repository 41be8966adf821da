// Bench part "memory": a guest's try+release through the worker runtime versus the same
// LockService called directly on the main thread. The difference is the bridge's cost.
import { fileURLToPath } from "node:url";
import { pino } from "pino";
import { LockService } from "../host/locking/service.js";
import { GuestLocks } from "../host/runtime/guest-locks.js";
import { loadGuestModule } from "../host/runtime/guest-module.js";
import { WorkerGuest } from "../host/runtime/worker/worker-guest.js";
import { MemoryBackend } from "../plugins/backends/memory.js";
import { bridgeFloor } from "./floor.js";
import { medianRound, quantile, table, type Round } from "./stats.js";

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
const OPS = Number(process.env.BENCH_OPS ?? 20_000);
const TTL_MS = 10_000;

async function directRound(locks: LockService): Promise<Round> {
  const samples = new Array<number>(OPS);
  const started = performance.now();
  for (let i = 0; i < OPS; i++) {
    const t0 = performance.now();
    const lease = await locks.tryLock("k1", { ttlMs: TTL_MS, scope: { plugin: "direct" } });
    if (!lease) throw new Error("direct: not acquired");
    await locks.release(lease);
    samples[i] = performance.now() - t0;
  }
  const totalMs = performance.now() - started;
  return { opsPerSec: (OPS / totalMs) * 1000, p50Us: quantile(samples, 0.5) * 1000, p99Us: quantile(samples, 0.99) * 1000 };
}

async function guestRound(guest: WorkerGuest, loop: "loop" | "fenceLoop" = "loop"): Promise<Round> {
  const totalMs = (await guest.call(loop, [OPS, 1])) as number;
  const p50Us = (await guest.call("pct", [500])) as number;
  const p99Us = (await guest.call("pct", [990])) as number;
  return { opsPerSec: (OPS / totalMs) * 1000, p50Us, p99Us };
}

const fmt = (n: number, digits = 1): string => n.toFixed(digits);

/** Runs the memory part and prints its tables. */
export async function memoryBench(): Promise<void> {
  const log = pino({ level: "warn" });
  const locks = new LockService(new MemoryBackend(), { node: "bench" });
  const wasm = fileURLToPath(new URL("../../test/guests/build/bench.wasm", import.meta.url));
  const module = await loadGuestModule("bench", wasm, 64 * 2 ** 20);
  const guest = await WorkerGuest.start({
    module,
    locks: new GuestLocks(locks, { plugin: "bench", allowsGlobal: () => false }, log),
    callTimeoutMs: 120_000,
    log,
  });

  // Warm both paths up (JIT, worker start) before measuring.
  await directRound(locks);
  await guestRound(guest);
  const direct: Round[] = [];
  const viaGuest: Round[] = [];
  const fenceTrips: Round[] = [];
  const floor: Round[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    floor.push(await bridgeFloor(OPS));
    direct.push(await directRound(locks));
    viaGuest.push(await guestRound(guest));
    fenceTrips.push(await guestRound(guest, "fenceLoop"));
  }
  await guest.close();
  await locks.close();

  const d = medianRound(direct);
  const g = medianRound(viaGuest);
  const f = medianRound(fenceTrips);
  const fl = medianRound(floor);
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

