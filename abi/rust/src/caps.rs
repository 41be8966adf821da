//! What a plugin may do beside locking, when its operator grants it (abi/ABI.md
//! "Capabilities"): config values, log lines, fenced HTTP, and host functions the embedder
//! registers. Every reply-returning call follows the ABI's buffer convention: it returns the
//! reply's length and writes the reply only when `buf` holds it; a longer reply is kept, read it
//! with [`last_reply`] (the call is not made again).

use crate::{sys, Error, Lock};

/// Whether the plugin may use capability `name`: `"http"`, a host function namespace
/// (`"billing"`), `"config"` and `"log"` (always).
pub fn capability(name: &str) -> bool {
    unsafe { sys::lockhost_capability(name.as_ptr(), name.len()) == 1 }
}

/// Writes the value of `key` of the plugin's `[plugins.config]` into `buf` when it fits; its
/// length either way. `NOT_FOUND` for a key the table lacks.
pub fn config_get(key: &str, buf: &mut [u8]) -> Result<usize, Error> {
    Error::check(unsafe { sys::config_get(key.as_ptr(), key.len(), buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
}

/// The value of `key` of the plugin's `[plugins.config]` (`NOT_FOUND` when it has none).
#[cfg(feature = "alloc")]
pub fn config(key: &str) -> Result<alloc::string::String, Error> {
    crate::fetch(|p, n| unsafe { sys::config_get(key.as_ptr(), key.len(), p, n) })
}

/// The plugin's log, at the host's levels: a line below the plugin's `log_level` costs nothing.
pub mod log {
    use crate::sys;
    /// Logs `msg` at `level` (`sys::LOG_DEBUG` … `sys::LOG_ERROR`).
    pub fn write(level: i32, msg: &str) {
        // log.write fails only for a bad level or pointer, neither of which this API makes.
        unsafe { sys::log_write(level, msg.as_ptr(), msg.len()) };
    }
    /// Logs at debug level.
    pub fn debug(msg: &str) {
        write(sys::LOG_DEBUG, msg)
    }
    /// Logs at info level.
    pub fn info(msg: &str) {
        write(sys::LOG_INFO, msg)
    }
    /// Logs at warn level.
    pub fn warn(msg: &str) {
        write(sys::LOG_WARN, msg)
    }
    /// Logs at error level.
    pub fn error(msg: &str) {
        write(sys::LOG_ERROR, msg)
    }
}

/// Sends an HTTP request: `head` is `METHOD URL` then one `Name: value` line per header; with
/// `fence`, the host adds that lock's name and fence (`lockhost-lock`, `lockhost-fence`), so the
/// resource can refuse a stale holder. The response's length (status line, headers, body; see
/// [`http_status`]), written into `buf` when it fits, else read it with [`last_reply`].
pub fn http_request(head: &str, body: &[u8], fence: Option<&Lock>, buf: &mut [u8]) -> Result<usize, Error> {
    let (handle, flags) = match fence {
        Some(lock) => (lock.handle(), sys::FLAG_FENCE),
        None => (0, 0),
    };
    Error::check(unsafe { sys::http_request(head.as_ptr(), head.len(), body.as_ptr(), body.len(), handle, flags, buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
}

/// [`http_request`] with the fence of the scheduled call's lock (handle 0) rather than a lock of
/// the guest's own: a scheduled export writing under the schedule's lock. `LOST` once that lock
/// is no longer held; `INVALID_HANDLE` outside a scheduled call.
pub fn http_request_schedule_fenced(head: &str, body: &[u8], buf: &mut [u8]) -> Result<usize, Error> {
    Error::check(unsafe { sys::http_request(head.as_ptr(), head.len(), body.as_ptr(), body.len(), 0, sys::FLAG_FENCE, buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
}

/// The status code at the start of an `http_request` response (`"200\n…"`).
pub fn http_status(response: &[u8]) -> Option<u16> {
    let end = response.iter().position(|&b| b == b'\n')?;
    core::str::from_utf8(&response[..end]).ok()?.parse().ok()
}

/// The header lines of an `http_request` response (`name: value` each, names lowercase) and its
/// body: the response is the status line, the header lines, an empty line, then the body.
fn http_parts(response: &[u8]) -> (&[u8], &[u8]) {
    let status_end = match response.iter().position(|&b| b == b'\n') {
        Some(end) => end,
        None => return (&[], &[]),
    };
    let rest = &response[status_end + 1..];
    // No headers: the empty line comes at once.
    if rest.first() == Some(&b'\n') {
        return (&[], &rest[1..]);
    }
    match rest.windows(2).position(|w| w == b"\n\n") {
        Some(end) => (&rest[..end], &rest[end + 2..]),
        None => (rest, &[]),
    }
}

/// The body of an `http_request` response (empty when it has none).
pub fn http_body(response: &[u8]) -> &[u8] {
    http_parts(response).1
}

/// The value of the first header `name` of an `http_request` response (names are lowercase:
/// pass `name` in lowercase), or `None`.
pub fn http_header<'a>(response: &'a [u8], name: &str) -> Option<&'a str> {
    let headers = core::str::from_utf8(http_parts(response).0).ok()?;
    headers.split('\n').find_map(|line| {
        let (n, v) = line.split_once(": ")?;
        if n == name {
            Some(v)
        } else {
            None
        }
    })
}

/// Copies the reply of this guest's last `http.request` or host function call into `buf` when
/// it fits; its length either way (0 when that call failed).
pub fn last_reply(buf: &mut [u8]) -> usize {
    let r = unsafe { sys::lockhost_last_reply(buf.as_mut_ptr(), buf.len()) };
    if r < 0 {
        0
    } else {
        r as usize
    }
}

/// What a reply-returning call answered (`n`: a raw host function's or `http.request`'s result),
/// with its reply in `buf[..len]` whenever `buf` holds it (copied from the kept reply, so `buf`
/// may be a bigger buffer than the call's): `Ok(len)`, or the call's error.
pub fn reply(n: i32, buf: &mut [u8]) -> Result<usize, Error> {
    let len = Error::check(n)? as usize;
    if len <= buf.len() {
        last_reply(buf);
    }
    Ok(len)
}

/// The whole reply of a reply-returning call that answered `n`, however long.
#[cfg(feature = "alloc")]
pub fn reply_vec(n: i32) -> Result<alloc::vec::Vec<u8>, Error> {
    let mut buf = alloc::vec![0u8; Error::check(n)? as usize];
    last_reply(&mut buf);
    Ok(buf)
}

/// Declares a host function the embedder registers (`Host.start(config, { functions: { billing:
/// { echo } } })`) as a safe Rust function: bytes in, the reply's length out (written into `buf`
/// when it fits, else read it with [`last_reply`]), or the error the function threw.
///
/// ```ignore
/// lockhost::host_function!(fn echo = "billing"."echo");
/// let n = echo(b"hello", &mut buf)?;
/// ```
#[macro_export]
macro_rules! host_function {
    ($vis:vis fn $name:ident = $module:literal . $func:literal) => {
        $vis fn $name(input: &[u8], buf: &mut [u8]) -> Result<usize, $crate::Error> {
            #[link(wasm_import_module = $module)]
            extern "C" {
                #[link_name = $func]
                fn import(in_ptr: *const u8, in_len: usize, buf_ptr: *mut u8, buf_cap: usize) -> i32;
            }
            $crate::Error::check(unsafe { import(input.as_ptr(), input.len(), buf.as_mut_ptr(), buf.len()) }).map(|n| n as usize)
        }
    };
}
