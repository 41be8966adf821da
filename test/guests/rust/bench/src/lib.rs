//! The Rust twin of test/guests/bench.ts: a try + release pair through the raw imports, timed
//! inside the guest with env.performance.now, as the AssemblyScript bench guest does.
#![no_std]

use lockhost::sys;

lockhost::export_abi_version!();
lockhost::panic_handler!();

#[link(wasm_import_module = "env")]
extern "C" {
    #[link_name = "performance.now"]
    fn now() -> f64;
}

const MAX_SAMPLES: usize = 1_000_000;
/// Per-iteration durations of the last loop, in milliseconds: pages grown at the first use
/// (a static array of them measured as an 8 MB data segment in the module).
static mut SAMPLES: *mut f64 = core::ptr::null_mut();

fn samples() -> &'static mut [f64] {
    unsafe {
        if SAMPLES.is_null() {
            let pages = (MAX_SAMPLES * 8 + 65535) / 65536;
            let at = core::arch::wasm32::memory_grow(0, pages);
            if at == usize::MAX {
                core::arch::wasm32::unreachable();
            }
            SAMPLES = (at * 65536) as *mut f64;
        }
        core::slice::from_raw_parts_mut(SAMPLES, MAX_SAMPLES)
    }
}
static mut COUNT: usize = 0;

/// "k<id>" in `buf`; its length.
fn key_of(id: i32, buf: &mut [u8; 16]) -> usize {
    let mut digits = [0u8; 12];
    let (mut n, mut u) = (0, id.unsigned_abs());
    loop {
        digits[n] = b'0' + (u % 10) as u8;
        n += 1;
        u /= 10;
        if u == 0 {
            break;
        }
    }
    buf[0] = b'k';
    for i in 0..n {
        buf[1 + i] = digits[n - 1 - i];
    }
    n + 1
}

/// Does `n` times (try "k<keyId>" with TTL 10 s, release); the total time in ms. Traps if a
/// try does not acquire or a release fails.
#[no_mangle]
pub extern "C" fn r#loop(n: i32, key_id: i32) -> f64 {
    let n = n as usize;
    assert!(n <= MAX_SAMPLES);
    let mut key = [0u8; 16];
    let len = key_of(key_id, &mut key);
    let out = samples();
    let mut total = 0.0;
    for i in 0..n {
        let t0 = unsafe { now() };
        let h = unsafe { sys::lock_try(key.as_ptr(), len, 10_000, 0) };
        let r = unsafe { sys::lock_release(h) };
        let dt = unsafe { now() } - t0;
        if h <= 0 || r != 0 {
            core::arch::wasm32::unreachable();
        }
        out[i] = dt;
        total += dt;
    }
    unsafe { COUNT = n };
    total
}

/// Takes "k<keyId>" once, then times `n` fence calls on it; the total time in ms.
#[no_mangle]
pub extern "C" fn fenceLoop(n: i32, key_id: i32) -> f64 {
    let n = n as usize;
    assert!(n <= MAX_SAMPLES);
    let mut key = [0u8; 16];
    let len = key_of(key_id, &mut key);
    let h = unsafe { sys::lock_try(key.as_ptr(), len, 60_000, 0) };
    assert!(h > 0);
    let out = samples();
    let mut total = 0.0;
    for i in 0..n {
        let t0 = unsafe { now() };
        let f = unsafe { sys::lock_fence(h) };
        let dt = unsafe { now() } - t0;
        assert!(f > 0);
        out[i] = dt;
        total += dt;
    }
    unsafe { COUNT = n };
    assert!(unsafe { sys::lock_release(h) } == 0);
    total
}

/// The quantile `per_mille`/1000 (nearest rank) of the last loop's samples, in µs; 0 if none.
#[no_mangle]
pub extern "C" fn pct(per_mille: i32) -> f64 {
    let count = unsafe { COUNT };
    if count == 0 {
        return 0.0;
    }
    let samples = &mut samples()[..count];
    samples.sort_unstable_by(|a, b| a.partial_cmp(b).unwrap_or(core::cmp::Ordering::Equal));
    let rank = (per_mille as f64 / 1000.0 * count as f64) as usize;
    let idx = if (rank as f64) < per_mille as f64 / 1000.0 * count as f64 { rank } else { rank.saturating_sub(1) };
    samples[idx.min(count - 1)] * 1000.0
}
