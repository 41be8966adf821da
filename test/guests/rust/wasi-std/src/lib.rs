//! A Rust guest on std for wasm32-wasi: it loads only with `wasi = true`, and its println!
//! and eprintln! reach the plugin's log.
use std::time::{SystemTime, UNIX_EPOCH};

lockhost::export_abi_version!();

/// Takes "k<id>" and prints its fence and status; returns the fence or -code.
#[no_mangle]
pub extern "C" fn report(id: i32) -> i64 {
    let key = format!("k{}", id);
    match lockhost::try_lock(&key, 10_000) {
        Ok(Some(lock)) => {
            let fence = lock.fence().unwrap_or(-1);
            println!("took {} with fence {}", key, fence);
            eprintln!("status {}", lockhost::status(&key, 0).unwrap_or_default());
            fence
        }
        Ok(None) => 0,
        Err(e) => {
            println!("error {}: {}", e, lockhost::last_error());
            -(e.code() as i64)
        }
    }
}

/// 1 when the clock answers a time after 2020.
#[no_mangle]
pub extern "C" fn sources() -> i32 {
    let secs = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    (secs > 1_600_000_000) as i32
}

/// A file open (outside the stubbed set) fails, and the guest carries on.
#[no_mangle]
pub extern "C" fn openFile() -> i32 {
    match std::fs::File::open("/etc/passwd") {
        Ok(_) => 1,
        Err(e) => {
            println!("open failed as expected: {}", e);
            0
        }
    }
}
