//! Strings across exports (abi/ABI.md "Strings into exports", "What a guest module must
//! provide"): string arguments the host passes as UTF-8 `(ptr, len)`, and the schedules a guest
//! declares as UTF-8.

/// The string argument the host passed as `(ptr, len)` to an export (after
/// [`export_string_args!`]). `(0, 0)` is the empty string.
///
/// # Safety
/// `ptr` and `len` must be a string parameter pair exactly as the host passed it; the `&str`
/// is valid until the export returns (the host then frees it).
pub unsafe fn str_arg<'a>(ptr: *const u8, len: usize) -> &'a str {
    if len == 0 {
        return "";
    }
    // The host writes valid UTF-8 (JavaScript's lone surrogates become U+FFFD).
    core::str::from_utf8(core::slice::from_raw_parts(ptr, len)).unwrap_or("")
}

/// `len << 32 | ptr` of a UTF-8 string in guest memory, as `lockhost_schedules_utf8` returns it.
pub fn utf8_result(s: &'static str) -> i64 {
    ((s.len() as i64) << 32) | (s.as_ptr() as usize as i64)
}

/// Allocates `len` bytes for a string argument (the `lockhost_alloc_utf8` export).
#[cfg(feature = "alloc")]
#[doc(hidden)]
pub fn alloc_utf8(len: usize) -> *mut u8 {
    if len == 0 {
        // The host never asks for 0 bytes (an empty string is (0, 0)); never a null pointer anyway.
        return core::ptr::NonNull::<u8>::dangling().as_ptr();
    }
    match core::alloc::Layout::from_size_align(len, 1) {
        Ok(layout) => unsafe { alloc::alloc::alloc(layout) },
        Err(_) => core::ptr::null_mut(),
    }
}

/// Frees what [`alloc_utf8`] allocated (the `lockhost_free_utf8` export).
#[cfg(feature = "alloc")]
#[doc(hidden)]
pub fn free_utf8(ptr: *mut u8, len: usize) {
    if len == 0 || ptr.is_null() {
        return;
    }
    if let Ok(layout) = core::alloc::Layout::from_size_align(len, 1) {
        unsafe { alloc::alloc::dealloc(ptr, layout) }
    }
}

/// Exports `lockhost_alloc_utf8` and `lockhost_free_utf8` (feature `alloc`, on the crate's global
/// allocator: std's, or one a `no_std` guest sets), so the host passes every string argument as
/// UTF-8 `(ptr, len)`: two parameters. Read one with [`str_arg`]:
///
/// ```ignore
/// lockhost::export_string_args!();
/// #[no_mangle]
/// pub extern "C" fn greet(name_ptr: *const u8, name_len: usize) -> i32 {
///     let name = unsafe { lockhost::str_arg(name_ptr, name_len) };
///     name.len() as i32
/// }
/// ```
#[cfg(feature = "alloc")]
#[macro_export]
macro_rules! export_string_args {
    () => {
        #[no_mangle]
        pub extern "C" fn lockhost_alloc_utf8(len: usize) -> *mut u8 {
            $crate::alloc_utf8(len)
        }
        #[no_mangle]
        pub extern "C" fn lockhost_free_utf8(ptr: *mut u8, len: usize) {
            $crate::free_utf8(ptr, len)
        }
    };
}

/// Exports `lockhost_schedules_utf8`, declaring the plugin's schedules: one
/// `<export> <interval or cron expression>` a line, for `[[scheduled]]` entries that name the
/// plugin without a schedule. `lockhost::declare_schedules!("tick 5m\nreport 0 3 * * *");`
#[macro_export]
macro_rules! declare_schedules {
    ($text:expr) => {
        #[no_mangle]
        pub extern "C" fn lockhost_schedules_utf8() -> i64 {
            $crate::utf8_result($text)
        }
    };
}
