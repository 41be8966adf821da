// Benchmark guest: the cost of a try + release pair through the raw bindings,
// measured inside the guest with performance.now() (imports env.performance.now).

import { lock_try, lock_release, lock_fence } from "../../abi/assembly/index";

export { lockhost_abi_version } from "../../abi/assembly/index";

const MAX_SAMPLES = 1_000_000;

/** Per-iteration durations of the last loop, in milliseconds. */
let samples = new Float64Array(0);
let count: i32 = 0;

/**
 * Does `n` times (try "k<keyId>" with TTL 10 s, release) and returns the total
 * time in ms. Aborts if a try does not acquire or a release fails.
 */
export function loop(n: i32, keyId: i32): f64 {
  assert(n >= 0 && n <= MAX_SAMPLES, "bench: n must be 0 to 1000000");
  if (samples.length < n) samples = new Float64Array(n); // preallocated outside the timed part
  const key = String.UTF8.encode("k" + keyId.toString());
  const keyPtr = changetype<usize>(key);
  const keyLen = key.byteLength;
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const h = lock_try(keyPtr, keyLen, 10_000, 0);
    const r = lock_release(h);
    const dt = performance.now() - t0;
    assert(h > 0, "bench: try did not acquire: " + h.toString());
    assert(r == 0, "bench: release failed: " + r.toString());
    unchecked(samples[i] = dt);
    total += dt;
  }
  count = n;
  // Keep `key` reachable until the loop is done (no allocation happens in it, but be explicit).
  assert(key.byteLength == keyLen);
  return total;
}

/**
 * Takes "k<keyId>" once, then does `n` fence calls on it, timing each: the cost of a bare
 * round trip through the host bridge (a fence is a table lookup on the host side).
 * Returns the total time in ms; pct() then reports these samples.
 */
export function fenceLoop(n: i32, keyId: i32): f64 {
  assert(n >= 0 && n <= MAX_SAMPLES, "bench: n must be 0 to 1000000");
  if (samples.length < n) samples = new Float64Array(n);
  const key = String.UTF8.encode("k" + keyId.toString());
  const h = lock_try(changetype<usize>(key), key.byteLength, 60_000, 0);
  assert(h > 0, "bench: try did not acquire: " + h.toString());
  let total: f64 = 0;
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const f = lock_fence(h);
    const dt = performance.now() - t0;
    assert(f > 0, "bench: fence failed");
    unchecked(samples[i] = dt);
    total += dt;
  }
  count = n;
  assert(lock_release(h) == 0, "bench: release failed");
  return total;
}

/**
 * The quantile `perMille`/1000 (nearest rank) of the last loop's samples, in microseconds;
 * 0 if none. Per-mille as an i32 because the host passes i32 arguments only.
 */
export function pct(perMille: i32): f64 {
  if (count == 0) return 0;
  const q = <f64>perMille / 1000.0;
  const sorted = samples.slice(0, count);
  sorted.sort();
  let idx = <i32>Math.ceil(q * <f64>count) - 1;
  if (idx < 0) idx = 0;
  if (idx >= count) idx = count - 1;
  return sorted[idx] * 1000.0;
}
