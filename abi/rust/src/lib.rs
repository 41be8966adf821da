//! Guest SDK for [lockhost](../../ABI.md): distributed locks for WebAssembly plugins.
//!
//! ```ignore
//! #![no_std]
//! lockhost::export_abi_version!();
//! lockhost::panic_handler!();
//!
//! #[no_mangle]
//! pub extern "C" fn run() -> i32 {
//!     match lockhost::try_lock("nightly", 10_000) {
//!         Ok(Some(lock)) => { let _fence = lock.fence(); 1 } // released when `lock` drops
//!         Ok(None) => 0,                                      // someone else holds it
//!         Err(e) => -e.code(),
//!     }
//! }
//! ```
//!
//! Build with `cargo build --target wasm32-unknown-unknown --release` and the link arguments of
//! the README's quick start (`--import-memory`): the host owns the guest's memory. No
//! dependencies, `no_std`; the `alloc` feature adds `String` conveniences.
#![no_std]
#![warn(missing_docs)]

#[cfg(feature = "alloc")]
extern crate alloc;

pub mod sys;
mod caps;
mod strings;

pub use caps::{capability, config_get, http_body, http_header, http_request, http_request_schedule_fenced, http_status, last_reply, log, reply};
#[cfg(feature = "alloc")]
pub use caps::{config, reply_vec};
pub use strings::{str_arg, utf8_result};
#[cfg(feature = "alloc")]
#[doc(hidden)]
pub use strings::{alloc_utf8, free_utf8};

pub use sys::{
    ABI_VERSION, FLAG_FAIR, FLAG_FENCE, FLAG_GLOBAL, FLAG_KEEP, FLAG_KEEPALIVE, FLAG_RW, FLAG_SEMAPHORE, MAX_KEY_BYTES, MAX_LEADER_VALUE_BYTES, MAX_TTL_MS, MAX_WAIT_MS,
};

/// A failed lock call: its status code (positive, as `abi/status.ts` numbers it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Error(i32);

impl Error {
    /// The status code (`sys::INVALID_ARGUMENT` …).
    pub const fn code(self) -> i32 {
        self.0
    }
    /// The status code's name (`"INVALID_ARGUMENT"`).
    pub const fn name(self) -> &'static str {
        sys::status_name(self.0)
    }
    /// `Ok(r)` for `r >= 0`, else the error `-r`.
    pub const fn check(r: i32) -> Result<i32, Error> {
        if r < 0 {
            Err(Error(-r))
        } else {
            Ok(r)
        }
    }
}

impl core::fmt::Display for Error {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}

/// What the host knows of a handle's lock (`lock.state`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum State {
    /// Held, as far as the host knows.
    Held,
    /// The lease ended while held: whoever holds the key now keeps it.
    Lost,
    /// Released by the guest or by the host's auto-release.
    Released,
}

impl State {
    fn of(r: i32) -> Result<State, Error> {
        match Error::check(r)? {
            sys::STATE_HELD => Ok(State::Held),
            sys::STATE_LOST => Ok(State::Lost),
            _ => Ok(State::Released),
        }
    }
}

/// A held lock of any kind. Dropping it releases it; [`Lock::keep`] hands the handle over
/// instead (with [`FLAG_KEEP`] it outlives the export call).
#[derive(Debug)]
pub struct Lock {
    handle: i32,
}

impl Lock {
    /// The lock behind a handle this guest was given (for instance kept from an earlier call).
    /// A handle it was not given answers `INVALID_HANDLE` to every call.
    pub const fn from_handle(handle: i32) -> Lock {
        Lock { handle }
    }
    /// The raw handle.
    pub const fn handle(&self) -> i32 {
        self.handle
    }
    /// The fencing token: send it with every write to the resource the lock protects.
    pub fn fence(&self) -> Result<i64, Error> {
        let f = unsafe { sys::lock_fence(self.handle) };
        if f < 0 {
            Err(Error(-f as i32))
        } else {
            Ok(f)
        }
    }
    /// Sets the lease to `ttl_ms` from now (0: the TTL it was taken with).
    pub fn renew(&self, ttl_ms: i32) -> Result<(), Error> {
        Error::check(unsafe { sys::lock_renew(self.handle, ttl_ms) }).map(drop)
    }
    /// Whether the lock is still held, lost or released.
    pub fn state(&self) -> Result<State, Error> {
        State::of(unsafe { sys::lock_state(self.handle) })
    }
    /// Releases the lock, saying how that went (dropping it releases too, silently).
    pub fn release(self) -> Result<(), Error> {
        let handle = self.keep();
        Error::check(unsafe { sys::lock_release(handle) }).map(drop)
    }
    /// Gives up the `Lock` without releasing it and returns its handle.
    pub fn keep(self) -> i32 {
        let handle = self.handle;
        core::mem::forget(self);
        handle
    }
    /// Proclaims a new `value` as the leader this leadership makes the guest (`LOST` when it no
    /// longer leads, `INVALID_HANDLE` when the lock is not a leadership).
    pub fn proclaim(&self, value: &str) -> Result<(), Error> {
        Error::check(unsafe { sys::lock_proclaim(self.handle, value.as_ptr(), value.len()) }).map(drop)
    }
    /// Steps down from this leadership: a waiting campaigner takes over at once (dropping it
    /// resigns too, silently; `INVALID_HANDLE` when the lock is not a leadership).
    pub fn resign(self) -> Result<(), Error> {
        let handle = self.keep();
        Error::check(unsafe { sys::lock_resign(handle) }).map(drop)
    }
    /// Writes the owner token into `buf` when it fits; returns its length either way.
    pub fn owner_into(&self, buf: &mut [u8]) -> Result<usize, Error> {
        Error::check(unsafe { sys::lock_owner(self.handle, buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
    }
    /// The owner token (the capability to restore the lock elsewhere).
    #[cfg(feature = "alloc")]
    pub fn owner(&self) -> Result<alloc::string::String, Error> {
        fetch(|p, n| unsafe { sys::lock_owner(self.handle, p, n) })
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // A drop cannot report failure; `release` does.
        unsafe { sys::lock_release(self.handle) };
    }
}

/// A try's result: a lock, `None` when contended, or the error.
fn tried(r: i32) -> Result<Option<Lock>, Error> {
    Error::check(r).map(|h| if h == sys::TRY_CONTENDED { None } else { Some(Lock { handle: h }) })
}

/// A waiting acquire's result: a lock or the error (`TIMEOUT` when the wait ran out).
fn waited(r: i32) -> Result<Lock, Error> {
    Error::check(r).map(|handle| Lock { handle })
}

fn key(k: &str) -> (*const u8, usize) {
    (k.as_ptr(), k.len())
}

/// Tries to take the mutex on `key` for `ttl_ms`: `Ok(None)` when someone else holds it.
pub fn try_lock(key: &str, ttl_ms: i32) -> Result<Option<Lock>, Error> {
    try_lock_with(key, ttl_ms, 0)
}

/// [`try_lock`] with flags ([`FLAG_GLOBAL`], [`FLAG_KEEP`], [`FLAG_KEEPALIVE`]).
pub fn try_lock_with(k: &str, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    tried(unsafe { sys::lock_try(p, n, ttl_ms, flags) })
}

/// Takes the mutex on `key`, waiting up to `wait_ms` for it (`TIMEOUT` when it stayed held).
pub fn acquire(key: &str, ttl_ms: i32, wait_ms: i32) -> Result<Lock, Error> {
    acquire_with(key, ttl_ms, wait_ms, 0)
}

/// [`acquire`] with flags.
pub fn acquire_with(k: &str, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Lock, Error> {
    let (p, n) = key(k);
    waited(unsafe { sys::lock_acquire(p, n, ttl_ms, wait_ms, flags) })
}

/// Tries to take the fair mutex on `key` ([`FLAG_FAIR`]: waiters queue first come, first served):
/// `Ok(None)` while someone holds it or anyone waits for it. The mutex `k` and the fair mutex `k`
/// are two locks: every party of a key must use the same one.
pub fn try_lock_fair(k: &str, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    try_lock_with(k, ttl_ms, flags | FLAG_FAIR)
}

/// Takes the fair mutex on `key`, waiting up to `wait_ms` in its queue (`TIMEOUT` when it stayed held).
pub fn acquire_fair(k: &str, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Lock, Error> {
    acquire_with(k, ttl_ms, wait_ms, flags | FLAG_FAIR)
}

/// Tries to take a read lock on `key` (readers share it): `Ok(None)` while a writer holds or awaits it.
pub fn try_read(k: &str, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    tried(unsafe { sys::lock_try_read(p, n, ttl_ms, flags) })
}

/// Tries to take the write lock on `key` (exclusive): `Ok(None)` while anyone holds it.
pub fn try_write(k: &str, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    tried(unsafe { sys::lock_try_write(p, n, ttl_ms, flags) })
}

/// Takes a read lock on `key`, waiting up to `wait_ms`.
pub fn acquire_read(k: &str, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Lock, Error> {
    let (p, n) = key(k);
    waited(unsafe { sys::lock_acquire_read(p, n, ttl_ms, wait_ms, flags) })
}

/// Takes the write lock on `key`, waiting up to `wait_ms` (a waiting writer queues ahead of later readers).
pub fn acquire_write(k: &str, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Lock, Error> {
    let (p, n) = key(k);
    waited(unsafe { sys::lock_acquire_write(p, n, ttl_ms, wait_ms, flags) })
}

/// Tries to take one of the `permits` permits of the semaphore on `key`: `Ok(None)` when all are taken.
pub fn try_permit(k: &str, permits: i32, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    tried(unsafe { sys::lock_try_permit(p, n, permits, ttl_ms, flags) })
}

/// Takes one of the `permits` permits of the semaphore on `key`, waiting up to `wait_ms`.
pub fn acquire_permit(k: &str, permits: i32, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Lock, Error> {
    let (p, n) = key(k);
    waited(unsafe { sys::lock_acquire_permit(p, n, permits, ttl_ms, wait_ms, flags) })
}

/// A lock taken elsewhere whose owner token this guest was handed (`ttl_ms` 0: its current lease's TTL).
pub fn restore(k: &str, owner: &str, ttl_ms: i32, flags: i32) -> Result<Lock, Error> {
    let (p, n) = key(k);
    waited(unsafe { sys::lock_restore(p, n, owner.as_ptr(), owner.len(), ttl_ms, flags) })
}

/// Leads the election `key` if nobody does, proclaiming `value` (0 to [`MAX_LEADER_VALUE_BYTES`]
/// bytes): `Ok(None)` while another leads. The leadership is a [`Lock`] on the key in the kind `leader` kept
/// alive by the host: its `fence()` is the term; dropping it resigns.
pub fn try_campaign(k: &str, value: &str, ttl_ms: i32) -> Result<Option<Lock>, Error> {
    try_campaign_with(k, value, ttl_ms, 0)
}

/// [`try_campaign`] with flags ([`FLAG_GLOBAL`], [`FLAG_KEEP`] to lead past this export call).
pub fn try_campaign_with(k: &str, value: &str, ttl_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    tried(unsafe { sys::lock_try_campaign(p, n, value.as_ptr(), value.len(), ttl_ms, flags) })
}

/// Leads the election `key`, waiting up to `wait_ms` (woken when the leader resigns or is lost):
/// `Ok(None)` when another led all along (`TIMEOUT`).
pub fn campaign(k: &str, value: &str, ttl_ms: i32, wait_ms: i32) -> Result<Option<Lock>, Error> {
    campaign_with(k, value, ttl_ms, wait_ms, 0)
}

/// [`campaign`] with flags ([`FLAG_GLOBAL`], [`FLAG_KEEP`]).
pub fn campaign_with(k: &str, value: &str, ttl_ms: i32, wait_ms: i32, flags: i32) -> Result<Option<Lock>, Error> {
    let (p, n) = key(k);
    match waited(unsafe { sys::lock_campaign(p, n, value.as_ptr(), value.len(), ttl_ms, wait_ms, flags) }) {
        Err(e) if e.code() == sys::TIMEOUT => Ok(None),
        r => r.map(Some),
    }
}

/// Writes the JSON of who leads the election `key` now into `buf` when it fits; returns its
/// length either way: `{"key":…,"held":true,"node":…,"plugin":…,"value":…,"term":…,"since_ms":…}`
/// or `{"key":…,"held":false}`.
pub fn leader_into(k: &str, buf: &mut [u8]) -> Result<usize, Error> {
    leader_into_with(k, 0, buf)
}

/// [`leader_into`] with flags ([`FLAG_GLOBAL`] for a global election).
pub fn leader_into_with(k: &str, flags: i32, buf: &mut [u8]) -> Result<usize, Error> {
    let (p, n) = key(k);
    Error::check(unsafe { sys::lock_leader(p, n, flags, buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
}

/// The JSON of who leads the election `key` now (`flags`: 0 or [`FLAG_GLOBAL`]).
#[cfg(feature = "alloc")]
pub fn leader(k: &str, flags: i32) -> Result<alloc::string::String, Error> {
    let (p, n) = key(k);
    fetch(|b, cap| unsafe { sys::lock_leader(p, n, flags, b, cap) })
}

/// Writes the status JSON of `key` into `buf` when it fits; returns its length either way.
/// `flags`: [`FLAG_GLOBAL`], and [`FLAG_RW`], [`FLAG_SEMAPHORE`] or [`FLAG_FAIR`] for those kinds' status.
pub fn status_into(k: &str, flags: i32, buf: &mut [u8]) -> Result<usize, Error> {
    let (p, n) = key(k);
    Error::check(unsafe { sys::lock_status(p, n, flags, buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
}

/// The status JSON of `key`.
#[cfg(feature = "alloc")]
pub fn status(k: &str, flags: i32) -> Result<alloc::string::String, Error> {
    let (p, n) = key(k);
    fetch(|b, cap| unsafe { sys::lock_status(p, n, flags, b, cap) })
}

/// Writes the message of the last lock call into `buf` when it fits; returns its length either way.
pub fn last_error_into(buf: &mut [u8]) -> usize {
    let r = unsafe { sys::lock_last_error(buf.as_mut_ptr(), buf.len()) };
    if r < 0 {
        0
    } else {
        r as usize
    }
}

/// The message of the last lock call: why it failed, or whose key a contended try met.
#[cfg(feature = "alloc")]
pub fn last_error() -> alloc::string::String {
    fetch(|p, n| unsafe { sys::lock_last_error(p, n) }).unwrap_or_default()
}

/// The state of the schedule's lock during a scheduled call (handle 0); `INVALID_HANDLE` outside one.
pub fn schedule_lock_state() -> Result<State, Error> {
    State::of(unsafe { sys::lock_state(0) })
}

/// Calls a string-returning import with a growing buffer until the string fits.
#[cfg(feature = "alloc")]
pub(crate) fn fetch(mut call: impl FnMut(*mut u8, usize) -> i32) -> Result<alloc::string::String, Error> {
    let mut buf = alloc::vec![0u8; 128];
    loop {
        let n = Error::check(call(buf.as_mut_ptr(), buf.len()))? as usize;
        if n <= buf.len() {
            buf.truncate(n);
            // The host writes UTF-8 only.
            return Ok(alloc::string::String::from_utf8(buf).unwrap_or_default());
        }
        buf.resize(n, 0);
    }
}

/// Exports `lockhost_abi_version`, which every guest must have (the host checks it at load).
#[macro_export]
macro_rules! export_abi_version {
    () => {
        #[no_mangle]
        pub extern "C" fn lockhost_abi_version() -> i32 {
            $crate::ABI_VERSION
        }
    };
}

/// Exports `lockhost_on_lost(handle)`, calling `$f(handle: i32)` when a lock this guest holds
/// is lost (between export calls; handle 0 is the schedule's lock).
#[macro_export]
macro_rules! on_lost {
    ($f:path) => {
        #[no_mangle]
        pub extern "C" fn lockhost_on_lost(handle: i32) {
            $f(handle)
        }
    };
}

/// A panic handler for `no_std` guests: a panic traps, so the host restarts the instance and
/// releases every lock it held.
#[macro_export]
macro_rules! panic_handler {
    () => {
        #[panic_handler]
        fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
            core::arch::wasm32::unreachable()
        }
    };
}
