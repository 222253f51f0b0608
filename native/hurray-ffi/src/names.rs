//! The tensor-name rule through the C ABI (docs/spec/descriptor.md §Names), so bindings and
//! tools that take names from elsewhere (foreign formats, user input) apply the core's rule
//! instead of re-implementing it.

use crate::panic::{guard, FfiError};
use crate::slices::slice_arg;
use crate::status::*;

/// `hurray_name_check` flag: also require a portable relative path (non-empty `/`-separated
/// segments, none `.` or `..`, no `\`, `:`, control character or leading `/`), for a name about
/// to become an archive member or file name.
pub const HURRAY_NAME_PATH: u32 = 1;

/// Checks `len` bytes at `name` (no NUL terminator needed) against the tensor-name rule: at most
/// 4096 bytes of UTF-8 without NUL; with `HURRAY_NAME_PATH` in `flags`, also a portable relative
/// path. Returns `HURRAY_OK` when it holds. Added in ABI 4 (additive, docs/spec/c-abi.md): look
/// it up by name on older libraries.
///
/// Errors: `INVALID_ARGUMENT` (not UTF-8, a NUL, not a portable path, unknown flag bits; the
/// last-error message names the reason), `LIMIT_EXCEEDED` (too long), `NULL_POINTER` (`name`
/// NULL with `len` > 0). Thread-safe.
///
/// # Safety
/// `name` valid for `len` bytes (may be NULL when `len` is 0).
#[no_mangle]
pub unsafe extern "C" fn hurray_name_check(name: *const u8, len: usize, flags: u32) -> HurrayStatus {
    guard("hurray_name_check", || {
        if flags & !HURRAY_NAME_PATH != 0 {
            return Err(FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("unknown flags {flags:#x}")));
        }
        if len > hurray_core::MAX_NAME_BYTES {
            return Err(FfiError::new(
                HURRAY_ERR_LIMIT_EXCEEDED,
                format!("name of {len} bytes exceeds {}", hurray_core::MAX_NAME_BYTES),
            ));
        }
        // SAFETY: the caller guarantees `name` is valid for `len` bytes.
        let bytes = unsafe { slice_arg(name, len, "name")? };
        let s = std::str::from_utf8(bytes)
            .map_err(|e| FfiError::new(HURRAY_ERR_INVALID_ARGUMENT, format!("name is not UTF-8 ({e})")))?;
        if flags & HURRAY_NAME_PATH != 0 {
            hurray_core::names::check_path_name(s)?;
        } else {
            hurray_core::names::check_name(s)?;
        }
        Ok(HURRAY_OK)
    })
}
