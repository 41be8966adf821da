//! Example plugin in Rust: a scheduled job under a lock, a fenced write, read/write locks and
//! a semaphore. No allocator, no std: what a guest needs is the `lockhost` crate.
#![no_std]

use lockhost::{Error, FLAG_GLOBAL};

lockhost::export_abi_version!();
lockhost::panic_handler!();
lockhost::on_lost!(lost);

/// Locks this guest held and lost (the host calls `lockhost_on_lost` between calls).
static mut LOST: i32 = 0;

fn lost(_handle: i32) {
    unsafe { LOST += 1 };
}

/// How many losses the host has reported.
#[no_mangle]
pub extern "C" fn lostCount() -> i32 {
    unsafe { LOST }
}

/// The scheduled job: runs on one node per tick. 1 when this node did the work, 0 when another
/// holds the job's lock, -code on error.
#[no_mangle]
pub extern "C" fn run() -> i32 {
    match lockhost::try_lock("daily-report", 10_000) {
        Ok(Some(_lock)) => 1, // the work goes here; the lock is released when `_lock` drops
        Ok(None) => 0,
        Err(e) => -e.code(),
    }
}

/// A resource that accepts a write only with a fence newer than any it has seen. In production
/// it lives elsewhere (a database row) and checks atomically with the write.
struct Ledger {
    last_fence: i64,
    balance: i64,
}

static mut LEDGER: Ledger = Ledger { last_fence: 0, balance: 0 };

impl Ledger {
    fn write(&mut self, fence: i64, amount: i64) -> bool {
        if fence <= self.last_fence {
            return false;
        }
        self.last_fence = fence;
        self.balance += amount;
        true
    }
}

/// Adds `amount` to the ledger under the global lock "ledger", with its fence: the balance,
/// -1 when the ledger refused the fence, -code when the lock was not taken (-1000 contended).
#[no_mangle]
pub extern "C" fn fencedWrite(amount: i32) -> i64 {
    let write = || -> Result<i64, Error> {
        let lock = match lockhost::try_lock_with("ledger", 10_000, FLAG_GLOBAL)? {
            Some(lock) => lock,
            None => return Ok(-1000),
        };
        let fence = lock.fence()?;
        let ledger = unsafe { &mut LEDGER };
        Ok(if ledger.write(fence, amount as i64) { ledger.balance } else { -1 })
    };
    write().unwrap_or_else(|e| -(e.code() as i64))
}

/// A stale holder's write: replays a fence already used, which the ledger refuses (-1).
#[no_mangle]
pub extern "C" fn staleWrite(fence: i32) -> i64 {
    let ledger = unsafe { &mut LEDGER };
    if ledger.write(fence as i64, 1) {
        ledger.balance
    } else {
        -1
    }
}

/// Read/write locks and a semaphore: two readers share "catalog" while a writer is refused,
/// and a 2-permit semaphore admits two holders and refuses a third. 1 when all of that held.
#[no_mangle]
pub extern "C" fn shared() -> i32 {
    let check = || -> Result<bool, Error> {
        let r1 = lockhost::try_read("catalog", 10_000, 0)?;
        let r2 = lockhost::try_read("catalog", 10_000, 0)?;
        let w = lockhost::try_write("catalog", 10_000, 0)?;
        let readers_share = r1.is_some() && r2.is_some() && w.is_none();
        drop((r1, r2));
        let writer_alone = lockhost::try_write("catalog", 10_000, 0)?.is_some();
        let p1 = lockhost::try_permit("workers", 2, 10_000, 0)?;
        let p2 = lockhost::try_permit("workers", 2, 10_000, 0)?;
        let p3 = lockhost::try_permit("workers", 2, 10_000, 0)?;
        Ok(readers_share && writer_alone && p1.is_some() && p2.is_some() && p3.is_none())
    };
    match check() {
        Ok(ok) => ok as i32,
        Err(e) => -e.code(),
    }
}
