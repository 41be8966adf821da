// What every bench part shares: timed loops (sequential and concurrent) and bench guests
// running in the real runtimes (worker, and inline where this Node has JSPI) over a LockService.
import { fileURLToPath } from "node:url";
import { pino, type Logger } from "pino";
import type { LockService } from "../host/locking/service.js";
import { prepareGuest, type GuestGrantOptions } from "../host/runtime/prepare-guest.js";
import type { Runtime } from "../abi/ops.js";
import type { GuestInstance } from "../host/runtime/guest-instance.js";
import type { GuestRecorder } from "../host/runtime/guest-recorder.js";
import { jspiAvailable } from "../host/runtime/jspi.js";
import { startGuestInstance } from "../host/runtime/start-guest.js";
import { medianRound, quantile, type Round } from "./stats.js";

/** The servers every part measures on (REDIS_URL / DATABASE_URL; loopback defaults). */
export const REDIS_URL = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
export const DATABASE_URL = process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/test";
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 7);
export const TTL_MS = 10_000;
export const benchLog: Logger = pino({ level: "warn" });

/** Runs `op` `n` times in a row, timing each. */
export async function sequential(n: number, op: (i: number) => Promise<unknown>): Promise<Round> {
  const samples = new Array<number>(n);
  const started = performance.now();
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await op(i);
    samples[i] = performance.now() - t0;
  }
  const totalMs = performance.now() - started;
  return { opsPerSec: (n / totalMs) * 1000, p50Us: quantile(samples, 0.5) * 1000, p99Us: quantile(samples, 0.99) * 1000 };
}

/** Runs `workers` loops at once, each doing `op(worker, i)` `n` times in a row. */
export async function concurrent(workers: number, n: number, op: (worker: number, i: number) => Promise<unknown>): Promise<Round> {
  const samples: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        await op(w, i);
        samples.push(performance.now() - t0);
      }
    }),
  );
  const totalMs = performance.now() - started;
  return { opsPerSec: ((workers * n) / totalMs) * 1000, p50Us: quantile(samples, 0.5) * 1000, p99Us: quantile(samples, 0.99) * 1000 };
}

/** Runs every measurement once as a warm-up, then ROUNDS times interleaved; returns medians. */
export async function interleaved(measures: Record<string, () => Promise<Round>>): Promise<Record<string, Round>> {
  const names = Object.keys(measures);
  for (const name of names) await measures[name]!();
  const rounds: Record<string, Round[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let r = 0; r < ROUNDS; r++) for (const name of names) rounds[name]!.push(await measures[name]!());
  return Object.fromEntries(names.map((n) => [n, medianRound(rounds[n]!)]));
}

/**
 * The grant every bench-caps guest needs (it imports `bench.noop`): namespace "bench" with one
 * function that returns at once. Add `http` for its GETs.
 */
export const BENCH_FUNCTIONS: Partial<GuestGrantOptions> = { functions: ["bench"], hostFunctions: { bench: { noop: () => undefined } } };

/** Whether this Node can run the inline runtime (npm run bench runs on one that can). */
export const INLINE = jspiAvailable();

/**
 * Bench guests (test/guests/build/<guest>.wasm: bench, bench-caps, or the bench guest's twin
 * in another language: rust-bench, c-bench) in `runtime`, each its own instance, over one LockService;
 * with `recorder`, each tells it of its calls (as the host's metrics are told).
 */
export async function startBenchGuests(
  locks: LockService,
  count: number,
  runtime: Runtime = "worker",
  grants: Partial<GuestGrantOptions> = {},
  guest: string = "bench",
  recorder?: GuestRecorder,
): Promise<GuestInstance[]> {
  const wasm = fileURLToPath(new URL(`../../test/guests/build/${guest}.wasm`, import.meta.url));
  return Promise.all(
    Array.from({ length: count }, async (_, i) =>
      startGuestInstance({
        runtime,
        ...(await prepareGuest(locks, benchLog, { plugin: `bench-${runtime}${i}`, wasm, memoryLimitMib: 64, ...grants })),
        callTimeoutMs: 600_000,
        ...(recorder && { recorder }),
      }),
    ),
  );
}

/** Inline bench guests where this Node has JSPI, else none. */
export async function startInlineGuests(
  locks: LockService,
  count: number,
  grants: Partial<GuestGrantOptions> = {},
  guest: "bench" | "bench-caps" = "bench",
): Promise<GuestInstance[]> {
  return INLINE ? startBenchGuests(locks, count, "inline", grants, guest) : [];
}

/** A round for a measurement this Node cannot make (no JSPI): shown as n/a. */
export const NOT_MEASURED: Round = { opsPerSec: Number.NaN, p50Us: Number.NaN, p99Us: Number.NaN };

/** One round of a guest's in-guest timed loop of try+release pairs on "k<keyId>". */
export async function guestLoop(guest: GuestInstance, ops: number, keyId: number, loop: "loop" | "fenceLoop" = "loop"): Promise<Round> {
  const totalMs = (await guest.call(loop, [ops, keyId])) as number;
  const p50Us = (await guest.call("pct", [500])) as number;
  const p99Us = (await guest.call("pct", [990])) as number;
  return { opsPerSec: (ops / totalMs) * 1000, p50Us, p99Us };
}

/** One round of a bench-caps guest's in-guest timed loop of `ops` calls: `fnLoop` (bench.noop) or `httpLoop` (GETs of `url`). */
export async function capsLoop(guest: GuestInstance, ops: number, url?: string): Promise<Round> {
  const totalMs = (await guest.call(url === undefined ? "fnLoop" : "httpLoop", url === undefined ? [ops] : [ops, url])) as number;
  const p50Us = (await guest.call("pct", [500])) as number;
  const p99Us = (await guest.call("pct", [990])) as number;
  return { opsPerSec: (ops / totalMs) * 1000, p50Us, p99Us };
}

/**
 * One round of a bench-caps guest's pairedLoop on "k<keyId>": a lock.fence and a bench.noop
 * call in turn, `ops` times; the noop calls' round, and the fence calls' round.
 */
export async function capsPairedLoop(guest: GuestInstance, ops: number, keyId: number): Promise<{ fn: Round; fence: Round }> {
  const totalMs = (await guest.call("pairedLoop", [ops, keyId])) as number;
  const q = async (fn: string, perMille: number): Promise<number> => (await guest.call(fn, [perMille])) as number;
  const fn: Round = { opsPerSec: (ops / totalMs) * 1000, p50Us: await q("pct", 500), p99Us: await q("pct", 990) };
  const fence: Round = { opsPerSec: Number.NaN, p50Us: await q("fencePct", 500), p99Us: await q("fencePct", 990) };
  return { fn, fence };
}

/** Several guests' loops at once (each its own key): total pairs/s, and the median guest's percentiles. */
export async function guestsConcurrent(guests: readonly GuestInstance[], ops: number): Promise<Round> {
  const started = performance.now();
  const rounds = await Promise.all(guests.map((g, i) => guestLoop(g, ops, i + 1)));
  const totalMs = performance.now() - started;
  const m = medianRound(rounds);
  return { opsPerSec: ((guests.length * ops) / totalMs) * 1000, p50Us: m.p50Us, p99Us: m.p99Us };
}

export const fmt = (n: number, digits = 1): string => (Number.isNaN(n) ? "n/a" : n.toFixed(digits));

/** A table row for `round`, with its ratio to `base` (p50 latency, or throughput when `by` says so). */
export function row(name: string, round: Round, base: Round | undefined, by: "p50" | "throughput" = "p50"): string[] {
  const ratio = base === undefined ? "1.00" : by === "p50" ? fmt(round.p50Us / base.p50Us, 2) : fmt(base.opsPerSec / round.opsPerSec, 2);
  return [name, fmt(round.opsPerSec, 0), fmt(round.p50Us), fmt(round.p99Us), ratio];
}
