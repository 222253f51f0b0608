//! Borrowing caller arrays as Rust slices, with the checks `std::slice::from_raw_parts` leaves
//! to the caller: a length whose byte size exceeds `isize::MAX` is undefined behaviour there
//! (and a non-unwinding abort in debug builds), so it is refused here with
//! `HURRAY_ERR_INVALID_ARGUMENT` before any slice is built.

use crate::panic::{non_null, FfiError, FfiResult};
use crate::status::HURRAY_ERR_INVALID_ARGUMENT;

/// `count` elements at `p` as a slice; NULL is allowed only when `count` is 0. `name` is the
/// argument's name for the error message.
///
/// # Safety
/// Unless `count` is 0, `p` must be valid for reads of `count` elements for `'a`.
pub(crate) unsafe fn slice_arg<'a, T>(p: *const T, count: usize, name: &str) -> FfiResult<&'a [T]> {
    if count == 0 {
        return Ok(&[]);
    }
    non_null(p, name)?;
    let fits = count.checked_mul(size_of::<T>().max(1)).is_some_and(|b| b <= isize::MAX as usize);
    if !fits {
        return Err(FfiError::new(
            HURRAY_ERR_INVALID_ARGUMENT,
            format!("{name}: {count} elements do not fit the address space"),
        ));
    }
    // SAFETY: non-null, the byte length fits isize, and the caller guarantees validity.
    Ok(unsafe { std::slice::from_raw_parts(p, count) })
}
