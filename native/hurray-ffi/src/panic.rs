//! The one panic boundary every `extern "C"` body runs behind, and the thread-local
//! last-error slot (docs/spec/c-abi.md §Errors and panics).

use std::cell::RefCell;
use std::ffi::c_char;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::*;

/// An error on its way out through the boundary: a status and a message.
pub(crate) struct FfiError {
    pub status: HurrayStatus,
    pub message: String,
}

impl FfiError {
    pub(crate) fn new(status: HurrayStatus, message: impl Into<String>) -> Self {
        FfiError { status, message: message.into() }
    }

    /// The same error with `prefix` before its message (which item of a batch failed).
    pub(crate) fn with_prefix(mut self, prefix: &str) -> Self {
        self.message.insert_str(0, prefix);
        self
    }
}

impl From<hurray_core::Error> for FfiError {
    fn from(e: hurray_core::Error) -> Self {
        FfiError { status: from_kind(e.kind()), message: e.message().to_string() }
    }
}

pub(crate) type FfiResult<T> = Result<T, FfiError>;

thread_local! {
    static LAST_ERROR: RefCell<String> = const { RefCell::new(String::new()) };
}

pub(crate) fn set_last_error(msg: &str) {
    LAST_ERROR.with(|e| {
        let mut e = e.borrow_mut();
        e.clear();
        e.push_str(msg);
    });
}

/// Runs `f` behind the panic boundary. `Ok(s)` returns `s` (HURRAY_OK or a positive
/// non-error status); `Err` and panics store their message in the last-error slot.
pub(crate) fn guard<F: FnOnce() -> FfiResult<HurrayStatus>>(what: &str, f: F) -> HurrayStatus {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            set_last_error(&format!("{what}: {}", e.message));
            e.status
        }
        Err(payload) => {
            let msg = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".into());
            set_last_error(&format!("{what}: internal panic: {msg}"));
            HURRAY_ERR_INTERNAL_PANIC
        }
    }
}

/// Checks a required pointer argument.
pub(crate) fn non_null<T>(p: *const T, name: &str) -> FfiResult<()> {
    if p.is_null() {
        Err(FfiError::new(HURRAY_ERR_NULL_POINTER, format!("{name} is NULL")))
    } else {
        Ok(())
    }
}

/// Copies this thread's last error message into `buf` (at most `cap` bytes including the
/// terminating NUL; truncated if longer) and stores the full message length, in bytes without
/// the NUL, in `*out_len` (if not NULL). The message describes the most recent failing call
/// on this thread; it is empty if none failed. `buf` may be NULL when `cap` is 0 (a length
/// query). Returns `HURRAY_ERR_BUFFER_TOO_SMALL` when the message was truncated, else
/// `HURRAY_OK`. Thread rule: reads only the calling thread's slot.
///
/// # Safety
/// `buf` must be valid for `cap` bytes of writes; `out_len` NULL or valid for one write.
#[no_mangle]
pub unsafe extern "C" fn hurray_last_error_message(buf: *mut c_char, cap: usize, out_len: *mut usize) -> HurrayStatus {
    let r = catch_unwind(AssertUnwindSafe(|| {
        LAST_ERROR.with(|e| {
            let e = e.borrow();
            let bytes = e.as_bytes();
            if !out_len.is_null() {
                // SAFETY: caller guarantees out_len is valid when non-null.
                unsafe { *out_len = bytes.len() };
            }
            if cap == 0 {
                return if bytes.is_empty() { HURRAY_OK } else { HURRAY_ERR_BUFFER_TOO_SMALL };
            }
            if buf.is_null() {
                return HURRAY_ERR_NULL_POINTER;
            }
            let n = bytes.len().min(cap - 1);
            // SAFETY: buf is valid for cap >= n + 1 bytes.
            unsafe {
                std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf as *mut u8, n);
                *buf.add(n) = 0;
            }
            if n < bytes.len() {
                HURRAY_ERR_BUFFER_TOO_SMALL
            } else {
                HURRAY_OK
            }
        })
    }));
    r.unwrap_or(HURRAY_ERR_INTERNAL_PANIC)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn last_error() -> String {
        LAST_ERROR.with(|e| e.borrow().clone())
    }

    // No exported function can be made to panic from outside (callbacks are `extern "C"` and
    // cannot unwind into Rust), so the boundary itself is tested here.
    #[test]
    fn a_panic_inside_the_boundary_is_internal_panic_with_its_message() {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let s = guard("hurray_test_fn", || panic!("boom {}", 42));
        let t = guard("hurray_test_fn2", || -> FfiResult<HurrayStatus> { std::panic::panic_any(7u8) });
        std::panic::set_hook(prev);
        assert_eq!(s, HURRAY_ERR_INTERNAL_PANIC);
        assert_eq!(t, HURRAY_ERR_INTERNAL_PANIC);
        assert_eq!(last_error(), "hurray_test_fn2: internal panic: unknown panic payload");
        let s = guard("hurray_test_fn", || panic!("static message"));
        assert_eq!(s, HURRAY_ERR_INTERNAL_PANIC);
        assert_eq!(last_error(), "hurray_test_fn: internal panic: static message");
    }

    #[test]
    fn errors_keep_their_status_and_message_and_success_passes_through() {
        assert_eq!(guard("f", || Ok(HURRAY_END_OF_STREAM)), HURRAY_END_OF_STREAM);
        let s = guard("f", || Err(FfiError::new(HURRAY_ERR_CORRUPT, "bad bytes")));
        assert_eq!(s, HURRAY_ERR_CORRUPT);
        assert_eq!(last_error(), "f: bad bytes");
        let e: FfiError = hurray_core::Error::new(hurray_core::ErrorKind::Truncated, "cut").into();
        assert_eq!((e.status, e.message.as_str()), (HURRAY_ERR_TRUNCATED, "cut"));
    }
}
