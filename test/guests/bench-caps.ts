// Benchmark guest for what a guest does under its lock: a host function that returns at once
// (`bench.noop`) and an HTTP GET through the raw `http_request` binding, each call timed inside
// the guest with performance.now() (imports env.performance.now), as bench.ts times lock calls.

import { http_request, lock_fence, lock_release, lock_try } from "../../abi/assembly/index";

export { lockhost_abi_version, lockhost_alloc, lockhost_free } from "../../abi/assembly/index";

// @ts-ignore: decorator
@external("bench", "noop")
declare function bench_noop(inPtr: usize, inLen: i32, bufPtr: usize, bufCap: i32): i32;

const MAX_SAMPLES = 1_000_000;

/** Per-call durations of the last loop, in milliseconds. */
let samples = new Float64Array(0);
let count: i32 = 0;
/** The lock.fence calls' durations of the last pairedLoop, in milliseconds. */
let fenceSamples = new Float64Array(0);

/** Reply buffers, allocated once outside the timed parts. */
const fnBuf = new ArrayBuffer(16);
const httpBuf = new ArrayBuffer(4096);

/**
 * Calls `bench.noop` `n` times with a 0-byte input into a 16-byte buffer, timing each; returns
 * the total time in ms. Aborts if a call fails (the host function returns an empty reply).
 */
export function fnLoop(n: i32): f64 {
  assert(n >= 0 && n <= MAX_SAMPLES, "bench-caps: n must be 0 to 1000000");
  if (samples.length < n) samples = new Float64Array(n); // preallocated outside the timed part
  const bufPtr = changetype<usize>(fnBuf);
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = bench_noop(0, 0, bufPtr, 16);
    const dt = performance.now() - t0;
    assert(r == 0, "bench-caps: bench.noop returned " + r.toString());
    unchecked(samples[i] = dt);
    total += dt;
  }
  count = n;
  return total;
}

/**
 * Takes "k<keyId>", then `n` times: one lock.fence on it and one `bench.noop`, each timed, so
 * both calls meet the same machine state (on a busy machine a worker's wake-ups vary from
 * round to round). pct() then reports the noop calls, fencePct() the fence calls. Returns
 * the noop calls' total time in ms.
 */
export function pairedLoop(n: i32, keyId: i32): f64 {
  assert(n >= 0 && n <= MAX_SAMPLES, "bench-caps: n must be 0 to 1000000");
  if (samples.length < n) samples = new Float64Array(n);
  if (fenceSamples.length < n) fenceSamples = new Float64Array(n);
  const key = String.UTF8.encode("k" + keyId.toString());
  const h = lock_try(changetype<usize>(key), key.byteLength, 60_000, 0);
  assert(h > 0, "bench-caps: try did not acquire: " + h.toString());
  const bufPtr = changetype<usize>(fnBuf);
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const f = lock_fence(h);
    const t1 = performance.now();
    const r = bench_noop(0, 0, bufPtr, 16);
    const t2 = performance.now();
    assert(f > 0, "bench-caps: fence failed");
    assert(r == 0, "bench-caps: bench.noop returned " + r.toString());
    unchecked(fenceSamples[i] = t1 - t0);
    unchecked(samples[i] = t2 - t1);
    total += t2 - t1;
  }
  count = n;
  assert(lock_release(h) == 0, "bench-caps: release failed");
  return total;
}

/**
 * Does `n` GETs of `url` through `http_request` into a preallocated buffer, timing each;
 * returns the total time in ms. Aborts if a request fails or its reply does not fit.
 */
export function httpLoop(n: i32, url: string): f64 {
  assert(n >= 0 && n <= MAX_SAMPLES, "bench-caps: n must be 0 to 1000000");
  if (samples.length < n) samples = new Float64Array(n);
  const head = String.UTF8.encode("GET " + url);
  const headPtr = changetype<usize>(head);
  const headLen = head.byteLength;
  const bufPtr = changetype<usize>(httpBuf);
  const cap = httpBuf.byteLength;
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = http_request(headPtr, headLen, 0, 0, 0, 0, bufPtr, cap);
    const dt = performance.now() - t0;
    assert(r > 0 && r <= cap, "bench-caps: http_request returned " + r.toString());
    unchecked(samples[i] = dt);
    total += dt;
  }
  count = n;
  // Keep `head` reachable until the loop is done.
  assert(head.byteLength == headLen);
  return total;
}

/**
 * The quantile `perMille`/1000 (nearest rank) of the last loop's samples, in microseconds;
 * 0 if none. Per-mille as an i32 because the host passes i32 arguments only.
 */
export function pct(perMille: i32): f64 {
  return quantileUs(samples, perMille);
}

/** pct() of the last pairedLoop's lock.fence calls. */
export function fencePct(perMille: i32): f64 {
  return quantileUs(fenceSamples, perMille);
}

function quantileUs(samples: Float64Array, perMille: i32): f64 {
  if (count == 0) return 0;
  const q = <f64>perMille / 1000.0;
  const sorted = samples.slice(0, count);
  sorted.sort();
  let idx = <i32>Math.ceil(q * <f64>count) - 1;
  if (idx < 0) idx = 0;
  if (idx >= count) idx = count - 1;
  return sorted[idx] * 1000.0;
}
