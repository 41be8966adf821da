//! The Rust twin of test/guests/locker.ts: the same exports under the same names, so the guest
//! suite runs the same cases against each language. A key id `n` names the key "k<n>". Lines
//! it logs go to stdout through WASI fd_write (the plugin's log), as "error <code>: <message>".
#![no_std]

use core::fmt::Write;
use lockhost::{sys, Lock, FLAG_KEEP};

lockhost::export_abi_version!();
lockhost::panic_handler!();

/// An address far outside any memory the host will allow.
const BAD_PTR: *mut u8 = 0x7fff_fff0 as *mut u8;

#[link(wasm_import_module = "wasi_snapshot_preview1")]
extern "C" {
    fn fd_write(fd: i32, iovs: *const [usize; 2], iovs_len: usize, written: *mut usize) -> i32;
}

/// One line of output, written with `write!` and sent to stdout when dropped.
struct Line {
    buf: [u8; 1024],
    len: usize,
}

impl Write for Line {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        let n = s.len().min(self.buf.len() - 1 - self.len);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

impl Drop for Line {
    fn drop(&mut self) {
        self.buf[self.len] = b'\n';
        let iov = [self.buf.as_ptr() as usize, self.len + 1];
        let mut written = 0;
        unsafe { fd_write(1, &iov, 1, &mut written) };
    }
}

fn line() -> Line {
    Line { buf: [0; 1024], len: 0 }
}

/// "k<id>" in `buf`.
fn key_of(id: i32, buf: &mut [u8; 16]) -> &str {
    let mut l = Small { buf, len: 0 };
    let _ = write!(l, "k{}", id);
    let len = l.len;
    core::str::from_utf8(&buf[..len]).unwrap_or("k")
}

struct Small<'a> {
    buf: &'a mut [u8; 16],
    len: usize,
}

impl Write for Small<'_> {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.buf[self.len..self.len + s.len()].copy_from_slice(s.as_bytes());
        self.len += s.len();
        Ok(())
    }
}

/// The last lock call's message.
fn last_error(buf: &mut [u8; 512]) -> &str {
    let n = lockhost::last_error_into(buf).min(buf.len());
    core::str::from_utf8(&buf[..n]).unwrap_or("")
}

/// Returns `r`; if it is an error, logs "error <code>: <message>".
fn traced(r: i32) -> i32 {
    if r < 0 {
        let mut buf = [0; 512];
        let _ = write!(line(), "error {}: {}", -r, last_error(&mut buf));
    }
    r
}

// --- acquisition and raw handle operations --------------------------------

/// Raw try on "k<keyId>": handle > 0, 0 contended, -code.
#[no_mangle]
pub extern "C" fn hold(key_id: i32, ttl_ms: i32, flags: i32) -> i32 {
    let mut b = [0; 16];
    let k = key_of(key_id, &mut b);
    unsafe { sys::lock_try(k.as_ptr(), k.len(), ttl_ms, flags) }
}

/// Raw release.
#[no_mangle]
pub extern "C" fn release(handle: i32) -> i32 {
    unsafe { sys::lock_release(handle) }
}

/// Raw renew.
#[no_mangle]
pub extern "C" fn renew(handle: i32, ttl_ms: i32) -> i32 {
    unsafe { sys::lock_renew(handle, ttl_ms) }
}

/// Raw fence.
#[no_mangle]
pub extern "C" fn fence(handle: i32) -> i64 {
    unsafe { sys::lock_fence(handle) }
}

// --- through the SDK ----------------------------------------------------------

/// SDK try_lock: 1 acquired (then released), 2 contended, 100 + code on error (and logs it).
#[no_mangle]
pub extern "C" fn outcome(key_id: i32, ttl_ms: i32, flags: i32) -> i32 {
    let mut b = [0; 16];
    match lockhost::try_lock_with(key_of(key_id, &mut b), ttl_ms, flags) {
        Ok(Some(lock)) => {
            drop(lock);
            1
        }
        Ok(None) => 2,
        Err(e) => {
            let mut buf = [0; 512];
            let _ = write!(line(), "error {}: {}", e.name(), last_error(&mut buf));
            100 + e.code()
        }
    }
}

/// SDK try_lock, then fence, then release (by drop); -code if not acquired (-1000 if contended).
#[no_mangle]
pub extern "C" fn fenceOf(key_id: i32, ttl_ms: i32) -> i64 {
    let mut b = [0; 16];
    match lockhost::try_lock(key_of(key_id, &mut b), ttl_ms) {
        Ok(Some(lock)) => lock.fence().unwrap_or_else(|e| -(e.code() as i64)),
        Ok(None) => -1000,
        Err(e) => -(e.code() as i64),
    }
}

/// SDK owner of a handle: logs "owner <token>", returns its length, or -code.
#[no_mangle]
pub extern "C" fn ownerLen(handle: i32) -> i32 {
    let lock = Lock::from_handle(handle);
    let mut buf = [0; 64];
    let r = lock.owner_into(&mut buf);
    lock.keep(); // a borrowed handle: not ours to release
    match r {
        Ok(n) => {
            let _ = write!(line(), "owner {}", core::str::from_utf8(&buf[..n.min(64)]).unwrap_or(""));
            n as i32
        }
        Err(e) => traced(-e.code()),
    }
}

/// SDK status: logs "status <json>", returns its UTF-8 length, or -code.
#[no_mangle]
pub extern "C" fn statusLen(key_id: i32, flags: i32) -> i32 {
    let mut b = [0; 16];
    let mut buf = [0; 900];
    match lockhost::status_into(key_of(key_id, &mut b), flags, &mut buf) {
        Ok(n) => {
            let _ = write!(line(), "status {}", core::str::from_utf8(&buf[..n.min(900)]).unwrap_or(""));
            n as i32
        }
        Err(e) => traced(-e.code()),
    }
}

// --- bad input (raw results) ----------------------------------------------------

static mut LONG: [u8; 1024] = [b'a'; 1024];

/// try with an empty key (len 0).
#[no_mangle]
pub extern "C" fn tryEmptyKey() -> i32 {
    let k = [0u8; 1];
    traced(unsafe { sys::lock_try(k.as_ptr(), 0, 10_000, 0) })
}

/// try with a key of `len` 'a' bytes.
#[no_mangle]
pub extern "C" fn tryLongKey(len: i32) -> i32 {
    traced(unsafe { sys::lock_try(LONG.as_ptr(), (len as usize).min(1024), 10_000, 0) })
}

/// try with the invalid UTF-8 bytes 0xff 0xfe.
#[no_mangle]
pub extern "C" fn tryInvalidUtf8() -> i32 {
    let k = [0xffu8, 0xfe];
    traced(unsafe { sys::lock_try(k.as_ptr(), 2, 10_000, 0) })
}

/// try "k0" with the given TTL.
#[no_mangle]
pub extern "C" fn tryTtl(ttl_ms: i32) -> i32 {
    traced(unsafe { sys::lock_try(b"k0".as_ptr(), 2, ttl_ms, 0) })
}

/// try with a key pointer outside memory (ptr 0x7ffffff0, len 16).
#[no_mangle]
pub extern "C" fn tryBadPointer() -> i32 {
    traced(unsafe { sys::lock_try(BAD_PTR, 16, 10_000, 0) })
}

/// try "k0" with an unknown flag bit (0x100).
#[no_mangle]
pub extern "C" fn tryBadFlags() -> i32 {
    traced(unsafe { sys::lock_try(b"k0".as_ptr(), 2, 10_000, 0x100) })
}

/// owner with a buffer outside memory.
#[no_mangle]
pub extern "C" fn ownerBadBuffer(handle: i32) -> i32 {
    traced(unsafe { sys::lock_owner(handle, BAD_PTR, 64) })
}

/// status of "k0" with a buffer outside memory.
#[no_mangle]
pub extern "C" fn statusBadBuffer() -> i32 {
    traced(unsafe { sys::lock_status(b"k0".as_ptr(), 2, 0, BAD_PTR, 256) })
}

/// last_error with a buffer outside memory.
#[no_mangle]
pub extern "C" fn lastErrorBadBuffer() -> i32 {
    traced(unsafe { sys::lock_last_error(BAD_PTR, 256) })
}

/// release of a handle never given out (0x12345).
#[no_mangle]
pub extern "C" fn releaseForged() -> i32 {
    traced(unsafe { sys::lock_release(0x12345) })
}

/// release of handle 0.
#[no_mangle]
pub extern "C" fn releaseZero() -> i32 {
    traced(unsafe { sys::lock_release(0) })
}

/// release of handle -5.
#[no_mangle]
pub extern "C" fn releaseNegative() -> i32 {
    traced(unsafe { sys::lock_release(-5) })
}

// --- plumbing ---------------------------------------------------------------------

/// Does nothing (call overhead).
#[no_mangle]
pub extern "C" fn noop() {}

/// a + b.
#[no_mangle]
pub extern "C" fn add(a: i32, b: i32) -> i32 {
    a.wrapping_add(b)
}

/// Takes "k<keyId>" with FLAG_KEEP and hands the handle over (the next call may release it).
#[no_mangle]
pub extern "C" fn holdKept(key_id: i32, ttl_ms: i32) -> i32 {
    let mut b = [0; 16];
    match lockhost::try_lock_with(key_of(key_id, &mut b), ttl_ms, FLAG_KEEP) {
        Ok(Some(lock)) => lock.keep(),
        Ok(None) => 0,
        Err(e) => -e.code(),
    }
}
